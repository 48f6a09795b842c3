"""Row-wise arrays of the left names, then the right ones, indexed as one without being stacked: the join swaps
its right names a chunk at a time, and stacking copied every left row per chunk (half a GB of vectors alone at
190K left names)."""

from __future__ import annotations

import numpy as np
from scipy import sparse


class StackedRows:
    """`left`'s rows, then `right`'s (numpy arrays or scipy sparse matrices of the same width), as one array that
    rows are taken from: `stacked[rows]`."""

    def __init__(self, left, right):
        self.left, self.right, self.n_left = left, right, left.shape[0]
        self.shape = (self.n_left + right.shape[0],) + left.shape[1:]

    def __getitem__(self, rows) -> np.ndarray | sparse.csr_matrix:
        rows = np.arange(self.shape[0])[rows] if isinstance(rows, slice) else np.asarray(rows)
        on_left = rows < self.n_left
        if on_left.all():
            return self.left[rows]
        if not on_left.any():
            return self.right[rows - self.n_left]
        parts = [self.left[rows[on_left]], self.right[rows[~on_left] - self.n_left]]
        order = np.empty(len(rows), dtype=np.int64)  # each row's place among the parts, left ones first
        order[on_left] = np.arange(on_left.sum())
        order[~on_left] = on_left.sum() + np.arange((~on_left).sum())
        together = sparse.vstack(parts).tocsr() if sparse.issparse(self.left) else np.concatenate(parts)
        return together[order]
