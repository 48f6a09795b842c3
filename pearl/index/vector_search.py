"""A faiss index searched SEARCH_ROWS queries at a time, in this process or, with `--engine ray`, on Ray
actors that each receive the index once.

Either engine makes the same faiss calls on the same blocks of queries, so an exact search sums its inner
products alike, and both find the same neighbours with the same scores."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from pearl.ray_engine import KeptActors, RowActor, column_matrix, matrix_column

SEARCH_ROWS = 4096  # queries per faiss call: its exact search takes them in blocks of this many


class VectorSearch:
    """A faiss index that pickles whole (serialised, with its HNSW search depth), so that Ray stores it once
    for every actor."""

    def __init__(self, index):
        self.index = index

    def __getstate__(self) -> dict:
        import faiss

        depth = self.index.hnsw.efSearch if hasattr(self.index, "hnsw") else None
        return {"index": faiss.serialize_index(self.index), "ef_search": depth}

    def __setstate__(self, state: dict) -> None:
        import faiss

        self.index = faiss.deserialize_index(state["index"])
        if state["ef_search"] is not None:
            self.index.hnsw.efSearch = state["ef_search"]

    def search(self, vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """faiss's (scores, rows) of each vector's k nearest, SEARCH_ROWS vectors a call."""
        found = [self.index.search(np.ascontiguousarray(vectors[start:start + SEARCH_ROWS]), k)
                 for start in range(0, len(vectors), SEARCH_ROWS)]
        if not found:
            return np.zeros((0, k), np.float32), np.zeros((0, k), np.int64)
        return np.concatenate([scores for scores, _ in found]), np.concatenate([rows for _, rows in found])


class VectorSearchActor(RowActor):
    """A Ray actor: holds a VectorSearch; a batch of vectors and k in, their k nearest (scores, rows) out,
    searched on `threads` threads."""

    def __init__(self, search: VectorSearch, threads: int):
        import faiss

        faiss.omp_set_num_threads(threads)
        self.search = search

    def process(self, batch: pa.Table) -> pa.Table:
        k = batch["k"][0].as_py()
        scores, rows = self.search.search(column_matrix(batch, "vector"), k)
        return pa.table({"scores": matrix_column(scores), "rows": matrix_column(rows)})


def search_on_ray(actors: KeptActors, vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """What `VectorSearch.search(vectors, k)` gives, from kept VectorSearchActors (batches of SEARCH_ROWS)."""
    queries = pa.table({"vector": matrix_column(vectors), "k": pa.array(np.full(len(vectors), k), pa.int64())})
    found = list(actors.map(queries))
    if not found:
        return np.zeros((0, k), np.float32), np.zeros((0, k), np.int64)
    return tuple(np.concatenate([column_matrix(out, name, k) for out in found]) for name in ("scores", "rows"))
