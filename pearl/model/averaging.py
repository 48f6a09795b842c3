"""Weight averaging (section 3.4): the fine-tuned backbone pulled back towards the original.

Only the backbone's floating-point tensors are averaged: integer buffers (position ids) are
kept as they are, and the character encoder and type head have no original to average with.
"""

from __future__ import annotations

import torch

from pearl.errors import PearlError


def average_state(original: dict[str, torch.Tensor], finetuned: dict[str, torch.Tensor],
                  alpha: float) -> tuple[dict[str, torch.Tensor], int]:
    """(1 - alpha) · original + alpha · fine-tuned; returns the state and how many tensors moved."""
    if original.keys() != finetuned.keys():
        missing = sorted(original.keys() ^ finetuned.keys())[:3]
        raise PearlError(f"average: the fine-tuned and original backbones differ in tensors ({', '.join(missing)} …)")
    merged, averaged = {}, 0
    for name, tuned in finetuned.items():
        base = original[name]
        if tuned.shape != base.shape:
            raise PearlError(f"average: tensor {name} has shape {tuple(tuned.shape)} vs {tuple(base.shape)} originally")
        if tuned.is_floating_point():
            merged[name] = ((1 - alpha) * base.float() + alpha * tuned.float()).to(tuned.dtype)
            averaged += 1
        else:
            merged[name] = tuned.clone()
    return merged, averaged
