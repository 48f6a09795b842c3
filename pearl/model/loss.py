"""The training objective: InfoNCE over (phrase, augmented view) plus the type head's cross-entropy.

Equation 2 of the paper with in-batch and hard negatives, equation 3 on both views, total as
equation 4 with a weight on each term (0 turns a term off, for the ablations).
An optional third term distils a teacher, comparing similarities rather than vectors so that the
two models' dimensions need not match: either the KL divergence from the teacher's distribution
over each anchor's negatives (softmaxed cosines) to the student's, or one minus the Pearson
correlation of each anchor's row of cosines with the teacher's row (similarity-preserving
distillation: every pair in the batch carries signal, not only the teacher's top few).
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
    distill: torch.Tensor
    type_correct: torch.Tensor  # anchors whose type the head predicts right, for the log


def info_nce(anchors: torch.Tensor, candidates: torch.Tensor, exclude: torch.Tensor | None,
             temperature: float) -> torch.Tensor:
    """Anchor i's positive is candidates[i]; the other rows are negatives.

    `exclude[i, j]` drops candidate j from anchor i's denominator: a candidate whose text is the
    anchor's own text or its positive's text is a false negative, not a negative.
    """
    logits = cosine_logits(anchors, candidates, temperature)
    if exclude is not None:
        logits = logits.masked_fill(exclude, float("-inf"))
    return F.cross_entropy(logits, torch.arange(len(anchors), device=anchors.device))


def cosine_logits(anchors: torch.Tensor, candidates: torch.Tensor, temperature: float) -> torch.Tensor:
    # fp32 even under bf16 autocast: at temperature 0.07, bf16 cosines/τ move in steps of ~0.05
    with torch.autocast(device_type=anchors.device.type, enabled=False):
        return F.normalize(anchors.float(), dim=-1) @ F.normalize(candidates.float(), dim=-1).T / temperature


def _positive_or_excluded(logits: torch.Tensor, exclude: torch.Tensor | None) -> torch.Tensor:
    """Which candidates distillation leaves out: each anchor's positive (candidate i of anchor i)
    and the excluded ones."""
    mask = torch.zeros_like(logits, dtype=torch.bool)
    mask[:, : len(logits)].fill_diagonal_(True)
    return mask | exclude if exclude is not None else mask


def distill_kl(anchors: torch.Tensor, candidates: torch.Tensor, teacher_cos: torch.Tensor,
               exclude: torch.Tensor | None, temperature: float) -> torch.Tensor:
    """KL(teacher ‖ student) over each anchor's negatives, averaged over anchors.

    The positive (candidate i of anchor i) is left out with the excluded candidates: the teacher
    scores a view as its phrase, so it would put nearly all the mass there and the term would
    repeat InfoNCE instead of passing on how the teacher ranks the other phrases. Left-out
    candidates get a large finite negative logit on both sides rather than -inf, so their
    probability is exactly 0 and 0·log 0 stays 0 instead of NaN.
    """
    student = cosine_logits(anchors, candidates, temperature)
    teacher = teacher_cos.float() / temperature
    leave_out = _positive_or_excluded(student, exclude)
    student = student.masked_fill(leave_out, -1e4)
    teacher = teacher.masked_fill(leave_out, -1e4)
    return F.kl_div(F.log_softmax(student, -1), F.softmax(teacher, -1), reduction="batchmean")


def distill_correlation(anchors: torch.Tensor, candidates: torch.Tensor, teacher_cos: torch.Tensor,
                        exclude: torch.Tensor | None) -> torch.Tensor:
    """1 − Pearson r of the student's and the teacher's cosines over each anchor's candidates,
    averaged over anchors; the positive and the excluded candidates are left out, as in
    `distill_kl`. Correlation ignores each row's offset and scale, so the student keeps its own
    calibration (all-mpnet-base-v2's cosines run lower than MiniLM's) and learns the ordering and
    relative distances.
    """
    student = cosine_logits(anchors, candidates, 1.0)
    keep = ~_positive_or_excluded(student, exclude)
    weight = keep.float() / keep.sum(-1, keepdim=True).clamp(min=1)

    def centred(x: torch.Tensor) -> torch.Tensor:
        x = x - (x * weight).sum(-1, keepdim=True)
        return x * keep / ((x * x * weight).sum(-1, keepdim=True).sqrt() + 1e-8)

    r = (centred(student) * centred(teacher_cos.float()) * weight).sum(-1)
    return (1 - r).mean()


def pearl_loss(vectors: torch.Tensor, n_anchors: int, labels: torch.Tensor, exclude: torch.Tensor | None,
               type_head: nn.Module, temperature: float, type_weight: float,
               contrastive_weight: float = 1.0, teacher_cos: torch.Tensor | None = None, distill_weight: float = 0.0,
               distill_loss: str = "kl") -> LossParts:
    """`vectors` = anchors, then their positives (same order), then hard negatives;
    `teacher_cos[i, j]` the teacher's cosine of anchor i and candidate j."""
    anchors, candidates = vectors[:n_anchors], vectors[n_anchors:]
    contrastive = info_nce(anchors, candidates, exclude, temperature)
    views = vectors[: 2 * n_anchors]
    logits = type_head(views).float()
    both = torch.cat([labels, labels])
    type_loss = F.cross_entropy(logits, both)
    total = contrastive_weight * contrastive
    if type_weight > 0:
        total = total + type_weight * type_loss
    distill = torch.zeros((), device=vectors.device)
    if teacher_cos is not None and distill_weight > 0:
        distill = (distill_kl(anchors, candidates, teacher_cos, exclude, temperature) if distill_loss == "kl"
                   else distill_correlation(anchors, candidates, teacher_cos, exclude))
        total = total + distill_weight * distill
    correct = (logits[:n_anchors].argmax(-1) == labels).sum()
    return LossParts(total, contrastive.detach(), type_loss.detach(), distill.detach(), correct.detach())
