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
    first of the benchmark's ties. O(n) per row, then O(k·c) over the c columns tied with the k-th best."""
    if k == 0:
        return np.zeros((len(scores), 0), dtype=np.int64)
    # every column that takes one of the k places is tied with a score at least the k-th best, and no other
    # column is tied with a best not yet ranked: the places are decided among these candidates alone
    kth = -np.partition(-scores, k - 1, axis=1)[:, k - 1:k]
    rows, columns = np.nonzero(scores >= kth - TIE_TOLERANCE)
    counts = np.bincount(rows, minlength=len(scores))
    ranked = np.empty((len(scores), k), dtype=np.int64)
    # a row with as many ties as columns (a query scoring 0 against most names) is ranked on its own row, so that
    # the candidates of a block stay a few per row
    narrow = counts <= max(8 * k, 64)
    if narrow.any():
        width = int(counts[narrow].max())
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        keep = narrow[rows]
        slot = np.arange(len(rows))[keep] - starts[rows[keep]]
        where = np.cumsum(narrow) - 1  # a narrow row's place among the narrow rows
        candidates = np.full((int(narrow.sum()), width), -np.inf, dtype=scores.dtype)
        candidate_columns = np.zeros(candidates.shape, dtype=np.int64)
        candidates[where[rows[keep]], slot] = scores[rows[keep], columns[keep]]
        candidate_columns[where[rows[keep]], slot] = columns[keep]
        ranked[narrow] = np.take_along_axis(candidate_columns, _rank_in_order(candidates, k), axis=1)
    if (~narrow).any():
        ranked[~narrow] = _rank_in_order(scores[~narrow], k)
    return ranked


def _rank_in_order(scores: np.ndarray, k: int) -> np.ndarray:
    """`rank`, by k passes over every column: each takes the first column tied with the best not yet ranked."""
    remaining = scores.copy()
    done = np.zeros(scores.shape, dtype=bool)
    rows = np.arange(len(scores))
    ranked = np.empty((len(scores), k), dtype=np.int64)
    for place in range(k):
        ranked[:, place] = (tied_with_best(remaining) & ~done).argmax(axis=1)  # argmax: the first True
        remaining[rows, ranked[:, place]] = -np.inf
        done[rows, ranked[:, place]] = True
    return ranked


def with_string_evidence(scores: np.ndarray, rows: np.ndarray, queries: list[str], names: list[str], weight: float,
                         scorer: str = "ratio") -> np.ndarray:
    """(1 − weight) · each candidate's score + weight · rapidfuzz's `scorer` similarity (in [0, 1]) of its
    query and name, lower-cased and stripped of punctuation; `rows` are the candidates' rows of `names`
    (-1: none)."""
    from rapidfuzz import fuzz, process, utils

    pairs_left = [queries[i] for i in range(len(queries)) for _ in range(rows.shape[1])]
    pairs_right = [names[r] if r >= 0 else "" for r in rows.ravel()]
    string = process.cpdist(pairs_left, pairs_right, scorer=getattr(fuzz, scorer), processor=utils.default_process,
                            workers=-1).reshape(rows.shape) / 100.0
    return ((1 - weight) * scores + weight * string).astype(np.float32)
