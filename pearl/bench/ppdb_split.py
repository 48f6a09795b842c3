"""Leak-free PPDB splits: unordered pairs once, and no phrase on two sides of a split.

The paper splits PPDB pairs at random. PPDB-filtered holds 3,148 pairs as both (a, b) and
(b, a), so about 28% of its test pairs have their twin in train, and a phrase seen in a train
pair recurs in test pairs: the probe can memorise phrases instead of judging paraphrase.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pearl.bench.data import PairData


@dataclass(frozen=True)
class CleanPairs:
    pairs: PairData
    duplicates: int  # pairs dropped as repeats of an earlier unordered pair (either order)
    conflicts: int   # unordered pairs dropped because their copies disagree on the label


def unordered_unique(pairs: PairData) -> CleanPairs:
    labels: dict[frozenset, set[int]] = {}
    first: dict[frozenset, tuple[str, str]] = {}
    for a, b, label in zip(pairs.left, pairs.right, pairs.labels):
        key = frozenset((a, b))
        labels.setdefault(key, set()).add(label)
        first.setdefault(key, (a, b))
    kept = [key for key in first if len(labels[key]) == 1]
    return CleanPairs(
        PairData([first[k][0] for k in kept], [first[k][1] for k in kept], [next(iter(labels[k])) for k in kept]),
        duplicates=len(pairs.labels) - len(first),
        conflicts=len(first) - len(kept),
    )


def phrase_disjoint_split(pairs: PairData, fractions: tuple[float, ...], seed: int) -> list[np.ndarray]:
    """Pair indices per split. Each phrase goes to one split at random; a pair is kept when both
    its phrases went to the same one. PPDB's random negatives join almost all phrases into one
    connected graph, so splitting whole components is impossible; phrase probabilities
    ∝ sqrt(fraction) make the kept pairs' shares match `fractions`."""
    phrases = sorted(set(pairs.left) | set(pairs.right))
    weights = np.sqrt(np.asarray(fractions, dtype=float))
    side = np.random.default_rng(seed).choice(len(fractions), size=len(phrases), p=weights / weights.sum())
    of = dict(zip(phrases, side))
    left = np.array([of[a] for a in pairs.left])
    right = np.array([of[b] for b in pairs.right])
    return [np.flatnonzero((left == s) & (right == s)) for s in range(len(fractions))]
