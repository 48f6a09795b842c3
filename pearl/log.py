"""Logging set-up and throughput reporting for long-running stages."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field


def get_logger(name: str) -> logging.Logger:
    return logging.getLogger(f"pearl.{name}")


def configure_logging(verbose: bool = False) -> None:
    """pearl's INFO lines; the libraries' INFO lines and progress bars only when `verbose`: before each command's
    own output, model loading alone prints a dozen of them."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(asctime)s %(name)s: %(message)s",
                        datefmt="%H:%M:%S")
    logging.getLogger("pearl").setLevel(logging.INFO)
    # faiss logs each CPU-specific build it tries before the one that loads
    logging.getLogger("faiss.loader").setLevel(logging.WARNING)
    if not verbose:
        try:
            from huggingface_hub.utils import disable_progress_bars
        except ModuleNotFoundError:  # an install without the [models] extra shows no model library's bars
            return
        disable_progress_bars()  # transformers' bars ("Loading weights") too: it reads this setting when imported


@dataclass
class Stopwatch:
    """Wall time of a piece of work and its rate, for logs and metrics."""

    started: float = field(default_factory=time.perf_counter)

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.started

    def report(self, logger: logging.Logger, count: int, unit: str) -> dict[str, float]:
        seconds = self.seconds
        rate = count / max(seconds, 1e-9)
        logger.info("%d %s in %.1f s (%.1f %s/s)", count, unit, seconds, rate, unit)
        return {"seconds": round(seconds, 2), f"{unit}_per_s": round(rate, 1)}
