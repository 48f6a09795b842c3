"""Scoring rules shared by the benchmark tasks. All return fractions in [0, 1] (or [-1, 1]).

scipy and scikit-learn are imported where they score (1–2 s): a task reads and checks its files first."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pearl.scores import tied_with_best


def tie_credit(tied: Sequence[int], gold: set[int]) -> float:
    """1/k for each of the k top-scoring candidates that is gold: a tie is never 'first wins'."""
    return sum(1 for i in tied if i in gold) / len(tied)


def tied_accuracy(tied_per_item: Sequence[Sequence[int]], gold_per_item: Sequence[set[int]]) -> float:
    if not tied_per_item:
        return 0.0
    return float(np.mean([tie_credit(t, g) for t, g in zip(tied_per_item, gold_per_item)]))


def choice_accuracy(scores_per_item: Sequence[np.ndarray], gold_index: Sequence[int]) -> float:
    """Accuracy of picking the gold candidate by highest score, ties credited 1/k."""
    tied = [np.flatnonzero(tied_with_best(s)) for s in scores_per_item]
    return tied_accuracy(tied, [{g} for g in gold_index])


def pearson(predicted: np.ndarray, gold: np.ndarray) -> float:
    """Pearson's r; 0 for a constant prediction, which carries no information."""
    if np.ptp(predicted) == 0:
        return 0.0
    from scipy.stats import pearsonr

    return float(pearsonr(predicted, gold).statistic)


def spearman(predicted: np.ndarray, gold: np.ndarray) -> float:
    """Spearman's ρ; 0 for a constant prediction, which carries no information."""
    if np.ptp(predicted) == 0:
        return 0.0
    from scipy.stats import spearmanr

    return float(spearmanr(predicted, gold).statistic)


def kmeans_nmi(vectors: np.ndarray, labels: Sequence[int], n_init: int, seed: int) -> float:
    from sklearn.cluster import KMeans
    from sklearn.metrics import normalized_mutual_info_score

    k = len(set(labels))
    clusters = KMeans(n_clusters=k, n_init=n_init, random_state=seed).fit_predict(vectors)
    return float(normalized_mutual_info_score(labels, clusters))
