"""Similarity scores (cosine, or 3-gram Jaccard) as every verb and the benchmark read them: their
range, and when two are equal.

Two scores within TIE_TOLERANCE of each other are one score: float32 cosine noise is ~1e-7, so a
cosine that is mathematically t can come out as t − 1e-7. The same rule credits the benchmark's
ties, orders an index's results and decides whether a score reaches a cut.
"""

from __future__ import annotations

import numpy as np

from pearl.errors import PearlError

TIE_TOLERANCE = 1e-6
# the training data's rankings and cuts (augment, the miners) read scores rounded to this many decimals:
# another CPU or thread count moves a cosine by ~1e-7 and then changes a decision only when the cosine
# lies that close to a rounding boundary, not whenever two scores are near-tied
DECIMALS = 4


def rounded(scores: np.ndarray) -> np.ndarray:
    return np.round(scores, DECIMALS)


def check_score(value: float | None, option: str) -> None:
    if value is not None and not -1.0 <= value <= 1.0:
        raise PearlError(f"{option} {value}: a cosine score lies in [-1, 1]")


def tied_with_best(scores: np.ndarray) -> np.ndarray:
    """Mask of the scores tied with the best of their row (the last axis)."""
    return scores >= scores.max(axis=-1, keepdims=True) - TIE_TOLERANCE


def at_least(scores, cut: float):
    """Whether each score reaches `cut`: one tied with it does."""
    return scores >= cut - TIE_TOLERANCE


def rank(scores: np.ndarray, k: int) -> np.ndarray:
    """Columns of each row's k best scores, best first, for columns in the order the names were added.

    Each rank goes to the first column tied with the best score not yet ranked, so rank 1 is the
    first of the benchmark's ties."""
    remaining = scores.copy()
    done = np.zeros(scores.shape, dtype=bool)
    rows = np.arange(len(scores))
    ranked = np.empty((len(scores), k), dtype=np.int64)
    for place in range(k):
        ranked[:, place] = (tied_with_best(remaining) & ~done).argmax(axis=1)  # argmax: the first True
        remaining[rows, ranked[:, place]] = -np.inf
        done[rows, ranked[:, place]] = True
    return ranked
