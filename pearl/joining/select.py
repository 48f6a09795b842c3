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
each name's `candidates` nearest left names by the encoder (faiss) and by character 3-grams. The string
signals read letters of other scripts in Latin letters (pearl.latin); the encoder reads the names as written.
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

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from tqdm import tqdm

from pearl.cores import available_cores
from pearl.index.vector_search import SEARCH_ROWS, VectorSearch
from pearl.joining import set_measures
from pearl.joining.left_search import LeftSearch, LeftSearchActor, queries_table
from pearl.joining.negative_rules import NegativeRules, token_sets
from pearl.joining.stacked import StackedRows
from pearl.latin import latin_all

if TYPE_CHECKING:  # an annotation only: the encoder's module loads the model libraries
    from pearl.index.encoder import EmbeddingEncoder

STRING_SIGNALS = ("char3", "tokens", "token_set", "ratio", "jaro_winkler") + set_measures.SIGNALS
MIXES = (0.25, 0.5, 0.75)  # the cosine's share in a mix with one string signal
THRESHOLDS = 50  # candidate cuts per function: quantiles of its best scores
PATIENCE = 0.05  # AutoFJ's: the union grows until its estimated precision falls this far below the target
SAMPLE = 20_000  # right names the union is chosen on; more are joined by applying it (see choose)
SAMPLE_SEED = 0
CHUNK = 20_000  # right names scored at once when a union chosen on a sample is applied
# The left index's HNSW search depth (`pearl index`'s is 128): every candidate is rescored exactly, and the 3-gram
# search adds its own, so a shallower search kept the design set's joins while halving the search of 1M names
# (docs/measurements.md#join-ef-search).
EF_SEARCH = 64


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
    sample: int = 0  # right names the union was chosen on
    encode_seconds: float = 0.0  # of the encoder, within the choice and the join


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


class Vocabulary:
    """What the signals learn from both whole tables: the 3-gram and word TF-IDF vectorizers, the stem vocabulary
    and, for the set measures' IDF, how many names hold each stem and 3-gram. Fitted on every name, so that a
    right name's signals are the same whether the choice reads it or the join applies to it."""

    def __init__(self, names: list[str], keep: bool = False):
        """`keep`: also keep the names' features as fitting computes them (`fitted`). sklearn's `transform` sums
        a row's weights in another order, which moved two of the 50 AutoFJ joins by a last bit."""
        from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

        names = latin_all(names)
        self.char3 = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 3), lowercase=True)
        self.tokens = TfidfVectorizer(analyzer="word", token_pattern=r"(?u)\b\w+\b", lowercase=True)
        self.stems = CountVectorizer(analyzer=sorted, binary=True)
        stems = token_sets(names)
        fitted = {"char3": self.char3.fit_transform(names).tocsr(), "tokens": self.tokens.fit_transform(names).tocsr(),
                  "words": self.stems.fit_transform(stems).tocsr(), "stems": stems}
        self.names_with = {"3-grams": fitted["char3"].getnnz(axis=0), "words": fitted["words"].getnnz(axis=0)}
        self.n_names = len(names)
        self.fitted = fitted if keep else None

    def features(self, names: list[str], rows: slice | None) -> dict:
        """The 3-gram and word TF-IDF vectors, the stems and their 0/1 vectors of `names`: the fitted names' `rows`
        where those were kept."""
        if self.fitted is not None and rows is not None:
            return {name: part[rows] for name, part in self.fitted.items()}
        stems = token_sets(names)
        return {"char3": self.char3.transform(names).tocsr(), "tokens": self.tokens.transform(names).tocsr(),
                "stems": stems, "words": self.stems.transform(stems).tocsr()}


class Signals:
    """The names' vectors for every signal, and the signals of any pairs of them. Rows are the left names, then
    the right ones; `set_right` swaps the right names, keeping the left side's vectors and search structures."""

    def __init__(self, left: list[str], right: list[str], encoder: EmbeddingEncoder | None,
                 vocabulary: Vocabulary | None = None):
        self.vocabulary = vocabulary or Vocabulary(left + right, keep=True)
        self.encoder = encoder
        self.encode_seconds = 0.0
        self.n_left = len(left)
        vectors = self._encode(left + right)  # in one call, as the vectors of a choice without a sample always were
        self._left = self._side(left, None if vectors is None else vectors[: self.n_left], slice(0, self.n_left))
        self._search: LeftSearch | None = None
        self._actors = None  # the Ray actors that search, with the encoder on Ray
        self._set_right(right, None if vectors is None else vectors[self.n_left:], slice(self.n_left, None))

    def _encode(self, names: list[str]) -> np.ndarray | None:
        if self.encoder is None:
            return None
        started = time.perf_counter()
        vectors = np.ascontiguousarray(self.encoder.encode(names), dtype=np.float32)
        self.encode_seconds += time.perf_counter() - started
        return vectors

    def _side(self, names: list[str], vectors: np.ndarray | None, fitted_rows: slice | None) -> dict:
        names = latin_all(names)  # the string signals' (the encoder read the names as written)
        features = self.vocabulary.features(names, fitted_rows)
        sets = set_measures.SetMeasures(features["words"], features["char3"] > 0, self.vocabulary.names_with,
                                        self.vocabulary.n_names)
        return {"texts": names, "vectors": vectors, "sets": sets, **features}

    def set_right(self, right: list[str]) -> None:
        """Swap in these right names, which the vocabulary was fitted on but did not keep."""
        self._set_right(right, self._encode(right), None)

    def _set_right(self, right: list[str], vectors: np.ndarray | None, fitted_rows: slice | None) -> None:
        side = self._side(right, vectors, fitted_rows)
        self.texts = self._left["texts"] + side["texts"]
        self.stems = self._left["stems"] + side["stems"]
        self.char3, self.tokens = (StackedRows(self._left[name], side[name]) for name in ("char3", "tokens"))
        self.vectors = None if self.encoder is None else StackedRows(self._left["vectors"], vectors)
        self.sets = set_measures.SetMeasures.stacked(self._left["sets"], side["sets"])

    def nearest_left(self, rows: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Candidate pairs (row, left row), sorted by row, then left row, each once: each row's k nearest left
        names by the encoder, and by 3-gram cosine among those that share a 3-gram with it (sparse_dot_topn
        keeps each row's top k of the sparse product: the brute-force search scored every pair, 29 of 38 s at
        30K × 20K names). With the encoder on Ray, Ray actors search (pearl.joining.left_search)."""
        k = min(k, self.n_left)
        char3, vectors = self.char3[rows], None if self.vectors is None else self.vectors[rows]
        ray = getattr(self.encoder, "ray", None)
        if ray is None:
            pairs = self._left_search().pairs(rows, char3, vectors, k, available_cores())
        else:
            if self._actors is None:
                self._actors = ray.actors(LeftSearchActor, (self._left_search(), 1), "candidate search", SEARCH_ROWS)
            found = [np.stack([out["row"].to_numpy(), out["left"].to_numpy()], axis=1)
                     for out in self._actors.map(queries_table(rows, char3, vectors, k))]
            pairs = np.concatenate(found) if found else np.zeros((0, 2), dtype=np.int64)
        pairs = pairs[pairs[:, 1] >= 0]  # HNSW may find fewer than k
        keys = np.unique(pairs[:, 0].astype(np.int64) * self.n_left + pairs[:, 1])  # sorted by row, then left row
        return keys // self.n_left, keys % self.n_left

    def _left_search(self) -> LeftSearch:
        """The left names' search structures; the faiss index is exact, or HNSW past Index's exact_below names
        (searched EF_SEARCH deep)."""
        if self._search is None:
            index = None
            if self.vectors is not None:
                from pearl.index.phrase_index import IndexSettings, new_faiss_index

                settings = IndexSettings(hnsw_ef_search=EF_SEARCH)
                index = new_faiss_index(self._left["vectors"].shape[1], self.n_left < settings.exact_below, settings)
                index.add(self._left["vectors"])
                index = VectorSearch(index)
            self._search = LeftSearch(self._left["char3"].T.tocsr(), index)
        return self._search

    def of_pairs(self, a: np.ndarray, b: np.ndarray, only: set[str] | None = None) -> dict[str, np.ndarray]:
        """Every signal of the pairs (rows a[i], b[i]), or those named in `only`."""
        from rapidfuzz import fuzz, process, utils
        from rapidfuzz.distance import JaroWinkler

        wanted = (lambda name: only is None or name in only)
        first, second = [self.texts[i] for i in a], [self.texts[i] for i in b]
        signals = {name: _row_dots(matrix, a, b) for name, matrix in (("char3", self.char3), ("tokens", self.tokens))
                   if wanted(name)}
        if any(wanted(name) for name in set_measures.SIGNALS):
            signals.update((name, values) for name, values in self.sets.of_pairs(a, b).items() if wanted(name))
        for name, scorer, scale in (("token_set", fuzz.token_set_ratio, 100.0), ("ratio", fuzz.ratio, 100.0),
                                    ("jaro_winkler", JaroWinkler.normalized_similarity, 1.0)):
            if wanted(name):
                signals[name] = process.cpdist(first, second, scorer=scorer, processor=utils.default_process,
                                               workers=-1) / scale
        if self.vectors is not None and wanted("cosine"):
            signals["cosine"] = _pair_cosines(self.vectors, a, b)
        return {name: np.clip(values, 0.0, 1.0) for name, values in signals.items()}


def _pair_cosines(vectors: np.ndarray, a: np.ndarray, b: np.ndarray, block: int = 2048) -> np.ndarray:
    """vectors[a[i]] · vectors[b[i]], a block of pairs at a time: the left names' own pairs alone number about 20 per
    name, and gathering all their vectors at once took 12 GB at 190K left names; blocks that stay in the CPU's cache
    took a fifth of the time of 65,536 pairs."""
    cosines = np.empty(len(a), dtype=np.float32)  # as Signals encodes
    for start in range(0, len(a), block):
        cosines[start:start + block] = np.einsum("ij,ij->i", vectors[a[start:start + block]],
                                                 vectors[b[start:start + block]])
    return cosines


def _row_dots(matrix, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray(matrix[a].multiply(matrix[b]).sum(axis=1)).ravel()


def choose(left: list[str], right: list[str], encoder: EmbeddingEncoder | None, precision_target: float = 0.9,
           candidates: int = 10, sample: int | None = SAMPLE) -> Choice:
    """AutoFJ's union of configurations for `precision_target`. `encoder` None: the string signals alone.
    Past `sample` right names (None: never), the union is chosen on `sample` of them drawn at random (seed
    SAMPLE_SEED) and then applied to all, CHUNK at a time: memory grows with the sample, not with the table.
    Where no union reaches the target, nothing is joined (`reached_target` False), and `estimated_precision`
    is the highest that one configuration reaches."""
    sampled = sample is not None and len(right) > sample
    rows = (np.sort(np.random.default_rng(SAMPLE_SEED).choice(len(right), sample, replace=False)) if sampled
            else np.arange(len(right)))
    signals = (Signals(left, [right[i] for i in rows], encoder, Vocabulary(left + right)) if sampled
               else Signals(left, right, encoder))
    left_pairs = _LeftPairs(signals, candidates)
    configurations, ruled_out = _configurations(signals, left_pairs, candidates)
    union = _greedy_union(configurations, precision_target)
    if not union.configurations:
        joined = configurations.precision > 0
        means = configurations.precision.sum(axis=1) / np.maximum(joined.sum(axis=1), 1)
        best = float(means.max()) if len(means) else 0.0
        return Choice([], best, 0.0, np.full(len(right), -1), np.zeros(len(right)), False, len(left_pairs.rules.pairs),
                      ruled_out, sample=len(rows), encode_seconds=signals.encode_seconds)
    if sampled:
        left_row, precision, source, ruled_out = apply(union.configurations, signals, left_pairs, right, candidates)
        sources = [union.configurations[c][0] for c in source[source >= 0]]
    else:
        left_row, precision, source = union.left_row, union.precision, union.source
        sources = [configurations.functions[f] for f in configurations.function[source[source >= 0]]]
    return Choice(union.configurations, union.estimate, float(precision.sum()), left_row, precision, True,
                  len(left_pairs.rules.pairs), ruled_out, dict(Counter(sources).most_common()), len(rows),
                  signals.encode_seconds)


class _LeftPairs:
    """Each left name's candidate neighbours among the left names, the negative rules learned from them, and
    per join function the neighbours' scores (AutoFJ's evidence of how close two different left names come)."""

    def __init__(self, signals: Signals, candidates: int):
        a, b = signals.nearest_left(np.arange(signals.n_left), candidates + 1)
        own = a != b
        self.a, self.b = a[own], b[own]
        self.rules = NegativeRules(signals.stems, self.a, self.b)
        self.n_left = signals.n_left
        self._signals = signals.of_pairs(self.a, self.b)
        # each pair's place in its left name's row, the same for every join function: the rows are only counted
        order = np.argsort(self.a, kind="stable")
        self._place = np.empty(len(order), dtype=np.int64)
        self._place[order] = np.arange(len(order)) - np.searchsorted(self.a[order], self.a[order])
        self._width = int(self._place.max()) + 1 if len(order) else 1

    def neighbour_scores(self, weights: dict[str, float]) -> np.ndarray:
        """Per left name, a row of its candidate neighbours' scores by the join function of these weights, in no
        order (−inf where it has fewer)."""
        matrix = np.full((self.n_left, self._width), -np.inf)
        matrix[self.a, self._place] = sum(w * self._signals[s] for s, w in weights.items())
        return matrix


def apply(configurations: list[tuple[str, float]], signals: Signals, left_pairs: _LeftPairs, right: list[str],
          candidates: int, chunk: int = CHUNK) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The union of these configurations over every right name, `chunk` at a time, as `_greedy_union` builds it:
    per right name, its left row, its join's estimated precision (0: none), the configuration that gave it (-1:
    none), and the candidate pairs the negative rules struck. Memory: the left side and one chunk."""
    weights = join_functions(signals.vectors is not None)
    used = {function: weights[function] for function, _ in configurations}
    needed = {signal for w in used.values() for signal in w}
    neighbours = {function: left_pairs.neighbour_scores(w) for function, w in used.items()}
    left_row, best = np.full(len(right), -1), np.zeros(len(right), dtype=np.float32)
    source, ruled_out = np.full(len(right), -1), 0
    with tqdm(total=len(right), desc="join", unit=" names", mininterval=2, disable=len(right) <= chunk) as progress:
        for start in range(0, len(right), chunk):
            names = right[start:start + chunk]
            signals.set_right(names)
            a, b = signals.nearest_left(np.arange(signals.n_left, signals.n_left + len(names)), candidates)
            allowed = left_pairs.rules.allowed(signals.stems, a, b)
            ruled_out += int((~allowed).sum())
            a, b = a[allowed], b[allowed]
            pairs = signals.of_pairs(a, b, needed)
            joins = {function: _best_per_right(a - signals.n_left, b, sum(v * pairs[s] for s, v in w.items()),
                                               len(names)) for function, w in used.items()}
            chunk_row, chunk_best, chunk_source = (part[start:start + len(names)] for part in (left_row, best, source))
            for c, (function, threshold) in enumerate(configurations):  # views: these write into the whole arrays
                row, score = joins[function]
                close = (neighbours[function][row] >= 1 - 2 * (1 - threshold)).sum(axis=1)
                p = np.where(score >= threshold, 1.0 / (1.0 + close), 0.0).astype(np.float32)
                likelier = p > chunk_best
                chunk_row[likelier], chunk_best[likelier], chunk_source[likelier] = row[likelier], p[likelier], c
            progress.update(len(names))
    return left_row, best.astype(np.float64), source, ruled_out


def _greedy_union(configurations: _Configurations, target: float) -> _Union:
    """AutoFJ's greedy search: add the configuration that gives the union the most estimated true per false
    positives, until its estimated precision is PATIENCE below `target`; keep the largest union at the target.
    A right name that two configurations join to different left names keeps the likelier join, but both count
    as joins, so that conflicting configurations pay for it. The gains are updated on the right names whose
    likeliest join or counted pairs the added configuration changed, the only ones whose terms move."""
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
        row, p = left_rows[function[c], columns], precision[c, columns]
        likelier = p > best[columns]
        # a right name's gains change only where its best join or a function's counted pair changes
        newly_counted = new_pair[:, columns] & (left_rows[:, columns] == row)
        changed = columns[likelier | newly_counted.any(axis=0)]
        before = gains(changed)
        true_positives, joins = float(total_true[c]), int(total_joins[c])
        new_pair[:, columns] &= ~newly_counted
        left_row[columns[likelier]], best[columns[likelier]] = row[likelier], p[likelier]
        source[columns[likelier]] = c
        after = gains(changed)
        gain_true += after[0] - before[0]
        gain_joins += after[1] - before[1]
        used[c] = True
        chosen.append((configurations.functions[function[c]], float(configurations.threshold[c])))
        if estimate >= target:
            kept = _Union(list(chosen), left_row.copy(), best.astype(np.float64), float(estimate), source.copy())
        elif estimate < target - PATIENCE:
            break
    return kept


def _configurations(signals: Signals, left_pairs: _LeftPairs, candidates: int,
                    functions: dict[str, dict[str, float]] | None = None) -> tuple[_Configurations, int]:
    """Every join function (default: `join_functions`) at each of its candidate cuts, with each right name of
    `signals` its join and its estimated precision; and the number of candidate pairs the negative rules struck."""
    n_left, n_right = signals.n_left, len(signals.texts) - signals.n_left
    lr_a, lr_b = signals.nearest_left(np.arange(n_left, n_left + n_right), candidates)
    allowed = left_pairs.rules.allowed(signals.stems, lr_a, lr_b)
    lr_a, lr_b = lr_a[allowed], lr_b[allowed]
    lr = signals.of_pairs(lr_a, lr_b)
    names, left_rows, function, thresholds, precision = [], [], [], [], []
    for name, weights in (functions or join_functions(signals.vectors is not None)).items():
        left_row, score = _best_per_right(lr_a - n_left, lr_b, sum(w * lr[s] for s, w in weights.items()), n_right)
        # the candidate neighbours' scores of each right name's left name
        neighbours = left_pairs.neighbour_scores(weights)[left_row]
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
                                     np.array(thresholds), np.array(precision).reshape(len(thresholds), n_right))
    return configurations, int((~allowed).sum())


def _best_per_right(right: np.ndarray, left: np.ndarray, score: np.ndarray, n_right: int) -> tuple[np.ndarray, np.ndarray]:
    """Each right name's highest-scoring candidate (the lower left row on a tie, NaN below every number) and its
    score, of pairs sorted by right name, then left row, as `Signals.nearest_left` gives them: found in one pass
    over the pairs, where a sort per join function took a fifth of a million-row join."""
    left_row, best = np.full(n_right, -1), np.zeros(n_right)
    if not len(right):  # no candidate at all (nothing shared, or all struck) joins nothing
        return left_row, best
    step = np.diff(right)
    if ((step < 0) | ((step == 0) & (np.diff(left) <= 0))).any():
        raise ValueError("candidate pairs must come sorted by right name, then left row")
    starts = np.flatnonzero(np.r_[True, step != 0])
    group = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(right)]))
    top = np.fmax.reduceat(score, starts)[group]  # NaN only where the whole group is
    at_top = np.flatnonzero((score == top) | np.isnan(top))
    first = at_top[np.r_[True, np.diff(group[at_top]) != 0]]
    left_row[right[first]], best[right[first]] = left[first], score[first]
    return left_row, best
