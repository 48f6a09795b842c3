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
from pearl.model.phrase_model import ModelConfig, PhraseModel
from pearl.params import Params
from pearl.train.checkpoint import clear_checkpoints, fingerprint, load_checkpoint, save_checkpoint
from pearl.teacher.vectors import TeacherVectors
from pearl.train.data import Batch, Sampling, StepBatches, TrainingSet, ViewFilter
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


def model_config(params: Params) -> ModelConfig:
    m = params.model
    return ModelConfig(m.backbone, m.prefix, m.max_length, m.char_encoder, m.char_dim, m.char_weight)


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


def batch_loader(data: TrainingSet, params: Params, tokenize, first: int, last: int, device: torch.device) -> DataLoader:
    """Steps first..last-1, built and tokenised in `train.num_workers` workers."""
    workers = loader_workers(params.train.num_workers, device)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # workers tokenise; no nested thread pools
    return DataLoader(StepBatches(data, sampling_for(params), tokenize, first, last), batch_size=None,
                      num_workers=workers, prefetch_factor=4 if workers else None, pin_memory=device.type == "cuda")


def _rows(features: dict[str, torch.Tensor], start: int, stop: int, device) -> dict[str, torch.Tensor]:
    return {k: v[start:stop].to(device, non_blocking=True) for k, v in features.items()}


def _step(model: PhraseModel, batch: Batch, params: Params, device, autocast, world: World) -> LossParts:
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
    per_epoch = data.steps_per_epoch(t.batch_size)
    if per_epoch == 0:
        raise PearlError(f"train.batch_size ({t.batch_size}) exceeds the {len(data.train)} training phrases: lower it")
    torch.manual_seed(seed)
    model = PhraseModel(model_config(params)).to(device)
    total = per_epoch * t.epochs if t.max_steps is None else min(per_epoch * t.epochs, t.max_steps)

    # The character encoder and type head start from random weights: at the backbone's small
    # learning rate they would barely move in a CPU-sized run.
    heads = [p for name, p in model.named_parameters() if not name.startswith("backbone.")]
    optimizer = torch.optim.Adam([{"params": list(model.backbone.parameters()), "lr": t.lr},
                                  {"params": heads, "lr": t.head_lr}])
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=t.lr_decay_steps, gamma=t.lr_decay_rate)
    checkpoints = Path(t.checkpoint_dir)
    run_id = fingerprint(params, [inputs.typed, inputs.variants, inputs.negatives]
                         + ([inputs.teacher] if uses_teacher(params) else []))
    state = load_checkpoint(checkpoints, run_id)
    start, rows = 0, []
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        start, rows = state["step"], state["log"]

    if world.size > 1:  # every rank starts from rank 0's weights (a resumed run included)
        for tensor in model.state_dict().values():
            torch.distributed.broadcast(tensor, src=0)

    autocast = autocast_for(precision, device)
    loader = batch_loader(data, params, model.tokenize, start, total, device)
    log.info("training %d steps (%d per epoch, batch %d, %d hard negatives each, %s, %s, world %d) from step %d",
             total, per_epoch, t.batch_size, t.hard_negatives, device, precision, world.size, start)

    batches = iter(loader)
    model.train()
    window = _Window()
    began = time.perf_counter()
    last = began
    progress = tqdm(batches, initial=start, total=total, desc="train", disable=not world.main, mininterval=5)
    for k, batch in enumerate(progress):
        step = start + k
        seed_dropout(seed, world.rank, step)
        optimizer.zero_grad(set_to_none=True)
        parts = _step(model, batch, params, device, autocast, world)
        average_gradients(model, world)
        optimizer.step()
        scheduler.step()
        now = time.perf_counter()
        window.add(parts, batch, now - last)
        last = now
        if (step + 1) % t.log_every == 0 or step + 1 == total:
            rows.append(window.row(step + 1, scheduler.get_last_lr()[0]))
            progress.set_postfix(loss=rows[-1]["loss"], refresh=False)
            window = _Window()
        if world.main and (step + 1) % t.checkpoint_every == 0 and step + 1 < total:
            save_checkpoint(checkpoints, {
                "step": step + 1, "fingerprint": run_id, "model": model.state_dict(),
                "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(), "log": rows,
            })
    seconds = time.perf_counter() - began
    if world.main:
        clear_checkpoints(checkpoints)
    close_world(world)
    return TrainResult(model, data, rows, total, per_epoch, start, seconds, str(device), precision, world, view_filter)


class _Window:
    """Running sums over the steps between two log rows."""

    def __init__(self):
        self.steps = 0
        self.sums = dict.fromkeys(("loss", "contrastive", "type_loss", "distill", "seconds"), 0.0)
        self.correct = self.anchors = self.phrases = 0

    def add(self, parts: LossParts, batch: Batch, seconds: float) -> None:
        self.steps += 1
        self.sums["loss"] += float(parts.total.detach())
        self.sums["contrastive"] += float(parts.contrastive)
        self.sums["type_loss"] += float(parts.type_loss)
        self.sums["distill"] += float(parts.distill)
        self.sums["seconds"] += seconds
        self.correct += int(parts.type_correct)
        self.anchors += batch.n_anchors
        self.phrases += len(batch.texts)

    def row(self, step: int, lr: float) -> dict:
        n = max(self.steps, 1)
        return {
            "step": step,
            "loss": round(self.sums["loss"] / n, 5),
            "contrastive": round(self.sums["contrastive"] / n, 5),
            "type_loss": round(self.sums["type_loss"] / n, 5),
            "distill": round(self.sums["distill"] / n, 5),
            "type_acc": round(self.correct / max(self.anchors, 1), 4),
            "lr": float(f"{lr:.6g}"),
            "seconds_per_step": round(self.sums["seconds"] / n, 4),
            "texts_per_s": round(self.phrases / max(self.sums["seconds"], 1e-9), 1),
        }


@torch.no_grad()
def type_accuracy(model: PhraseModel, texts: list[str], labels: np.ndarray) -> float:
    head = model.type_head
    logits = head(model.inference(texts, batch_size=256).to(head.weight.device))
    return float((logits.argmax(-1).cpu().numpy() == labels).mean()) if len(texts) else 0.0
