"""Resolve base.device to the torch device a stage runs on."""

from __future__ import annotations

from pearl.errors import PearlError


def resolve_device(requested: str) -> str:
    import torch  # here: a stage checks its inputs before torch loads (3.5 s)

    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda" and not torch.cuda.is_available():
        raise PearlError("base.device=cuda but no CUDA device is visible: set base.device=auto or cpu")
    return requested
