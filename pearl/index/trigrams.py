"""Exhaustive top-k search by character 3-gram Jaccard, the `string` encoder's index.

The same similarity as the benchmark's String Distance baseline (pearl.bench.similarity):
sets of 3-grams of the lower-cased, space-padded strings. Jaccard has no vector space that an
inner-product index could search, so every query is scored against every name, in blocks.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import CountVectorizer

_BLOCK = 512


def _sets(queries: list[str], names: list[str]) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    vectorizer = CountVectorizer(analyzer="char", ngram_range=(3, 3), lowercase=True, binary=True, dtype=np.float32)
    matrix = vectorizer.fit_transform([f" {t} " for t in queries + names]).tocsr()
    return matrix[: len(queries)], matrix[len(queries):]


def jaccard_matrix(queries: list[str], names: list[str]) -> np.ndarray:
    q, n = _sets(queries, names)
    return _jaccard(q, n)


def _jaccard(q: sp.csr_matrix, n: sp.csr_matrix) -> np.ndarray:
    intersection = (q @ n.T).toarray()
    union = np.asarray(q.sum(axis=1)) + np.asarray(n.sum(axis=1)).T - intersection
    return np.divide(intersection, union, out=np.zeros_like(intersection), where=union > 0)


def top_k(queries: list[str], names: list[str], k: int) -> tuple[np.ndarray, np.ndarray]:
    """(scores, rows), each (len(queries), min(k, len(names))), best first; ties by row."""
    q, n = _sets(queries, names)
    k = min(k, len(names))
    scores = np.zeros((len(queries), k), dtype=np.float32)
    rows = np.zeros((len(queries), k), dtype=np.int64)
    for start in range(0, len(queries), _BLOCK):
        block = _jaccard(q[start:start + _BLOCK], n)
        order = np.argsort(-block, axis=1, kind="stable")[:, :k]  # stable: ties keep row order
        rows[start:start + len(block)] = order
        scores[start:start + len(block)] = np.take_along_axis(block, order, axis=1)
    return scores, rows
