"""Jaccard similarity of character 3-gram sets: the `string` encoder's index and the benchmark's
String Distance baseline (pearl.bench.similarity), one implementation for both.

The sets are of the lower-cased, space-padded strings: padding gives one- and two-letter strings
3-grams too. Jaccard has no vector space that an inner-product index could search, so every
query is scored against every name, in blocks.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from pearl.scores import rank, tied_with_best

_BLOCK = 512


def _sets(*groups: list[str]) -> list[sp.csr_matrix]:
    """One binary 3-gram row per string, over a vocabulary shared by the groups."""
    # imported here: scikit-learn takes 2 s to import, and a benchmark reads and checks its files first
    from sklearn.feature_extraction.text import CountVectorizer

    vectorizer = CountVectorizer(analyzer="char", ngram_range=(3, 3), lowercase=True, binary=True, dtype=np.float32)
    matrix = vectorizer.fit_transform([f" {text} " for group in groups for text in group]).tocsr()
    bounds = np.cumsum([0] + [len(group) for group in groups])
    return [matrix[bounds[i]:bounds[i + 1]] for i in range(len(groups))]


def _jaccard(intersection: np.ndarray, sizes_a: np.ndarray, sizes_b: np.ndarray) -> np.ndarray:
    union = sizes_a + sizes_b - intersection
    return np.divide(intersection, union, out=np.zeros_like(intersection), where=union > 0)


def _sizes(sets: sp.csr_matrix) -> np.ndarray:
    return np.asarray(sets.sum(axis=1)).ravel()


def _blocks(queries: list[str], names: list[str]):
    """(first query, Jaccard of a block of queries with every name), block by block."""
    q, n = _sets(queries, names)
    q_sizes, n_sizes = _sizes(q), _sizes(n)
    for start in range(0, len(queries), _BLOCK):
        block = q[start:start + _BLOCK]
        yield start, _jaccard((block @ n.T).toarray(), q_sizes[start:start + _BLOCK, None], n_sizes[None, :])


def jaccard_matrix(queries: list[str], names: list[str]) -> np.ndarray:
    return np.vstack([block for _, block in _blocks(queries, names)])


def rowwise(left: list[str], right: list[str]) -> np.ndarray:
    """The Jaccard of each aligned pair."""
    a, b = _sets(left, right)
    return _jaccard(np.asarray(a.multiply(b).sum(axis=1)).ravel(), _sizes(a), _sizes(b))


def top_ties(queries: list[str], names: list[str]) -> list[np.ndarray]:
    """For each query, the rows of the names tied with its best score (pearl.scores)."""
    return [np.flatnonzero(tied) for _, block in _blocks(queries, names) for tied in tied_with_best(block)]


def top_k(queries: list[str], names: list[str], k: int) -> tuple[np.ndarray, np.ndarray]:
    """(scores, rows), each (len(queries), min(k, len(names))), best first; ties by row (pearl.scores.rank)."""
    k = min(k, len(names))
    scores = np.zeros((len(queries), k), dtype=np.float32)
    rows = np.zeros((len(queries), k), dtype=np.int64)
    for start, block in _blocks(queries, names):
        ranked = rank(block, k)
        rows[start:start + len(block)] = ranked
        scores[start:start + len(block)] = np.take_along_axis(block, ranked, axis=1)
    return scores, rows
