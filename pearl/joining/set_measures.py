"""AutoFJ's set similarities of two names, for the join's chooser (pearl.joining.select).

Each name is a set of word stems (the negative rules' tokens) or of character 3-grams, each element
weighted 1 or by its IDF over both tables. Of A and B, with w(S) the summed weight of a set:
- jaccard: w(A ∩ B) / w(A ∪ B);
- overlap: w(A ∩ B) / min(w(A), w(B)), AutoFJ's "maxinc": a name whose words all occur in the other
  ("Ohio 2008" in "2008 presidential election in Ohio") scores 1;
- nested_jaccard: the jaccard where one set holds the other, else 0 (AutoFJ's "containJaccard").
AutoFJ (Li et al., VLDB 2021) searches these with more preprocessings and distances (its Dice
variants order pairs as jaccard does; cosines are the chooser's TF-IDF signals); these are the ones
the chooser lacked, and with AutoFJ's greedy search they raised its recall on the first 25 AutoFJ
datasets by name (docs/measurements.md#join-wider-space).
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from pearl.joining.stacked import StackedRows

MEASURES = ("jaccard", "overlap", "nested_jaccard")
SETS = ("words", "3-grams")
WEIGHTS = ("uniform", "idf")
SIGNALS = tuple(f"{measure}({elements}, {weight})" for measure in MEASURES for elements in SETS for weight in WEIGHTS)


class SetMeasures:
    """The similarities of any pairs of names, given their sets as 0/1 sparse matrices with one row per name."""

    def __init__(self, words, grams, names_with: dict[str, np.ndarray], n_names: int):
        """`names_with`: per set kind ("words", "3-grams"), how many of the `n_names` names of both tables hold each
        element (the IDF's counts, from both whole tables even where these rows are a part of them)."""
        self.sets = {"words": sparse.csr_matrix(words, dtype=np.float64),
                     "3-grams": sparse.csr_matrix(grams, dtype=np.float64)}
        self.weighted, self.totals = {}, {}
        for elements, matrix in self.sets.items():
            idf = np.log((1 + n_names) / (1 + names_with[elements].astype(np.float64))) + 1  # sklearn's smoothed IDF
            for weight, weighted in (("uniform", matrix), ("idf", (matrix @ sparse.diags(idf)).tocsr())):
                self.weighted[elements, weight], self.totals[elements, weight] = weighted, _row_sums(weighted)

    @classmethod
    def stacked(cls, first: SetMeasures, second: SetMeasures) -> SetMeasures:
        """The rows of `first`, then those of `second`, without copying either."""
        both = cls.__new__(cls)
        for part in ("sets", "weighted", "totals"):
            mine, theirs = getattr(first, part), getattr(second, part)
            setattr(both, part, {key: StackedRows(mine[key], theirs[key]) for key in mine})
        return both

    def of_pairs(self, a: np.ndarray, b: np.ndarray) -> dict[str, np.ndarray]:
        signals = {}
        for elements, matrix in self.sets.items():
            in_b = matrix[b]
            common = _row_sums(matrix[a].multiply(in_b))  # the uniform weight's shared total too
            sizes = self.totals[elements, "uniform"]
            nested = common >= np.minimum(sizes[a], sizes[b])
            for weight in WEIGHTS:
                total = self.totals[elements, weight]
                shared = common if weight == "uniform" else _row_sums(self.weighted[elements, weight][a].multiply(in_b))
                jaccard = shared / np.maximum(total[a] + total[b] - shared, 1e-12)
                signals[f"jaccard({elements}, {weight})"] = jaccard
                signals[f"overlap({elements}, {weight})"] = shared / np.maximum(np.minimum(total[a], total[b]), 1e-12)
                signals[f"nested_jaccard({elements}, {weight})"] = np.where(nested & (shared > 0), jaccard, 0.0)
        return signals


def _row_sums(matrix) -> np.ndarray:
    return np.asarray(matrix.sum(axis=1)).ravel()
