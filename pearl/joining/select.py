"""A join's scoring and cut chosen per pair of tables, without labels, in AutoFJ's manner.

AutoFJ (Li et al., VLDB 2021) reads the left table as a reference without duplicates. When a right
name joins left name l at distance d, any other left name within 2d of l could be its match as well
(the triangle inequality), so that join is right with probability at most 1 / (1 + their number).
Summed over the joined right rows this estimates the true positives, and averaged the precision,
of any scoring function and cut, with no label. `choose` takes, among the join functions (each
signal alone, and the encoder's cosine mixed with each string signal), the function and cut with
the most estimated true positives whose estimated precision reaches the target.

Every signal is a similarity in [0, 1] (distance = 1 − similarity), scored on candidate pairs only:
each name's `candidates` nearest left names by the encoder (faiss) and by character 3-grams.
- cosine: the encoder's;
- char3: cosine of character 3-gram TF-IDF vectors;
- tokens: cosine of word TF-IDF vectors, the IDF learned from both tables;
- token_set: rapidfuzz's token_set_ratio of the lower-cased, punctuation-stripped names.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pearl.index.encoder import EmbeddingEncoder

STRING_SIGNALS = ("char3", "tokens", "token_set")
MIXES = (0.25, 0.5, 0.75)  # the cosine's share in a mix with one string signal
THRESHOLDS = 50  # candidate cuts per function: quantiles of its best scores


@dataclass(frozen=True)
class Choice:
    """The chosen function and cut, what they are estimated to give, and each right name's best left name."""

    function: str
    weights: dict[str, float]
    threshold: float
    estimated_precision: float
    estimated_true_positives: float
    left_row: np.ndarray  # per right name, the row of its best left name
    score: np.ndarray  # per right name, that pair's score under the chosen function
    reached_target: bool


def join_functions(with_cosine: bool) -> dict[str, dict[str, float]]:
    functions = {signal: {signal: 1.0} for signal in (("cosine",) if with_cosine else ()) + STRING_SIGNALS}
    if with_cosine:
        for signal in STRING_SIGNALS:
            for share in MIXES:
                functions[f"{share:g}·cosine + {1 - share:g}·{signal}"] = {"cosine": share, signal: 1 - share}
    return functions


class Signals:
    """The names' vectors for every signal, and the signals of any pairs of them."""

    def __init__(self, left: list[str], right: list[str], encoder: EmbeddingEncoder | None):
        from sklearn.feature_extraction.text import TfidfVectorizer

        both = left + right
        self.texts = both
        self.n_left = len(left)
        self.char3 = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 3), lowercase=True).fit_transform(both).tocsr()
        self.tokens = TfidfVectorizer(analyzer="word", token_pattern=r"(?u)\b\w+\b", lowercase=True).fit_transform(both).tocsr()
        self.vectors = None if encoder is None else np.ascontiguousarray(encoder.encode(both), dtype=np.float32)

    def nearest_left(self, rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Candidate pairs (row, left row): each row's k nearest left names by the encoder and by 3-grams."""
        from sklearn.neighbors import NearestNeighbors

        k = min(k, self.n_left)
        found = [NearestNeighbors(n_neighbors=k, metric="cosine", algorithm="brute")
                 .fit(self.char3[: self.n_left]).kneighbors(self.char3[rows], return_distance=False)]
        if self.vectors is not None:
            import faiss

            index = faiss.IndexFlatIP(self.vectors.shape[1])
            index.add(self.vectors[: self.n_left])
            found.append(index.search(self.vectors[rows], k)[1])
        pairs = np.unique(np.concatenate([np.stack([np.repeat(rows, k), f.ravel()], axis=1) for f in found]), axis=0)
        return pairs[:, 0], pairs[:, 1]

    def of_pairs(self, a: np.ndarray, b: np.ndarray) -> dict[str, np.ndarray]:
        from rapidfuzz import fuzz, process, utils

        signals = {"char3": _row_dots(self.char3, a, b), "tokens": _row_dots(self.tokens, a, b),
                   "token_set": process.cpdist([self.texts[i] for i in a], [self.texts[i] for i in b],
                                               scorer=fuzz.token_set_ratio, processor=utils.default_process,
                                               workers=-1) / 100.0}
        if self.vectors is not None:
            signals["cosine"] = np.einsum("ij,ij->i", self.vectors[a], self.vectors[b])
        return {name: np.clip(values, 0.0, 1.0) for name, values in signals.items()}


def _row_dots(matrix, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray(matrix[a].multiply(matrix[b]).sum(axis=1)).ravel()


def choose(left: list[str], right: list[str], encoder: EmbeddingEncoder | None, precision_target: float = 0.9,
           candidates: int = 10) -> Choice:
    """The function and cut that AutoFJ's estimate says join the most right names at `precision_target`.
    `encoder` None: the string signals alone. Where no cut reaches the target, the function and cut of the
    highest estimated precision (`reached_target` False)."""
    signals = Signals(left, right, encoder)
    n_left = len(left)
    right_rows = np.arange(n_left, n_left + len(right))
    lr_a, lr_b = signals.nearest_left(right_rows, candidates)
    lr = signals.of_pairs(lr_a, lr_b)
    ll_a, ll_b = signals.nearest_left(np.arange(n_left), candidates + 1)
    own = ll_a != ll_b
    ll_a, ll_b = ll_a[own], ll_b[own]
    ll = signals.of_pairs(ll_a, ll_b)

    best = None
    for name, weights in join_functions(encoder is not None).items():
        lr_score = sum(w * lr[s] for s, w in weights.items())
        ll_score = sum(w * ll[s] for s, w in weights.items())
        left_row, score = _best_per_right(lr_a - n_left, lr_b, lr_score, len(right))
        neighbours = _neighbour_scores(ll_a, ll_score, n_left)[left_row]  # of each right name's left name
        for threshold in np.unique(np.quantile(score, np.linspace(0, 1, THRESHOLDS))):
            joined = score >= threshold
            # another left name within twice the join's distance of its left name: 1 − s' ≤ 2 (1 − t)
            close = (neighbours[joined] >= 1 - 2 * (1 - threshold)).sum(axis=1)
            precision_each = 1.0 / (1.0 + close)
            estimate = (float(precision_each.mean()), float(precision_each.sum()))
            reached = estimate[0] >= precision_target
            key = (reached, estimate[1] if reached else estimate[0], threshold)
            if best is None or key > best[0]:
                best = (key, Choice(name, weights, float(threshold), *estimate, left_row, score, reached))
    return best[1]


def _best_per_right(right: np.ndarray, left: np.ndarray, score: np.ndarray, n_right: int) -> tuple[np.ndarray, np.ndarray]:
    """Each right name's highest-scoring candidate (the lower left row on a tie) and its score."""
    order = np.lexsort((left, -score, right))
    first = order[np.r_[True, right[order][1:] != right[order][:-1]]]
    left_row, best = np.full(n_right, -1), np.zeros(n_right)
    left_row[right[first]], best[right[first]] = left[first], score[first]
    return left_row, best


def _neighbour_scores(left: np.ndarray, score: np.ndarray, n_left: int) -> np.ndarray:
    """Per left name, a row of its candidate neighbours' scores (−inf where it has fewer)."""
    order = np.lexsort((-score, left))
    left, score = left[order], score[order]
    rank = np.arange(len(left)) - np.searchsorted(left, left)  # each pair's place among its left name's
    matrix = np.full((n_left, max(int(rank.max()) + 1 if len(rank) else 1, 1)), -np.inf)
    matrix[left, rank] = score
    return matrix
