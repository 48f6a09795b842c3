"""A join's scoring and cut chosen per pair of tables, without labels, in AutoFJ's manner.

AutoFJ (Li et al., VLDB 2021) reads the left table as a reference without duplicates. When a right
name joins left name l at distance d, any other left name within 2d of l could be its match as well
(the triangle inequality), so that join is right with probability at most 1 / (1 + their number).
Summed over the joined right rows this estimates the true positives, and averaged the precision,
of any scoring function and cut, with no label. `choose` builds, as AutoFJ does, a union of
configurations (a join function and its cut): greedily, the configuration whose right names not yet
joined add the most estimated true positives while the union's estimated precision stays at the
target. Join functions: each signal alone, and the encoder's cosine mixed with each string signal.
Before any scoring, AutoFJ's negative rules (pearl.joining.negative_rules), learned from pairs of left
names, strike the candidate pairs that differ by a token pair that tells two left names apart.

Every signal is a similarity in [0, 1] (distance = 1 − similarity), scored on candidate pairs only:
each name's `candidates` nearest left names by the encoder (faiss) and by character 3-grams.
- cosine: the encoder's;
- char3: cosine of character 3-gram TF-IDF vectors;
- tokens: cosine of word TF-IDF vectors, the IDF learned from both tables;
- token_set: rapidfuzz's token_set_ratio of the lower-cased, punctuation-stripped names;
- ratio: rapidfuzz's normalised Indel similarity of the same.
On the first 25 AutoFJ datasets by name (string signals; benchmarks/join_autofj.py), adding ratio
to the first three raised macro recall 0.589 → 0.608 (precision 0.914 → 0.907); partial_ratio,
token_sort_ratio and WRatio on top added under 0.01 more and cost precision.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from pearl.cores import available_cores
from pearl.joining.negative_rules import NegativeRules, token_sets

if TYPE_CHECKING:  # an annotation only: the encoder's module loads the model libraries
    from pearl.index.encoder import EmbeddingEncoder

STRING_SIGNALS = ("char3", "tokens", "token_set", "ratio")
MIXES = (0.25, 0.5, 0.75)  # the cosine's share in a mix with one string signal
THRESHOLDS = 50  # candidate cuts per function: quantiles of its best scores


@dataclass(frozen=True)
class Choice:
    """The configurations chosen, what they are estimated to give, and each right name's join."""

    configurations: list[tuple[str, float]]  # (join function, cut), in the order they were added
    estimated_precision: float
    estimated_true_positives: float
    left_row: np.ndarray  # per right name, the row of the left name it joins (-1: none)
    confidence: np.ndarray  # per right name, the estimated probability that its join is right (0: none)
    reached_target: bool
    negative_rules: int = 0  # token pairs learned from the left table
    ruled_out: int = 0  # candidate pairs (right name, left name) they struck


@dataclass(frozen=True)
class _Configuration:
    function: str
    threshold: float
    left_row: np.ndarray
    joined: np.ndarray
    precision: np.ndarray  # per right name, 1 / (1 + close left names) where joined, else 0


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
        self.left_char3_t = self.char3[: self.n_left].T.tocsr()  # the right-hand side of every 3-gram search

    def nearest_left(self, rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Candidate pairs (row, left row): each row's k nearest left names by the encoder, and by 3-gram
        cosine among those that share a 3-gram with it (sparse_dot_topn keeps each row's top k of the
        sparse product: the brute-force search scored every pair, 29 of 38 s at 30K × 20K names)."""
        from sparse_dot_topn import sp_matmul_topn

        k = min(k, self.n_left)
        top = sp_matmul_topn(self.char3[rows], self.left_char3_t, top_n=k, n_threads=available_cores())
        found = [np.stack([np.repeat(rows, np.diff(top.indptr)), top.indices], axis=1)]
        if self.vectors is not None:
            import faiss

            index = faiss.IndexFlatIP(self.vectors.shape[1])
            index.add(self.vectors[: self.n_left])
            found.append(np.stack([np.repeat(rows, k), index.search(self.vectors[rows], k)[1].ravel()], axis=1))
        pairs = np.unique(np.concatenate(found), axis=0)
        return pairs[:, 0], pairs[:, 1]

    def of_pairs(self, a: np.ndarray, b: np.ndarray) -> dict[str, np.ndarray]:
        from rapidfuzz import fuzz, process, utils

        first, second = [self.texts[i] for i in a], [self.texts[i] for i in b]
        signals = {"char3": _row_dots(self.char3, a, b), "tokens": _row_dots(self.tokens, a, b)}
        for name, scorer in (("token_set", fuzz.token_set_ratio), ("ratio", fuzz.ratio)):
            signals[name] = process.cpdist(first, second, scorer=scorer, processor=utils.default_process,
                                           workers=-1) / 100.0
        if self.vectors is not None:
            signals["cosine"] = np.einsum("ij,ij->i", self.vectors[a], self.vectors[b])
        return {name: np.clip(values, 0.0, 1.0) for name, values in signals.items()}


def _row_dots(matrix, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray(matrix[a].multiply(matrix[b]).sum(axis=1)).ravel()


def choose(left: list[str], right: list[str], encoder: EmbeddingEncoder | None, precision_target: float = 0.9,
           candidates: int = 10) -> Choice:
    """AutoFJ's union of configurations for `precision_target`. `encoder` None: the string signals alone.
    Where no configuration reaches the target, nothing is joined (`reached_target` False), and
    `estimated_precision` is the highest that one reaches."""
    configurations, rules, ruled_out = _configurations(left, right, encoder, candidates)
    left_row, precision = np.full(len(right), -1), np.zeros(len(right))
    joined, chosen = np.zeros(len(right), dtype=bool), []
    while True:
        best, best_gain = None, 0.0
        true_positives, count = precision.sum(), joined.sum()  # the union's so far
        for c in configurations:
            new = c.joined & ~joined
            gain = float(c.precision[new].sum())
            if gain > best_gain and true_positives + gain >= precision_target * (count + new.sum()):
                best, best_gain = c, gain
        if best is None:
            break
        new = best.joined & ~joined
        left_row[new], precision[new] = best.left_row[new], best.precision[new]
        joined |= new
        chosen.append((best.function, float(best.threshold)))
    if not chosen:
        best = max((float(c.precision[c.joined].mean()) for c in configurations if c.joined.any()), default=0.0)
        return Choice([], best, 0.0, left_row, precision, False, rules, ruled_out)
    return Choice(chosen, float(precision[joined].mean()), float(precision.sum()), left_row, precision, True, rules,
                  ruled_out)


def _configurations(left: list[str], right: list[str], encoder: EmbeddingEncoder | None,
                    candidates: int) -> tuple[list[_Configuration], int, int]:
    """Every join function at each of its candidate cuts, with each right name's join and its estimated precision;
    the number of negative rules learned, and of candidate pairs they struck."""
    signals = Signals(left, right, encoder)
    n_left = len(left)
    ll_a, ll_b = signals.nearest_left(np.arange(n_left), candidates + 1)
    own = ll_a != ll_b
    ll_a, ll_b = ll_a[own], ll_b[own]
    rules = NegativeRules(token_sets(signals.texts), ll_a, ll_b)
    lr_a, lr_b = signals.nearest_left(np.arange(n_left, n_left + len(right)), candidates)
    allowed = rules.allowed(lr_a, lr_b)
    lr_a, lr_b = lr_a[allowed], lr_b[allowed]
    lr = signals.of_pairs(lr_a, lr_b)
    ll = signals.of_pairs(ll_a, ll_b)
    configurations = []
    for name, weights in join_functions(encoder is not None).items():
        left_row, score = _best_per_right(lr_a - n_left, lr_b, sum(w * lr[s] for s, w in weights.items()), len(right))
        # the candidate neighbours' scores of each right name's left name
        neighbours = _neighbour_scores(ll_a, sum(w * ll[s] for s, w in weights.items()), n_left)[left_row]
        for threshold in np.unique(np.quantile(score, np.linspace(0, 1, THRESHOLDS))):
            if threshold <= 0:  # a pair that shares nothing is never a join
                continue
            joined = score >= threshold
            # another left name within twice the join's distance of its left name: 1 − s' ≤ 2 (1 − t)
            close = (neighbours >= 1 - 2 * (1 - threshold)).sum(axis=1)
            configurations.append(_Configuration(name, float(threshold), left_row, joined,
                                                 np.where(joined, 1.0 / (1.0 + close), 0.0)))
    return configurations, len(rules.pairs), int((~allowed).sum())


def _best_per_right(right: np.ndarray, left: np.ndarray, score: np.ndarray, n_right: int) -> tuple[np.ndarray, np.ndarray]:
    """Each right name's highest-scoring candidate (the lower left row on a tie) and its score."""
    order = np.lexsort((left, -score, right))
    first = np.ones(len(order), dtype=bool)  # no candidate at all (nothing shared, or all struck) joins nothing
    first[1:] = right[order][1:] != right[order][:-1]
    first = order[first]
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
