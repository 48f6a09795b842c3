"""Jaccard similarity of character 3-gram sets: the `string` encoder's index and the benchmark's
String Distance baseline (pearl.bench.similarity), one implementation for both.

The sets are of the lower-cased, space-padded strings: padding gives one- and two-letter strings
3-grams too. Jaccard has no vector space that an inner-product index could search, so every
query is scored against every name, in blocks.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from pearl.cores import available_cores
from pearl.scores import TIE_TOLERANCE, at_least, rank, tied_with_best

# a block's dense scores stay about 64 MB however many names there are
_BLOCK_CELLS = 2**24
_MAX_BLOCK = 512
# rows of one top-n product in close_pairs: its result, rows × neighbours entries, stays some hundred MB
_PRODUCT_ROWS = 50_000
# a query's top k is found among its 4k + 16 nearest names by cosine: on generated GeoNames forms, 99% of the
# queries' top k (k = 1, 5, 10) are then proven exact without scoring every name
_WIDEN, _MARGIN = 4, 16


def _vectorizer():
    # imported here: scikit-learn takes 2 s to import, and a benchmark reads and checks its files first
    from sklearn.feature_extraction.text import CountVectorizer

    return CountVectorizer(analyzer="char", ngram_range=(3, 3), lowercase=True, binary=True, dtype=np.float32)


def _padded(texts: list[str]) -> list[str]:
    return [f" {text} " for text in texts]


def _sets(*groups: list[str]) -> list[sp.csr_matrix]:
    """One binary 3-gram row per string, over a vocabulary shared by the groups."""
    matrix = _vectorizer().fit_transform(_padded([text for group in groups for text in group])).tocsr()
    bounds = np.cumsum([0] + [len(group) for group in groups])
    return [matrix[bounds[i]:bounds[i + 1]] for i in range(len(groups))]


def _jaccard(intersection: np.ndarray, sizes_a: np.ndarray, sizes_b: np.ndarray) -> np.ndarray:
    union = sizes_a + sizes_b - intersection
    return np.divide(intersection, union, out=np.zeros_like(intersection), where=union > 0)


def _sizes(sets: sp.csr_matrix) -> np.ndarray:
    return np.asarray(sets.sum(axis=1)).ravel()


class NameSets:
    """The 3-gram sets of a list of names, on a vocabulary fitted once, so that any number of query
    blocks are scored against them without refitting (an index keeps one between searches)."""

    def __init__(self, names: list[str]):
        self.vectorizer = _vectorizer()
        self.sets = self.vectorizer.fit_transform(_padded(names)).tocsr()
        self.sizes = _sizes(self.sets)
        self._analyze = self.vectorizer.build_analyzer()
        self._unit_names: sp.csr_matrix | None = None  # normalised and transposed at the first top_k

    def __len__(self) -> int:
        return self.sets.shape[0]

    def blocks(self, queries: list[str]):
        """(first query, Jaccard of a block of queries with every name), block by block."""
        padded = _padded(queries)
        # a query's 3-grams that no name has are in no intersection, but count in its union
        sizes = np.array([len(set(self._analyze(text))) for text in padded], dtype=np.float32)
        step = max(1, min(_MAX_BLOCK, _BLOCK_CELLS // max(len(self), 1)))
        names = self.sets.T.tocsr()
        for start in range(0, len(queries), step):
            block = self.vectorizer.transform(padded[start:start + step])
            yield start, _jaccard((block @ names).toarray(), sizes[start:start + step, None], self.sizes[None, :])

    def close_pairs(self, threshold: float, neighbours: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """(rows, columns, Jaccard) of the pairs of different names whose Jaccard is at least `threshold`, found
        among each name's `neighbours` nearest by the cosine of their binary 3-gram vectors, which is at least their
        Jaccard, so that no such pair is missed unless a name has more than `neighbours` names that close; and how
        many names had that many (sparse_dot_topn's top-n product: memory and time grow with the names, not their
        square)."""
        from sklearn.preprocessing import normalize
        from sparse_dot_topn import sp_matmul_topn

        unit = normalize(self.sets.astype(np.float64))
        right = unit.T.tocsr()
        found, full = [], 0
        for start in range(0, len(self), _PRODUCT_ROWS):  # each product's top n per row, then only the close pairs kept
            # sparse_dot_topn keeps values above its threshold: a hair below the cut, then the exact Jaccard decides
            top = sp_matmul_topn(unit[start:start + _PRODUCT_ROWS], right, top_n=neighbours + 1,
                                 threshold=threshold - 1e-3, n_threads=available_cores())
            full += int((np.diff(top.indptr) > neighbours).sum())
            top = top.tocoo()
            rows, columns = top.row.astype(np.int64) + start, top.col.astype(np.int64)
            other = rows != columns
            rows, columns, cosine = rows[other], columns[other], top.data[other]
            intersection = np.rint(cosine * np.sqrt(self.sizes[rows].astype(np.float64) * self.sizes[columns]))
            jaccard = _jaccard(intersection.astype(np.float32), self.sizes[rows], self.sizes[columns])
            close = at_least(jaccard, threshold)
            found.append((rows[close], columns[close], jaccard[close]))
        rows, columns, jaccard = (np.concatenate(part) for part in zip(*found)) if found else (
            np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32))
        return rows, columns, jaccard, full

    def top_k(self, queries: list[str], k: int) -> tuple[np.ndarray, np.ndarray]:
        """(scores, rows), each (len(queries), min(k, len(names))), best first; ties by row (pearl.scores.rank).

        Exact, and far faster than scoring every name: each query's `wide` nearest names by the cosine c of
        their binary 3-gram vectors (sparse_dot_topn) are scored by Jaccard, which is at most c / (2 - c). So
        when a query's k-th Jaccard is above that bound at the lowest cosine kept, no other name can reach its
        top k; the queries where it is not are scored against every name."""
        k = min(k, len(self))
        scores = np.zeros((len(queries), k), dtype=np.float32)
        rows = np.zeros((len(queries), k), dtype=np.int64)
        if not queries or k == 0:
            return scores, rows
        wide = min(len(self), _WIDEN * k + _MARGIN)
        exact = np.zeros(len(queries), dtype=bool)
        for start in range(0, len(queries), _PRODUCT_ROWS):
            part = slice(start, start + _PRODUCT_ROWS)
            scores[part], rows[part], exact[part] = self._candidates(queries[part], k, wide)
        rest = np.flatnonzero(~exact)
        for start, block in self.blocks([queries[i] for i in rest]):
            ranked = rank(block, k)
            rows[rest[start:start + len(block)]] = ranked
            scores[rest[start:start + len(block)]] = np.take_along_axis(block, ranked, axis=1)
        return scores, rows

    def _candidates(self, queries: list[str], k: int, wide: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each query's top k among its `wide` nearest names by 3-gram cosine, and whether that top k is exact."""
        from sklearn.preprocessing import normalize
        from sparse_dot_topn import sp_matmul_topn

        if self._unit_names is None:
            self._unit_names = normalize(self.sets).T.tocsr()
        padded = _padded(queries)
        sets = self.vectorizer.transform(padded).tocsr()
        sizes = np.array([len(set(self._analyze(text))) for text in padded], dtype=np.float32)
        found = sp_matmul_topn(normalize(sets), self._unit_names, top_n=wide, n_threads=available_cores()).tocsr()
        counts = np.diff(found.indptr)
        query = np.repeat(np.arange(len(queries)), counts)
        place = np.arange(len(found.indices)) - np.repeat(found.indptr[:-1], counts)
        cosine = np.full((len(queries), wide), -np.inf, dtype=np.float32)
        names = np.full((len(queries), wide), len(self), dtype=np.int64)  # past every row: an empty place ranks last
        cosine[query, place] = found.data
        names[query, place] = found.indices
        # the cosine of the vocabulary's 3-grams gives the intersection back; a query's 3-grams that no name has
        # count in its union, so its Jaccard is below that cosine
        in_vocab = np.diff(sets.indptr).astype(np.float32)
        intersection = np.rint(found.data * np.sqrt(in_vocab[query] * self.sizes[found.indices]))
        jaccard = np.full((len(queries), wide), -np.inf, dtype=np.float32)
        jaccard[query, place] = _jaccard(intersection.astype(np.float32), sizes[query], self.sizes[found.indices])
        by_row = np.argsort(names, axis=1, kind="stable")  # rank breaks ties by column order: the names' row order
        jaccard, names, cosine = (np.take_along_axis(m, by_row, axis=1) for m in (jaccard, names, cosine))
        ranked = rank(jaccard, k)
        top = np.take_along_axis(jaccard, ranked, axis=1)
        # a name left out has a cosine c of at most the lowest kept (0 when the product found fewer than `wide`),
        # and a Jaccard of at most c / (2 - c), the most I / (a + b - I) reaches for I = c·sqrt(ab), at a = b
        lowest = np.where(counts == wide, np.min(np.where(np.isfinite(cosine), cosine, np.inf), axis=1), 0.0)
        exact = (counts >= k) & (top[:, -1] > lowest / (2 - lowest) + TIE_TOLERANCE)
        rows = np.take_along_axis(names, ranked, axis=1)
        # a query sharing a 3-gram with fewer than k names (another script, say): every other name scores 0, and
        # the first of them by row fill its places, as ranking every name would
        for i in np.flatnonzero(counts < k):
            shared = set(rows[i, :counts[i]].tolist())
            rows[i, counts[i]:] = [r for r in range(k + counts[i]) if r not in shared][:k - counts[i]]
            top[i, counts[i]:] = 0.0
            exact[i] = True
        return top, rows, exact


def jaccard_matrix(queries: list[str], names: list[str]) -> np.ndarray:
    return np.vstack([block for _, block in NameSets(names).blocks(queries)])


def rowwise(left: list[str], right: list[str]) -> np.ndarray:
    """The Jaccard of each aligned pair."""
    a, b = _sets(left, right)
    return _jaccard(np.asarray(a.multiply(b).sum(axis=1)).ravel(), _sizes(a), _sizes(b))


def top_ties(queries: list[str], names: list[str]) -> list[np.ndarray]:
    """For each query, the rows of the names tied with its best score (pearl.scores)."""
    return [np.flatnonzero(tied) for _, block in NameSets(names).blocks(queries) for tied in tied_with_best(block)]
