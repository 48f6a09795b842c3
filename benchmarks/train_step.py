"""Time one training step three ways, on the default pipeline's data (run `dvc repro negatives` first).

1. full step: what `pearl train` does, batches built and tokenised in DataLoader workers while
   the model computes; wall time per step including any wait for data;
2. compute only: forward + backward + optimizer on batches already built and tokenised;
3. authors'-style loop: batches built in the training process, an augmenter constructed per
   sample and tokenisation inside the forward (as in the PEARL reference code).
The input pipeline is off the critical path when (1) is within 10% of (2).

    python benchmarks/train_step.py                          # CPU defaults from params.yaml
    python benchmarks/train_step.py -S train.batch_size=512  # the paper's batch (GPU)
"""

from __future__ import annotations

import argparse
import contextlib
import time

import numpy as np
import torch
from torch.utils.data import DataLoader

from pearl.augment.char_level import CharAugmenter
from pearl.cli import _overrides
from pearl.device import resolve_device
from pearl.params import load_params
from pearl.train.data import Batch, Sampling, StepBatches, TrainingSet
from pearl.train.loop import _precision, _step, model_config
from pearl.train.distributed import World
from pearl.train.stage import INPUTS
from pearl.model.phrase_model import PhraseModel


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=10, help="timed steps per variant (after 2 warm-up steps)")
    parser.add_argument("-S", "--set", action="append", default=[], help="param override, e.g. train.batch_size=512")
    args = parser.parse_args()
    params = load_params("params.yaml", _overrides(args.set))
    t = params.train
    device_name = resolve_device(params.base.device)
    device = torch.device(device_name)
    precision = _precision(t.precision, device_name)

    def autocast():
        if precision == "bf16":
            return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    torch.manual_seed(params.base.seed)
    model = PhraseModel(model_config(params)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=t.lr)
    data = TrainingSet.load(INPUTS.typed, INPUTS.variants, INPUTS.negatives, t.heldout_fraction, params.base.seed)
    sampling = Sampling(params.base.seed, t.batch_size, t.hard_negatives,
                        {"char": t.p_char, "token": t.p_token, "phrase": t.p_phrase})
    world, warm, n = World(), 2, args.steps

    def optimise(batch: Batch) -> None:
        optimizer.zero_grad(set_to_none=True)
        _step(model, batch, params, device, autocast, world)
        optimizer.step()

    # 1. the real pipeline
    loader = DataLoader(StepBatches(data, sampling, model.tokenize, 0, warm + n), batch_size=None,
                        num_workers=t.num_workers, prefetch_factor=4 if t.num_workers else None,
                        pin_memory=device.type == "cuda")
    times = []
    last = time.perf_counter()
    for k, batch in enumerate(loader):
        optimise(batch)
        _sync(device)
        now = time.perf_counter()
        if k >= warm:
            times.append(now - last)
        last = now
    full = float(np.mean(times))

    # 2. compute only, same batches
    ready = [StepBatches(data, sampling, model.tokenize, 0, warm + n)[k] for k in range(warm + n)]
    times = []
    for k, batch in enumerate(ready):
        _sync(device)
        began = time.perf_counter()
        optimise(batch)
        _sync(device)
        if k >= warm:
            times.append(time.perf_counter() - began)
    compute = float(np.mean(times))

    # 3. authors'-style: build in the loop, an augmenter per sample, tokenise inside forward
    times = []
    for k in range(warm + n):
        began = time.perf_counter()
        for phrase in (data.phrases[i] for i in data.anchors(sampling, k)):
            CharAugmenter(k).variants(phrase)  # the reference code builds its augmenters per sample
        texts, count, labels, exclude, counts = data.batch_texts(sampling, k)
        optimise(Batch(texts, count, torch.from_numpy(labels), torch.from_numpy(exclude), model.tokenize(texts), counts))
        _sync(device)
        if k >= warm:
            times.append(time.perf_counter() - began)
    inline = float(np.mean(times))

    texts = np.mean([len(b.texts) for b in ready])
    print(f"device {device} ({precision}), batch {t.batch_size} phrases + views + negatives = {texts:.0f} texts/step, "
          f"{n} timed steps, {t.num_workers} DataLoader workers")
    print(f"{'variant':<44} {'s/step':>8} {'texts/s':>9} {'vs compute':>11}")
    for name, seconds in (("full step (pearl train)", full), ("forward+backward+optimizer only", compute),
                          ("authors'-style loop (inline data, per-sample)", inline)):
        print(f"{name:<44} {seconds:8.3f} {texts / seconds:9.1f} {100 * (seconds / compute - 1):+10.1f}%")


if __name__ == "__main__":
    main()
