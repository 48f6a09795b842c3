"""The training objective: InfoNCE over (phrase, augmented view) plus the type head's cross-entropy.

Equation 2 of the paper with in-batch and hard negatives, equation 3 on both views, total as
equation 4 with a weight on the type term (0 turns the auxiliary task off, for the ablation).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F


@dataclass(frozen=True)
class LossParts:
    total: torch.Tensor
    contrastive: torch.Tensor
    type_loss: torch.Tensor
    type_correct: torch.Tensor  # anchors whose type the head predicts right, for the log


def info_nce(anchors: torch.Tensor, candidates: torch.Tensor, exclude: torch.Tensor | None,
             temperature: float) -> torch.Tensor:
    """Anchor i's positive is candidates[i]; the other rows are negatives.

    `exclude[i, j]` drops candidate j from anchor i's denominator: a candidate whose text is the
    anchor's own text or its positive's text is a false negative, not a negative.
    """
    # fp32 even under bf16 autocast: at temperature 0.07, bf16 cosines/τ move in steps of ~0.05
    with torch.autocast(device_type=anchors.device.type, enabled=False):
        logits = F.normalize(anchors.float(), dim=-1) @ F.normalize(candidates.float(), dim=-1).T / temperature
    if exclude is not None:
        logits = logits.masked_fill(exclude, float("-inf"))
    return F.cross_entropy(logits, torch.arange(len(anchors), device=anchors.device))


def pearl_loss(vectors: torch.Tensor, n_anchors: int, labels: torch.Tensor, exclude: torch.Tensor | None,
               type_head: nn.Module, temperature: float, type_weight: float) -> LossParts:
    """`vectors` = anchors, then their positives (same order), then hard negatives."""
    anchors, candidates = vectors[:n_anchors], vectors[n_anchors:]
    contrastive = info_nce(anchors, candidates, exclude, temperature)
    views = vectors[: 2 * n_anchors]
    logits = type_head(views).float()
    both = torch.cat([labels, labels])
    type_loss = F.cross_entropy(logits, both)
    total = contrastive + type_weight * type_loss if type_weight > 0 else contrastive
    correct = (logits[:n_anchors].argmax(-1) == labels).sum()
    return LossParts(total, contrastive.detach(), type_loss.detach(), correct.detach())
