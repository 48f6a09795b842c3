"""Recall of candidate mining against brute force: every pair of a query sample scored, its true top-k kept.

No stage runs this: tests/test_negatives.py and benchmarks/mine_candidates.py check the blocking with it.
"""

from __future__ import annotations

import numpy as np
from rapidfuzz import process

from pearl.negatives import candidates as mining


def _score_matrix(queries: list[str], phrases: list[str], scorer: str, n_threads: int) -> np.ndarray:
    """Edit similarity of every query with every phrase (brute force), by mining's scorers."""
    if scorer == "lookalike":
        parts = {k: process.cdist(queries, phrases, scorer=f, workers=n_threads, dtype=np.float32)
                 for k, (f, _) in mining.LOOKALIKE_PARTS.items()}
        return mining.lookalike(parts)
    function, scale = mining.SINGLE_SCORERS[scorer]
    return process.cdist(queries, phrases, scorer=function, workers=n_threads, dtype=np.float32) / scale


def brute_force_top_k(queries: list[int], phrases: list[str], settings: mining.CandidateSettings) -> list[np.ndarray]:
    """The exact top-k scores of each query against every other phrase."""
    matrix = _score_matrix([phrases[q] for q in queries], phrases, settings.scorer, settings.n_threads)
    best = []
    for row, q in enumerate(queries):
        scores = matrix[row]
        scores[q] = -1.0
        kept = np.sort(scores[scores >= settings.min_edit_sim])[::-1][: settings.top_k]
        best.append(kept)
    return best


def recall_at_k(found_scores: list[np.ndarray], true_scores: list[np.ndarray]) -> float:
    """Share of the true top-k reached: a found score counts if it is ≥ the true k-th score."""
    hit = total = 0
    for found, true in zip(found_scores, true_scores):
        if len(true) == 0:
            continue
        hit += min(int(np.sum(found >= true[-1] - 1e-6)), len(true))
        total += len(true)
    return hit / total if total else 1.0
