"""The training loop: Adam with step-wise exponential decay, checkpoints, a loss log for `dvc plots`."""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import DataLoader
from tqdm import tqdm

from pearl.artifacts import EVALUATION_TEXTS_SCHEMA, read_artifact
from pearl.cores import available_cores
from pearl.device import resolve_device
from pearl.errors import PearlError
from pearl.log import get_logger
from pearl.model.grad_cache import cached_backward
from pearl.model.loss import LossParts, pearl_loss
from pearl.model.pair_heads import pair_heads
from pearl.model.phrase_model import ModelConfig, PhraseModel, PhraseTokenizer
from pearl.params import Params, pearl_objectives
from pearl.train.checkpoint import clear_checkpoints, fingerprint, load_checkpoint, save_checkpoint
from pearl.teacher.vectors import TeacherVectors
from pearl.train.burt_pairs import CLASSES, BurtPairs, load_burt_pairs
from pearl.train.data import Batch, PairStep, Sampling, Step, StepBatches, TrainingSet, ViewFilter
from pearl.train.distributed import World, average_gradients, close_world, gather_rows, init_world, share
from pearl.train.inputs import TrainInputs, distils, uses_teacher

log = get_logger("train")


@dataclass
class TrainResult:
    model: PhraseModel
    data: TrainingSet
    log_rows: list[dict]
    steps: int
    steps_per_epoch: int
    started_at: int  # the step this run resumed from
    seconds: float
    device: str
    precision: str
    world: World
    view_filter: ViewFilter | None
    burt: dict  # per objective of BURT's that is on: where its pairs came from, how many, how many dropped


def model_config(params: Params) -> ModelConfig:
    m = params.model
    return ModelConfig(m.backbone, m.prefix, m.max_length, m.char_encoder, m.char_dim, m.char_weight, m.pooling)


def precision_for(requested: str, device: str) -> str:
    if requested == "auto":
        return "bf16" if device == "cuda" else "fp32"
    return requested


def autocast_for(precision: str, device: torch.device):
    """A factory of autocast contexts: bf16 autocast, or nothing for fp32."""
    if precision == "bf16":
        return lambda: torch.autocast(device_type=device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext


def seed_dropout(seed: int, rank: int, step: int) -> None:
    """Dropout masks from (seed, rank, step): each rank draws its own under torchrun (with identity
    views the two copies of a phrase would otherwise get the same mask on every rank), and a
    resumed run draws what the uninterrupted one did without saving RNG state."""
    torch.manual_seed(int(np.random.SeedSequence([seed, rank, step]).generate_state(1)[0]))


def training_seed(params: Params) -> int:
    return params.base.seed if params.train.seed is None else params.train.seed


def training_threads(params: Params) -> int:
    """Torch's CPU threads and numpy's BLAS threads while training: fixed, so that the bytes do not follow the machine."""
    return params.train.cpu_threads or available_cores()


def sampling_for(params: Params) -> Sampling:
    t = params.train
    return Sampling(training_seed(params), t.batch_size, t.hard_negatives,
                    {"char": t.p_char, "token": t.p_token, "phrase": t.p_phrase, "alias": t.p_alias,
                     "none": t.p_identity}, training_threads(params))


def teacher_inputs(params: Params, vectors: Path) -> tuple[TeacherVectors | None, ViewFilter | None]:
    """(the teacher to distil, or None; the view filter, or None): both None unless `uses_teacher`."""
    t = params.train
    if not uses_teacher(params):
        return None, None
    teacher = TeacherVectors.load(vectors, params.model.teacher)
    # alias views are not filtered here: augment keeps real aliases and has the teacher judge Moby's
    levels = tuple(level for level in ("token", "phrase") if getattr(t, f"p_{level}") > 0)
    view_filter = None if t.view_min_cos is None else ViewFilter(t.view_min_cos, levels, teacher)
    return (teacher if distils(params) else None), view_filter


def lr_scheduler(optimizer, schedule: str, decay_steps: int, decay_rate: float, total: int):
    """PEARL's step-wise exponential decay, or BURT's linear warm-up over the first 10% of the steps and linear
    decay to 0 after them."""
    if schedule == "exponential":
        return torch.optim.lr_scheduler.StepLR(optimizer, step_size=decay_steps, gamma=decay_rate)
    warm = max(1, round(0.1 * total))
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: (step + 1) / warm if step < warm else max(0.0, (total - step) / max(1, total - warm)))


def loader_workers(setting: int | str, device: torch.device) -> int:
    """`auto` on CPU: no worker below 4 cores, where one competes with the compute for them
    (benchmarks/train_step.py on 2 cores: +15.6% per step with one worker, +3.7% with none), else 2.
    On CUDA the cores are free for workers: up to 8 per training process. On an H200 with 16 cores a
    worker builds about 4 batches of 512 a second and MiniLM's step consumes 25: 2 workers held the
    step at 5x its compute, 8 kept up with it."""
    if setting != "auto":
        return int(setting)
    cores = available_cores()
    if device.type == "cuda":
        return max(0, min(8, cores // int(os.environ.get("LOCAL_WORLD_SIZE", "1")) - 1))
    return 0 if cores < 4 else 2


def batch_loader(data: TrainingSet, params: Params, model: PhraseModel, first: int, last: int, device: torch.device,
                 pairs: BurtPairs | None = None) -> DataLoader:
    """Steps first..last-1, built and tokenised in `train.num_workers` workers."""
    workers = loader_workers(params.train.num_workers, device)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # workers tokenise; no nested thread pools
    c = model.config
    tokenize_pairs = PhraseTokenizer(model.tokenizer, c.prefix, params.burt.max_length, c.char_encoder)
    steps = StepBatches(data if pearl_objectives(params) else None, sampling_for(params), model.tokenize, first, last,
                        pairs, tokenize_pairs)
    return DataLoader(steps, batch_size=None, num_workers=workers, prefetch_factor=4 if workers else None,
                      pin_memory=device.type == "cuda")


def _rows(features: dict[str, torch.Tensor], start: int, stop: int, device) -> dict[str, torch.Tensor]:
    return {k: v[start:stop].to(device, non_blocking=True) for k, v in features.items()}


def _step(model: PhraseModel, step: Step, heads: torch.nn.ModuleDict, params: Params, device, autocast,
          world: World) -> tuple[LossParts | None, torch.Tensor | None]:
    """Backward of the step's losses; (PEARL's loss parts, the BURT objective's loss), None where off."""
    parts = None if step.phrases is None else _phrase_step(model, step.phrases, params, device, autocast, world)
    if step.pairs is None:
        return parts, None
    return parts, _pair_step(model, step.pairs, heads, params, device, autocast)


def _pair_step(model: PhraseModel, pairs: PairStep, heads: torch.nn.ModuleDict, params: Params, device,
               autocast) -> torch.Tensor:
    """Every rank encodes the whole small batch (BURT's 16 pairs): the gradients then average as the phrase loss's."""
    with autocast():
        logits = heads[pairs.task](model(_rows(pairs.left, 0, None, device)), model(_rows(pairs.right, 0, None, device)))
    loss = torch.nn.functional.cross_entropy(logits.float(), pairs.labels.to(device))
    (params.burt.weights[pairs.task] * loss).backward()
    return loss.detach()


def _phrase_step(model: PhraseModel, batch: Batch, params: Params, device, autocast, world: World) -> LossParts:
    t = params.train
    labels, exclude = batch.labels.to(device), batch.exclude.to(device)
    teacher_cos = None if batch.teacher_cos is None else batch.teacher_cos.to(device)

    def loss_of(vectors: torch.Tensor) -> LossParts:
        with autocast():
            return pearl_loss(vectors, batch.n_anchors, labels, exclude, model.type_head, t.temperature, t.type_weight,
                              t.contrastive_weight, teacher_cos, t.distill_weight, t.distill_loss)

    n = len(batch.texts)
    if t.grad_cache:
        def encode(rows: tuple[int, int]) -> torch.Tensor:
            with autocast():
                return model(_rows(batch.features, *rows, device))

        spans = [(i, min(i + t.grad_cache_chunk, n)) for i in range(0, n, t.grad_cache_chunk)]
        return cached_backward(encode, spans, device, loss_of)
    start, stop, _ = share(n, world)
    with autocast():
        local = model(_rows(batch.features, start, stop, device))
    parts = loss_of(gather_rows(local, n, world))
    parts.total.backward()
    return parts


def train(params: Params, inputs: TrainInputs) -> TrainResult:
    t = params.train
    device_name = resolve_device(params.base.device)
    world = init_world(device_name)
    if t.grad_cache and world.size > 1:
        raise PearlError("train.grad_cache is single-process only: under torchrun, lower train.batch_size per GPU instead")
    device = torch.device("cuda", world.local_rank) if device_name == "cuda" else torch.device("cpu")
    if device.type == "cpu":
        torch.set_num_threads(training_threads(params))
    precision = precision_for(t.precision, device_name)
    if precision == "bf16" and device_name == "cpu":
        log.warning("bf16 autocast on CPU is slow on most CPUs; train.precision=fp32 is the CPU default")

    seed = training_seed(params)
    # the inputs are read and checked before the model loads (seconds), so that a bad one fails at once;
    # they draw from numpy's generators only, so the model's weights do not depend on the order
    teacher, view_filter = teacher_inputs(params, inputs.teacher)
    blocked = set(read_artifact(inputs.evaluation, EVALUATION_TEXTS_SCHEMA)["text"].to_list())
    data = TrainingSet.load(inputs.typed, inputs.variants, inputs.negatives, t.heldout_fraction, seed,
                            teacher, view_filter, blocked)
    pairs, burt = None, {}
    if params.burt.weights:
        pairs, burt = load_burt_pairs(params.burt, Path(params.bench.burt_dir), inputs.variants,
                                      Path(params.augment.nltk_data), blocked, seed)
    # an epoch: every training phrase once, or, with BURT's objectives alone, as many batches as their pairs fill
    per_epoch = data.steps_per_epoch(t.batch_size) if pearl_objectives(params) else pairs.steps_per_epoch()
    if per_epoch == 0:
        raise PearlError(f"train.batch_size ({t.batch_size}) exceeds the {len(data.train)} training phrases: lower it")
    torch.manual_seed(seed)
    model = PhraseModel(model_config(params)).to(device)
    heads = pair_heads(model.dim, params.burt.features, {task: CLASSES[task] for task in params.burt.weights}).to(device)
    total = per_epoch * t.epochs if t.max_steps is None else min(per_epoch * t.epochs, t.max_steps)

    # The character encoder and type head start from random weights: at the backbone's small
    # learning rate they would barely move in a CPU-sized run.
    scratch = [p for name, p in model.named_parameters() if not name.startswith("backbone.")] + list(heads.parameters())
    optimizer = torch.optim.Adam([{"params": list(model.backbone.parameters()), "lr": t.lr},
                                  {"params": scratch, "lr": t.head_lr}])
    scheduler = lr_scheduler(optimizer, t.lr_schedule, t.lr_decay_steps, t.lr_decay_rate, total)
    checkpoints = Path(t.checkpoint_dir)
    run_id = fingerprint(params, [inputs.typed, inputs.variants, inputs.negatives]
                         + ([inputs.teacher] if uses_teacher(params) else []))
    state = load_checkpoint(checkpoints, run_id)
    start, rows = 0, []
    if state is not None:
        model.load_state_dict(state["model"])
        heads.load_state_dict(state.get("pair_heads", {}))
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        start, rows = state["step"], state["log"]

    if world.size > 1:  # every rank starts from rank 0's weights (a resumed run included)
        for tensor in [*model.state_dict().values(), *heads.state_dict().values()]:
            torch.distributed.broadcast(tensor, src=0)

    autocast = autocast_for(precision, device)
    loader = batch_loader(data, params, model, start, total, device, pairs)
    phrases = (f"batch {t.batch_size}, {t.hard_negatives} hard negatives each" if pearl_objectives(params)
               else "no phrase batch: BURT's objectives alone")
    log.info("training %d steps (%d per epoch, %s, %s, %s, world %d) from step %d",
             total, per_epoch, phrases, device, precision, world.size, start)
    if burt:
        log.info("BURT's objectives, one batch of %d pairs a step in turn: %s", params.burt.batch_size,
                 "; ".join(f"{task} (weight {params.burt.weights[task]}): {r['pairs']} pairs, {r['source']}"
                           for task, r in burt.items()))

    batches = iter(loader)
    model.train()
    window = _Window(params.burt.weights)
    began = time.perf_counter()
    last = began
    progress = tqdm(batches, initial=start, total=total, desc="train", disable=not world.main, mininterval=5)
    for k, batch in enumerate(progress):
        step = start + k
        seed_dropout(seed, world.rank, step)
        optimizer.zero_grad(set_to_none=True)
        parts, pair_loss = _step(model, batch, heads, params, device, autocast, world)
        average_gradients(model, world)
        average_gradients(heads, world)
        optimizer.step()
        scheduler.step()
        now = time.perf_counter()
        window.add(parts, pair_loss, batch, now - last)
        last = now
        if (step + 1) % t.log_every == 0 or step + 1 == total:
            rows.append(window.row(step + 1, scheduler.get_last_lr()[0]))
            progress.set_postfix(loss=rows[-1]["loss"], refresh=False)
            window = _Window(params.burt.weights)
        if world.main and (step + 1) % t.checkpoint_every == 0 and step + 1 < total:
            save_checkpoint(checkpoints, {
                "step": step + 1, "fingerprint": run_id, "model": model.state_dict(),
                "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(), "log": rows,
                **({"pair_heads": heads.state_dict()} if burt else {}),
            })
    seconds = time.perf_counter() - began
    if world.main:
        clear_checkpoints(checkpoints)
    close_world(world)
    return TrainResult(model, data, rows, total, per_epoch, start, seconds, str(device), precision, world, view_filter,
                       burt)


class _Window:
    """Running sums over the steps between two log rows. Each of BURT's objectives that is on (`tasks`) gets a
    column of its mean loss over the window's steps that trained it; `loss` adds them, weighted, to PEARL's.
    `weights`: BURT's objectives that are on, by name."""

    def __init__(self, weights: dict[str, float]):
        self.steps, self.weights = 0, weights
        self.sums = dict.fromkeys(("loss", "contrastive", "type_loss", "distill", "seconds"), 0.0)
        self.correct = self.anchors = self.phrases = 0
        self.task_sums, self.task_steps = dict.fromkeys(weights, 0.0), dict.fromkeys(weights, 0)
        self.weighted = 0.0

    def add(self, parts: LossParts | None, pair_loss: torch.Tensor | None, step: Step, seconds: float) -> None:
        self.steps += 1
        self.sums["seconds"] += seconds
        if parts is not None:
            batch = step.phrases
            self.sums["loss"] += float(parts.total.detach())
            self.sums["contrastive"] += float(parts.contrastive)
            self.sums["type_loss"] += float(parts.type_loss)
            self.sums["distill"] += float(parts.distill)
            self.correct += int(parts.type_correct)
            self.anchors += batch.n_anchors
            self.phrases += len(batch.texts)
        if pair_loss is not None:
            task = step.pairs.task
            self.task_sums[task] += float(pair_loss)
            self.task_steps[task] += 1
            self.weighted += float(pair_loss) * self.weights[task]
            self.phrases += 2 * len(step.pairs.labels)

    def row(self, step: int, lr: float) -> dict:
        n = max(self.steps, 1)
        row = {
            "step": step,
            "loss": round((self.sums["loss"] + self.weighted) / n, 5),
            "contrastive": round(self.sums["contrastive"] / n, 5),
            "type_loss": round(self.sums["type_loss"] / n, 5),
            "distill": round(self.sums["distill"] / n, 5),
            "type_acc": round(self.correct / max(self.anchors, 1), 4),
            "lr": float(f"{lr:.6g}"),
            "seconds_per_step": round(self.sums["seconds"] / n, 4),
            "texts_per_s": round(self.phrases / max(self.sums["seconds"], 1e-9), 1),
        }
        for task, total in self.task_sums.items():
            row[task] = round(total / self.task_steps[task], 5) if self.task_steps[task] else None
        return row


@torch.no_grad()
def type_accuracy(model: PhraseModel, texts: list[str], labels: np.ndarray) -> float:
    head = model.type_head
    logits = head(model.inference(texts, batch_size=256).to(head.weight.device))
    return float((logits.argmax(-1).cpu().numpy() == labels).mean()) if len(texts) else 0.0
