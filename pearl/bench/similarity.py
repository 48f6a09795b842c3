"""The two similarity backends a benchmark can score with: embeddings, or character 3-grams.

Both answer the same two questions: the similarity of aligned pairs (`rowwise`), and, for each
query, which keys share the top score (`top_ties`), so that ties are credited 1/k and never
broken by position.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import CountVectorizer

from pearl.embedder import Embedder, pair_cosine

# Scores within this distance of the best count as tied (float32 cosine noise is ~1e-7).
TIE_TOLERANCE = 1e-6
_BLOCK = 1024


def _ties(scores: np.ndarray) -> np.ndarray:
    return np.flatnonzero(scores >= scores.max() - TIE_TOLERANCE)


class EmbeddingSimilarity:
    name = "cosine"

    def __init__(self, embedder: Embedder):
        self.embedder = embedder

    def rowwise(self, left: list[str], right: list[str]) -> np.ndarray:
        return pair_cosine(self.embedder, left, right)

    def top_ties(self, queries: list[str], keys: list[str]) -> list[np.ndarray]:
        """Exact inner-product search (faiss IndexFlatIP on normalised vectors)."""
        import faiss

        vectors = self.embedder.embed(queries + keys)
        index = faiss.IndexFlatIP(vectors.shape[1])
        index.add(np.ascontiguousarray(vectors[len(queries):]))
        k = min(16, len(keys))
        scores, ids = index.search(np.ascontiguousarray(vectors[: len(queries)]), k)
        tied = []
        for row, (top, found) in enumerate(zip(scores, ids)):
            if k < len(keys) and top[-1] >= top[0] - TIE_TOLERANCE:
                # more ties than k: score this query against every key
                tied.append(_ties(vectors[len(queries):] @ vectors[row]))
            else:
                tied.append(found[top >= top[0] - TIE_TOLERANCE])
        return tied


class TrigramJaccard:
    """Jaccard similarity of the sets of character 3-grams of the lower-cased, space-padded strings.

    The paper's String Distance baseline. Padding gives one- and two-letter strings 3-grams too.
    """

    name = "jaccard-3gram"

    def __init__(self) -> None:
        self.vectorizer = CountVectorizer(
            analyzer="char", ngram_range=(3, 3), lowercase=True, binary=True, dtype=np.float32,
        )

    def _sets(self, *groups: list[str]) -> list[sp.csr_matrix]:
        padded = [[f" {text} " for text in group] for group in groups]
        matrix = self.vectorizer.fit_transform([text for group in padded for text in group]).tocsr()
        bounds = np.cumsum([0] + [len(group) for group in groups])
        return [matrix[bounds[i]:bounds[i + 1]] for i in range(len(groups))]

    @staticmethod
    def _jaccard(a: sp.csr_matrix, b: sp.csr_matrix) -> np.ndarray:
        intersection = (a @ b.T).toarray()
        sizes_a = np.asarray(a.sum(axis=1)).ravel()[:, None]
        sizes_b = np.asarray(b.sum(axis=1)).ravel()[None, :]
        union = sizes_a + sizes_b - intersection
        return np.divide(intersection, union, out=np.zeros_like(intersection), where=union > 0)

    def rowwise(self, left: list[str], right: list[str]) -> np.ndarray:
        a, b = self._sets(left, right)
        intersection = np.asarray(a.multiply(b).sum(axis=1)).ravel()
        union = np.asarray(a.sum(axis=1)).ravel() + np.asarray(b.sum(axis=1)).ravel() - intersection
        return np.divide(intersection, union, out=np.zeros_like(intersection), where=union > 0)

    def top_ties(self, queries: list[str], keys: list[str]) -> list[np.ndarray]:
        q, k = self._sets(queries, keys)
        tied = []
        for start in range(0, q.shape[0], _BLOCK):
            for scores in self._jaccard(q[start:start + _BLOCK], k):
                tied.append(_ties(scores))
        return tied
