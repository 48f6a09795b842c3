"""Time one training step four ways, on the default pipeline's data (run `dvc repro negatives` first).
With model.teacher set, the step includes the distillation term on cached teacher vectors.

1. full step: what `pearl train` does, batches built and tokenised in DataLoader workers while
   the model computes; wall time per step including any wait for data;
2. the same full step over the same steps again: the batch shapes have been seen;
3. compute only: forward + backward + optimizer on batches already built and tokenised;
4. authors'-style loop: batches built in the training process, an augmenter constructed per
   sample and tokenisation inside the forward (as in the PEARL reference code).
The input pipeline is off the critical path when (2) is within 10% of (3). (1) − (2) is what a
batch shape costs the first time it is seen: on CUDA, memory blocks and kernels for the new sizes
(each batch has its own text count and padded length); it fades as training sees the shapes. On
CUDA each variant's peak GPU memory is printed too. The last line takes the full step's rate to the
paper's scale: `train.epochs` over `--phrases` (3.8M, the paper's Wikipedia phrases) at this batch.

    python benchmarks/train_step.py                          # CPU defaults from params.yaml
    python benchmarks/train_step.py -S train.batch_size=512  # the paper's batch (GPU)
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from pearl.augment.char_level import CharAugmenter
from pearl.cli import _overrides
from pearl.device import resolve_device
from pearl.params import load_params
from pearl.train.data import StepBatches, TrainingSet
from pearl.train.distributed import World
from pearl.train.loop import (_step, autocast_for, batch_loader, loader_workers, model_config, precision_for,
                              sampling_for, teacher_inputs)
from pearl.train.stage import INPUTS
from pearl.model.phrase_model import PhraseModel


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def _peak_gib(device: torch.device) -> float | None:
    """Peak allocated GPU memory since the last call, in GiB."""
    if device.type != "cuda":
        return None
    peak = torch.cuda.max_memory_allocated(device) / 2**30
    torch.cuda.reset_peak_memory_stats(device)
    return peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=10, help="timed steps per variant (after 2 warm-up steps)")
    parser.add_argument("--phrases", type=float, default=3.8e6, help="phrases of the paper-scale estimate")
    parser.add_argument("-S", "--set", action="append", default=[], help="param override, e.g. train.batch_size=512")
    args = parser.parse_args()
    params = load_params("params.yaml", _overrides(args.set))
    t = params.train
    device_name = resolve_device(params.base.device)
    device = torch.device(device_name)
    precision = precision_for(t.precision, device_name)
    autocast = autocast_for(precision, device)

    torch.manual_seed(params.base.seed)
    model = PhraseModel(model_config(params)).to(device)
    teacher, view_filter = teacher_inputs(params, INPUTS.teacher)
    optimizer = torch.optim.Adam(model.parameters(), lr=t.lr)
    data = TrainingSet.load(INPUTS.typed, INPUTS.variants, INPUTS.negatives, t.heldout_fraction, params.base.seed,
                            teacher, view_filter)
    sampling = sampling_for(params)
    world, warm, n = World(), 2, args.steps
    steps = StepBatches(data, sampling, model.tokenize, 0, warm + n)

    def optimise(batch) -> None:
        optimizer.zero_grad(set_to_none=True)
        _step(model, batch, params, device, autocast, world)
        optimizer.step()

    def full_step() -> float:
        loader = batch_loader(data, params, model.tokenize, 0, warm + n, device)
        times = []
        last = time.perf_counter()
        for k, batch in enumerate(loader):
            optimise(batch)
            _sync(device)
            now = time.perf_counter()
            if k >= warm:
                times.append(now - last)
            last = now
        return float(np.mean(times))

    # 1-2. the real pipeline, twice over the same steps
    first = full_step()
    peaks = [_peak_gib(device)]
    seen = full_step()
    peaks.append(_peak_gib(device))

    # 3. compute only, same batches
    ready = [steps[k] for k in range(warm + n)]
    times = []
    for k, batch in enumerate(ready):
        _sync(device)
        began = time.perf_counter()
        optimise(batch)
        _sync(device)
        if k >= warm:
            times.append(time.perf_counter() - began)
    compute = float(np.mean(times))
    peaks.append(_peak_gib(device))

    # 4. authors'-style: build in the loop, an augmenter per sample, tokenise inside forward
    times = []
    for k in range(warm + n):
        began = time.perf_counter()
        for phrase in (data.phrases[i] for i in data.anchors(sampling, k)):
            CharAugmenter(k).variants(phrase)  # the reference code builds its augmenters per sample
        optimise(steps[k])  # built and tokenised here, in the training process
        _sync(device)
        if k >= warm:
            times.append(time.perf_counter() - began)
    inline = float(np.mean(times))
    peaks.append(_peak_gib(device))

    texts = np.mean([len(b.texts) for b in ready])
    print(f"device {device} ({precision}), batch {t.batch_size} phrases + views + negatives = {texts:.0f} texts/step, "
          f"{n} timed steps, {loader_workers(t.num_workers, device)} DataLoader workers (train.num_workers={t.num_workers})")
    print(f"{'variant':<44} {'s/step':>8} {'texts/s':>9} {'vs compute':>11} {'peak GiB':>9}")
    for (name, seconds), peak in zip((("full step (pearl train)", first), ("full step, same steps again", seen),
                                      ("forward+backward+optimizer only", compute),
                                      ("authors'-style loop (inline data, per-sample)", inline)), peaks):
        shown = "" if peak is None else f"{peak:9.1f}"
        print(f"{name:<44} {seconds:8.3f} {texts / seconds:9.1f} {100 * (seconds / compute - 1):+10.1f}% {shown}")
    paper_steps = t.epochs * args.phrases / t.batch_size
    print(f"paper scale: {t.epochs} epochs × {args.phrases / 1e6:.1f}M phrases ÷ batch {t.batch_size} = "
          f"{paper_steps:,.0f} steps, {paper_steps * seen / 3600:.2f} h at the full step's rate once shapes are "
          f"seen ({paper_steps * first / 3600:.2f} h at the first-sight rate)")


if __name__ == "__main__":
    main()
