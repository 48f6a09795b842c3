"""Training checkpoints: the whole training state, written atomically, resumed only when it
belongs to the same run (same params and inputs)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path

import torch

from pearl.artifacts import SHARD_MANIFEST, atomic_path
from pearl.log import get_logger
from pearl.params import Params

log = get_logger("train")
LATEST = "latest.pt"

# Train params that do not change the result: a run may resume under different values.
_NEUTRAL = {"num_workers", "checkpoint_dir", "checkpoint_every", "log_every"}


def fingerprint(params: Params, inputs: list[Path]) -> str:
    train = {k: v for k, v in asdict(params.train).items() if k not in _NEUTRAL}
    burt = {"burt": asdict(params.burt), "burt_dir": params.bench.burt_dir} if params.burt.weights else {}
    digest = hashlib.sha256(json.dumps(
        {"seed": params.base.seed, "model": asdict(params.model), "train": train, **burt}, sort_keys=True).encode())
    for path in inputs:
        # a sharded artifact's manifest holds each shard's hash
        digest.update(hashlib.sha256((path / SHARD_MANIFEST if path.is_dir() else path).read_bytes()).digest())
    return digest.hexdigest()[:16]


def save_checkpoint(directory: Path, state: dict) -> None:
    with atomic_path(directory / LATEST) as tmp:
        torch.save(state, tmp)
    log.info("checkpoint at step %d → %s", state["step"], directory / LATEST)


def load_checkpoint(directory: Path, expected: str) -> dict | None:
    path = directory / LATEST
    if not path.is_file():
        return None
    try:
        # the folder is train.checkpoint_dir, set by the user: a full unpickler would run any code a file names
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # a truncated or foreign file: start over rather than crash
        log.warning("ignoring unreadable checkpoint %s (%s)", path, type(error).__name__)
        return None
    if state.get("fingerprint") != expected:
        log.info("checkpoint %s is from other params or inputs; starting from step 0", path)
        return None
    log.info("resuming from %s at step %d", path, state["step"])
    return state


def clear_checkpoints(directory: Path) -> None:
    """Remove the finished run's checkpoint and any half-written one a run killed with -9 left."""
    (directory / LATEST).unlink(missing_ok=True)
    for stale in directory.glob(f".{LATEST}.*.tmp"):
        stale.unlink(missing_ok=True)
