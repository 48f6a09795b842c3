"""The join's candidate search: each name's nearest left names by 3-gram cosine and by the encoder, in this
process or, with `--engine ray`, on Ray actors that each receive the left names' search structures once.
Either engine searches the same blocks of SEARCH_ROWS queries with the same calls (pearl.index.vector_search),
so both find the same pairs."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import scipy.sparse as sp

from pearl.index.vector_search import SEARCH_ROWS, VectorSearch
from pearl.ray_engine import RowActor, column_matrix, matrix_column


class LeftSearch:
    """The left names' transposed 3-gram TF-IDF matrix and the search of their vectors (None without an
    encoder)."""

    def __init__(self, char3_t: sp.csr_matrix, vectors: VectorSearch | None = None):
        self.char3_t, self.vectors = char3_t, vectors

    def pairs(self, rows: np.ndarray, char3: sp.csr_matrix, vectors: np.ndarray | None, k: int,
              threads: int) -> np.ndarray:
        """(row, left row) pairs, unsorted and possibly repeated: per query `rows[i]`, of 3-gram vector
        `char3[i]` and vector `vectors[i]`, its top k left names by 3-gram cosine among those that share a
        3-gram with it (sparse_dot_topn keeps each row's top k of the sparse product), and its k nearest by the
        encoder (left row -1 where HNSW found fewer)."""
        from sparse_dot_topn import sp_matmul_topn

        found = []
        for start in range(0, len(rows), SEARCH_ROWS):
            block = slice(start, start + SEARCH_ROWS)
            top = sp_matmul_topn(char3[block], self.char3_t, top_n=k, n_threads=threads)
            found.append(np.stack([np.repeat(rows[block], np.diff(top.indptr)), top.indices], axis=1))
            if self.vectors is not None:
                nearest = self.vectors.search(vectors[block], k)[1]
                found.append(np.stack([np.repeat(rows[block], k), nearest.ravel()], axis=1))
        return np.concatenate(found) if found else np.zeros((0, 2), dtype=np.int64)


class LeftSearchActor(RowActor):
    """A Ray actor: holds a LeftSearch; a batch of queries in (row, k, the 3-gram vector's grams and weights,
    the vector), their candidate pairs out, searched on `threads` threads."""

    def __init__(self, search: LeftSearch, threads: int):
        if search.vectors is not None:
            import faiss

            faiss.omp_set_num_threads(threads)
        # Ray hands numpy arrays over read-only from its object store, and sparse_dot_topn takes only writable ones
        self.search = LeftSearch(search.char3_t.copy(), search.vectors)
        self.threads = threads

    def process(self, batch: pa.Table) -> pa.Table:
        grams, weights = (batch[name].combine_chunks() for name in ("gram", "weight"))
        indptr = grams.offsets.to_numpy()
        char3 = sp.csr_matrix((weights.flatten().to_numpy(), grams.flatten().to_numpy(), indptr - indptr[0]),
                              shape=(batch.num_rows, self.search.char3_t.shape[0]), copy=True)  # writable, as above
        vectors = column_matrix(batch, "vector") if "vector" in batch.column_names else None
        pairs = self.search.pairs(batch["row"].to_numpy(), char3, vectors, batch["k"][0].as_py(), self.threads)
        return pa.table({"row": pairs[:, 0], "left": pairs[:, 1]})


def queries_table(rows: np.ndarray, char3: sp.csr_matrix, vectors: np.ndarray | None, k: int) -> pa.Table:
    """The queries as LeftSearchActor reads them."""
    char3 = char3.tocsr()
    indptr = pa.array(char3.indptr, pa.int32())
    columns = {"row": pa.array(rows, pa.int64()), "k": pa.array(np.full(len(rows), k), pa.int64()),
               "gram": pa.ListArray.from_arrays(indptr, pa.array(char3.indices, pa.int32())),
               "weight": pa.ListArray.from_arrays(indptr, pa.array(char3.data))}
    if vectors is not None:
        columns["vector"] = matrix_column(vectors)
    return pa.table(columns)
