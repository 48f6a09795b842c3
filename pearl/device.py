"""Resolve base.device to the torch device a stage runs on."""

from __future__ import annotations

import torch

from pearl.errors import PearlError


def resolve_device(requested: str) -> str:
    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda" and not torch.cuda.is_available():
        raise PearlError("base.device=cuda but no CUDA device is visible: set base.device=auto or cpu")
    return requested
