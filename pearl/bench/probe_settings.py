"""What the MLP probe (pearl/bench/probe.py) is told and gives back, apart from its torch code: a benchmark
reads and checks its files before torch loads (3.5 s)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProbeSettings:
    hidden: int = 256
    lrs: tuple[float, ...] = (1e-4,)  # each is trained; the best validation accuracy picks one
    batch_size: int = 200
    max_epochs: int = 100
    patience: int = 5
    # base.device (auto | cpu | cuda): the probes of a whole suite take minutes on CPU, seconds on a GPU
    device: str = "cpu"


@dataclass(frozen=True)
class ProbeResult:
    accuracy: float  # on test, at the chosen lr's best validation epoch
    lr: float
