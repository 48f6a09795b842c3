"""BURT's training-only classifiers: one linear layer over features of two separately encoded texts.

BURT feeds (u, v, |u − v|) to a softmax layer for each objective; its Table 3 compares other
concatenations, among them the element-wise product. u and v are the model's phrase vectors, the ones
the export ships. The export never holds these layers: the model saves its own modules only.
"""

from __future__ import annotations

import torch
from torch import nn


def pair_features(u: torch.Tensor, v: torch.Tensor, features: tuple[str, ...]) -> torch.Tensor:
    parts = {"u": lambda: u, "v": lambda: v, "abs_diff": lambda: (u - v).abs(), "product": lambda: u * v}
    return torch.cat([parts[name]() for name in features], dim=-1)


class PairClassifier(nn.Module):
    def __init__(self, dim: int, features: tuple[str, ...], classes: int):
        super().__init__()
        self.features = features
        self.linear = nn.Linear(dim * len(features), classes)

    def forward(self, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return self.linear(pair_features(u, v, self.features))


def pair_heads(dim: int, features: list[str], classes: dict[str, int]) -> nn.ModuleDict:
    """One classifier per objective: `classes` maps each objective to its number of classes."""
    return nn.ModuleDict({task: PairClassifier(dim, tuple(features), n) for task, n in classes.items()})
