"""A join's scoring and cut chosen per pair of tables, without labels, in AutoFJ's manner.

AutoFJ (Li et al., VLDB 2021) reads the left table as a reference without duplicates. When a right
name joins left name l at distance d, any other left name within 2d of l could be its match as well
(the triangle inequality), so that join is right with probability at most 1 / (1 + their number).
Summed over the joined right rows this estimates the true positives, and averaged the precision,
of any scoring function and cut, with no label. `choose` builds AutoFJ's union of configurations (a
join function and its cut) with AutoFJ's greedy search: the configuration that gives the union the
most estimated true per false positives first, while the union's estimated precision holds the
target. Join functions: each signal alone, and the encoder's cosine mixed with each string signal.
Before any scoring, AutoFJ's negative rules (pearl.joining.negative_rules), learned from pairs of left
names, strike the candidate pairs that differ by a token pair that tells two left names apart.

Every signal is a similarity in [0, 1] (distance = 1 − similarity), scored on candidate pairs only:
each name's `candidates` nearest left names by the encoder (faiss) and by character 3-grams.
- cosine: the encoder's;
- char3: cosine of character 3-gram TF-IDF vectors;
- tokens: cosine of word TF-IDF vectors, the IDF learned from both tables;
- token_set: rapidfuzz's token_set_ratio of the lower-cased, punctuation-stripped names;
- ratio: rapidfuzz's normalised Indel similarity of the same;
- jaro_winkler: rapidfuzz's Jaro-Winkler similarity of the same;
- AutoFJ's set similarities (pearl.joining.set_measures): jaccard, overlap and nested jaccard of the
  word stems and of the 3-grams, each uniform or IDF-weighted.
On the first 25 AutoFJ datasets by name (benchmarks/join_autofj.py), adding ratio to the first three
raised macro recall 0.589 → 0.608 (string signals; precision 0.914 → 0.907). AutoFJ's greedy search
and the last two rows, which replaced a search for the most estimated true positives at the target
over the first five, raised it 0.599 → 0.630 with string signals and 0.640 → 0.680 with
all-MiniLM-L6-v2, for 0.011 and 0.008 of precision (docs/measurements.md#join-wider-space).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from pearl.cores import available_cores
from pearl.joining import set_measures
from pearl.joining.negative_rules import NegativeRules, token_sets

if TYPE_CHECKING:  # an annotation only: the encoder's module loads the model libraries
    from pearl.index.encoder import EmbeddingEncoder

STRING_SIGNALS = ("char3", "tokens", "token_set", "ratio", "jaro_winkler") + set_measures.SIGNALS
MIXES = (0.25, 0.5, 0.75)  # the cosine's share in a mix with one string signal
THRESHOLDS = 50  # candidate cuts per function: quantiles of its best scores
PATIENCE = 0.05  # AutoFJ's: the union grows until its estimated precision falls this far below the target


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
    joined_by: dict[str, int] = field(default_factory=dict)  # right names per join function that gave their join


class _Union(NamedTuple):
    configurations: list[tuple[str, float]]
    left_row: np.ndarray
    precision: np.ndarray  # per right name, its join's estimated precision (0: none)
    estimate: float  # the union's estimated precision
    source: np.ndarray  # per right name, the configuration that gave its join (-1: none)


@dataclass(frozen=True)
class _Configurations:
    """Every join function at each of its cuts. Per function, each right name's best left row; per configuration,
    its function and each right name's estimated precision, 1 / (1 + close left names) where it joins, else 0."""

    functions: list[str]
    left_row: np.ndarray  # (functions, right names)
    function: np.ndarray  # (configurations,): the row of `functions`
    threshold: np.ndarray  # (configurations,)
    precision: np.ndarray  # (configurations, right names), float32


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
        from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

        both = left + right
        self.texts = both
        self.n_left = len(left)
        self.char3 = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 3), lowercase=True).fit_transform(both).tocsr()
        self.tokens = TfidfVectorizer(analyzer="word", token_pattern=r"(?u)\b\w+\b", lowercase=True).fit_transform(both).tocsr()
        self.vectors = None if encoder is None else np.ascontiguousarray(encoder.encode(both), dtype=np.float32)
        self.left_char3_t = self.char3[: self.n_left].T.tocsr()  # the right-hand side of every 3-gram search
        self.stems = token_sets(both)
        self.sets = set_measures.SetMeasures(CountVectorizer(analyzer=sorted, binary=True).fit_transform(self.stems),
                                             self.char3 > 0)

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
        from rapidfuzz.distance import JaroWinkler

        first, second = [self.texts[i] for i in a], [self.texts[i] for i in b]
        signals = {"char3": _row_dots(self.char3, a, b), "tokens": _row_dots(self.tokens, a, b),
                   **self.sets.of_pairs(a, b)}
        for name, scorer, scale in (("token_set", fuzz.token_set_ratio, 100.0), ("ratio", fuzz.ratio, 100.0),
                                    ("jaro_winkler", JaroWinkler.normalized_similarity, 1.0)):
            signals[name] = process.cpdist(first, second, scorer=scorer, processor=utils.default_process,
                                           workers=-1) / scale
        if self.vectors is not None:
            signals["cosine"] = np.einsum("ij,ij->i", self.vectors[a], self.vectors[b])
        return {name: np.clip(values, 0.0, 1.0) for name, values in signals.items()}


def _row_dots(matrix, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray(matrix[a].multiply(matrix[b]).sum(axis=1)).ravel()


def choose(left: list[str], right: list[str], encoder: EmbeddingEncoder | None, precision_target: float = 0.9,
           candidates: int = 10) -> Choice:
    """AutoFJ's union of configurations for `precision_target`. `encoder` None: the string signals alone.
    Where no union reaches the target, nothing is joined (`reached_target` False), and `estimated_precision`
    is the highest that one configuration reaches."""
    configurations, rules, ruled_out = _configurations(left, right, encoder, candidates)
    union = _greedy_union(configurations, precision_target)
    if not union.configurations:
        joined = configurations.precision > 0
        means = configurations.precision.sum(axis=1) / np.maximum(joined.sum(axis=1), 1)
        best = float(means.max()) if len(means) else 0.0
        return Choice([], best, 0.0, np.full(len(right), -1), np.zeros(len(right)), False, rules, ruled_out)
    sources = configurations.function[union.source[union.source >= 0]]
    joined_by = {configurations.functions[f]: n for f, n in Counter(sources.tolist()).most_common()}
    return Choice(union.configurations, union.estimate, float(union.precision.sum()), union.left_row, union.precision,
                  True, rules, ruled_out, joined_by)


def _greedy_union(configurations: _Configurations, target: float) -> _Union:
    """AutoFJ's greedy search: add the configuration that gives the union the most estimated true per false
    positives, until its estimated precision is PATIENCE below `target`; keep the largest union at the target.
    A right name that two configurations join to different left names keeps the likelier join, but both count
    as joins, so that conflicting configurations pay for it. The gains are updated on the right names the
    added configuration touched only."""
    precision, function, left_rows = configurations.precision, configurations.function, configurations.left_row
    n_right = precision.shape[1]
    left_row, best, source = np.full(n_right, -1), np.zeros(n_right, dtype=np.float32), np.full(n_right, -1)
    new_pair = np.ones(left_rows.shape, dtype=bool)  # per function and right name: its join not counted yet

    def gains(columns):
        true = np.maximum(precision[:, columns] - best[columns], 0).sum(axis=1, dtype=np.float64)
        joins = ((precision[:, columns] > 0) & new_pair[:, columns][function]).sum(axis=1)
        return true, joins

    gain_true, gain_joins = gains(slice(None))
    true_positives, joins, used, chosen = 0.0, 0, np.zeros(len(function), dtype=bool), []
    kept = _Union([], left_row.copy(), best.astype(np.float64), 0.0, source.copy())
    while True:
        open_ = (gain_joins > 0) & ~used
        if not open_.any():
            break
        total_true, total_joins = true_positives + gain_true, joins + gain_joins
        profit = np.where(open_, total_true / np.maximum(total_joins - total_true, 1e-9), -np.inf)
        c = int(np.argmax(profit))
        estimate = total_true[c] / total_joins[c]
        columns = np.flatnonzero(precision[c] > 0)
        before = gains(columns)
        true_positives, joins = float(total_true[c]), int(total_joins[c])
        row, p = left_rows[function[c], columns], precision[c, columns]
        new_pair[:, columns] &= left_rows[:, columns] != row
        likelier = p > best[columns]
        left_row[columns[likelier]], best[columns[likelier]] = row[likelier], p[likelier]
        source[columns[likelier]] = c
        after = gains(columns)
        gain_true += after[0] - before[0]
        gain_joins += after[1] - before[1]
        used[c] = True
        chosen.append((configurations.functions[function[c]], float(configurations.threshold[c])))
        if estimate >= target:
            kept = _Union(list(chosen), left_row.copy(), best.astype(np.float64), float(estimate), source.copy())
        elif estimate < target - PATIENCE:
            break
    return kept


def _configurations(left: list[str], right: list[str], encoder: EmbeddingEncoder | None, candidates: int,
                    functions: dict[str, dict[str, float]] | None = None) -> tuple[_Configurations, int, int]:
    """Every join function (default: `join_functions`) at each of its candidate cuts, with each right name's join
    and its estimated precision; the number of negative rules learned, and of candidate pairs they struck."""
    signals = Signals(left, right, encoder)
    n_left = len(left)
    ll_a, ll_b = signals.nearest_left(np.arange(n_left), candidates + 1)
    own = ll_a != ll_b
    ll_a, ll_b = ll_a[own], ll_b[own]
    rules = NegativeRules(signals.stems, ll_a, ll_b)
    lr_a, lr_b = signals.nearest_left(np.arange(n_left, n_left + len(right)), candidates)
    allowed = rules.allowed(lr_a, lr_b)
    lr_a, lr_b = lr_a[allowed], lr_b[allowed]
    lr = signals.of_pairs(lr_a, lr_b)
    ll = signals.of_pairs(ll_a, ll_b)
    names, left_rows, function, thresholds, precision = [], [], [], [], []
    for name, weights in (functions or join_functions(encoder is not None)).items():
        left_row, score = _best_per_right(lr_a - n_left, lr_b, sum(w * lr[s] for s, w in weights.items()), len(right))
        # the candidate neighbours' scores of each right name's left name
        neighbours = _neighbour_scores(ll_a, sum(w * ll[s] for s, w in weights.items()), n_left)[left_row]
        cuts = [t for t in np.unique(np.quantile(score, np.linspace(0, 1, THRESHOLDS))) if t > 0]  # 0: shares nothing
        for threshold in cuts:
            # another left name within twice the join's distance of its left name: 1 − s' ≤ 2 (1 − t)
            close = (neighbours >= 1 - 2 * (1 - threshold)).sum(axis=1)
            precision.append(np.where(score >= threshold, 1.0 / (1.0 + close), 0.0).astype(np.float32))
        function += [len(names)] * len(cuts)
        thresholds += cuts
        names.append(name)
        left_rows.append(left_row)
    configurations = _Configurations(names, np.array(left_rows), np.array(function, dtype=np.int64),
                                     np.array(thresholds), np.array(precision).reshape(len(thresholds), len(right)))
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
