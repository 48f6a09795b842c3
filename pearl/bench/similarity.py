"""The two similarity backends a benchmark can score with: embeddings, or character 3-grams.

Both answer the same two questions: the similarity of aligned pairs (`rowwise`), and, for each
query, which keys share the top score (`top_ties`, by pearl.scores' tie rule, the one `link` ranks
by), so that ties are credited 1/k and never broken by position.
"""

from __future__ import annotations

import numpy as np

from pearl.embedder import Embedder, pair_cosine
from pearl.index import trigrams
from pearl.scores import tied_with_best


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
            ties = tied_with_best(top)
            if k < len(keys) and ties[-1]:
                # more ties than k: score this query against every key
                tied.append(np.flatnonzero(tied_with_best(vectors[len(queries):] @ vectors[row])))
            else:
                tied.append(found[ties])
        return tied


class TrigramJaccard:
    """The paper's String Distance baseline: Jaccard of character 3-gram sets (pearl.index.trigrams)."""

    name = "jaccard-3gram"

    def rowwise(self, left: list[str], right: list[str]) -> np.ndarray:
        return trigrams.rowwise(left, right)

    def top_ties(self, queries: list[str], keys: list[str]) -> list[np.ndarray]:
        return trigrams.top_ties(queries, keys)
