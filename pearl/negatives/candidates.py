"""Edit-similar candidates: for every phrase, its top-k most similar other phrases.

Edit similarity (`negatives.scorer`):
- `lookalike` (default): rapidfuzz's WRatio without its partial (substring-window) branches,
  / 100: max(ratio, 0.95·token_sort_ratio, 0.95·token_set_ratio). Like WRatio (the default
  scorer of `process.extract`) it credits whole-word containment and shared words: "New York"
  scores 0.95 against "The New York Times" and "New York Post" 0.72, where normalised
  Levenshtein gives 0.44 and 0.50 and nothing in the paper's example would pass the 0.7 cut.
  Unlike WRatio, two strings of unequal length sharing one word ("the aftermath of World
  War II", "the earth": 0.855) or a few letters ("men" in "2009 Armenian Cup": 0.9) do not
  look alike: such ties would otherwise fill every top-k.
- `wratio`: rapidfuzz WRatio as it is; `levenshtein`: normalised Levenshtein similarity.

Scoring all pairs is quadratic (3.8M phrases in the paper). Blocking proposes pairs through
two channels whose cost grows linearly with the phrase count, and only those are scored
exactly (rapidfuzz `cpdist`, all threads):
- shared words: token_set_ratio scores a pair by its shared words when they make up most of
  one of the two ("New York" in "The New York Times" gives 100; "Magazine" in "PC Magazine"
  against any phrase with that word gives 84). Each phrase is keyed by every subset of its
  words that covers enough of it to pass `min_edit_sim`; every phrase holding those words
  meets the `block_key_cap` phrases keyed by them with the least left over, and each of
  those meets every holder. Exact for this term up to the cap: a keyed phrase beyond it
  scores the same against every holder, so the holders it meets through its own words
  (at least the cap's) tie with the ones it misses.
- characters: each phrase's character 1- and 2-grams (case kept, no IDF: the scorers weigh
  every character alike), randomly projected to `block_dim` dimensions, and its
  `block_top_m` nearest neighbours by cosine through a faiss inverted-file index with 8-bit
  codes (`block_nprobe` of 4·√n cells visited; exact search below 50K phrases).
Recall against brute force at 10K–1M phrases: benchmarks/mine_candidates.py. Under `engine: ray`,
from 50K phrases on, Ray actors search the character index (NeighbourSearcher, the larger part of
the blocking) and list the phrases' word keys (WordKeys) for a Ray Data shuffle whose tasks join
them (capped_pairs); below, both take about a second on the driver, less than starting the actors.
Actors score the pairs (PairScorer) at any size. The index build stays on the driver.
"""

from __future__ import annotations

import contextlib
import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from rapidfuzz import fuzz, process
from rapidfuzz.distance import Levenshtein

from pearl.log import Stopwatch, get_logger
from pearl.ray_engine import RowActor, column_matrix, matrix_column, partitions

log = get_logger("candidates")

_CHUNK = 2_000_000
EXACT_BELOW = 50_000
SEARCH_ROWS = 65_536  # queries per faiss search call, on the driver or in an actor alike
# above this many words, only subsets of 1-2 words and the set less one word are keys (2^n grows fast)
_ALL_SUBSETS_UP_TO = 8


@dataclass(frozen=True)
class CandidateSettings:
    top_k: int
    min_edit_sim: float
    scorer: str
    block_top_m: int
    block_key_cap: int
    block_dim: int
    block_nprobe: int
    n_threads: int
    seed: int


def lookalike(parts: dict[str, np.ndarray]) -> np.ndarray:
    return np.maximum.reduce([parts["ratio"], 0.95 * parts["sort"], 0.95 * parts["set"]]) / 100


LOOKALIKE_PARTS = {"ratio": (fuzz.ratio, 1.0), "sort": (fuzz.token_sort_ratio, 0.95),
                   "set": (fuzz.token_set_ratio, 0.95)}
SINGLE_SCORERS = {"wratio": (fuzz.WRatio, 100.0), "levenshtein": (Levenshtein.normalized_similarity, 1.0)}


def score_pairs(a, b, scorer: str, n_threads: int, cutoff: float = 0.0) -> np.ndarray:
    """Edit similarity in [0, 1] of aligned pairs a[i], b[i], all threads. Scores below
    `cutoff` may come back as 0 (rapidfuzz stops early on them)."""
    if scorer == "lookalike":
        parts = {k: process.cpdist(a, b, scorer=f, workers=n_threads, dtype=np.float32,
                                   score_cutoff=min(100.0, 100 * cutoff / weight))
                 for k, (f, weight) in LOOKALIKE_PARTS.items()}
        return lookalike(parts)
    function, scale = SINGLE_SCORERS[scorer]
    return process.cpdist(a, b, scorer=function, workers=n_threads, dtype=np.float32,
                          score_cutoff=cutoff * scale) / scale


def score_indexed_pairs(texts: np.ndarray, rows: np.ndarray, cols: np.ndarray, scorer: str, n_threads: int,
                        cutoff: float = 0.0) -> np.ndarray:
    """score_pairs of texts[rows[i]], texts[cols[i]], in chunks so the string lists stay small."""
    scores = np.empty(len(rows), dtype=np.float32)
    for start in range(0, len(rows), _CHUNK):
        end = start + _CHUNK
        scores[start:end] = score_pairs(texts[rows[start:end]].tolist(), texts[cols[start:end]].tolist(),
                                        scorer, n_threads, cutoff)
    return scores


def _word_subsets(words: list[str]):
    sizes = range(1, len(words) + 1) if len(words) <= _ALL_SUBSETS_UP_TO else (1, 2, len(words) - 1, len(words))
    for size in sizes:
        yield from itertools.combinations(words, size)


def word_key_rows(phrases: list[str], ids: list[int], min_share_ratio: float) -> pa.Table:
    """One row per word subset of each phrase (`key`: its sorted distinct words joined by a space; `id`),
    with `rest` where the subset covers enough of the phrase to be a key of it: what token_set_ratio
    leaves over beside it, -1 for the whole phrase. Elsewhere rest is null: the phrase only holds the key.

    rapidfuzz splits on whitespace and compares sorted unique words joined by one space, so
    a subset of s words of a phrase scores 2·len(s) / (2·len(s) + 1 + len(rest)), and 1 when
    the subset is the whole phrase.
    """
    keys, holders, rests = [], [], []
    for i, phrase in zip(ids, phrases):
        words = sorted(set(phrase.split()))
        total = len(" ".join(words))
        for subset in _word_subsets(words):
            key = " ".join(subset)
            rest = total - len(key) - 1 if len(subset) < len(words) else -1
            keys.append(key)
            holders.append(i)
            rests.append(rest if 2 * len(key) / (2 * len(key) + 1 + rest) >= min_share_ratio else None)
    return pa.table({"key": pa.array(keys, pa.string()), "id": pa.array(holders, pa.int64()),
                     "rest": pa.array(rests, pa.int64())})


def capped_pairs(rows: pa.Table, cap: int) -> tuple[np.ndarray, np.ndarray]:
    """(holder, keyed) of word_key_rows that share a key, each key's keyed phrases cut to the `cap` with
    the least rest (ties: the lower id); never a phrase with itself."""
    key = pc.dictionary_encode(rows["key"].combine_chunks()).indices.to_numpy().astype(np.int64)
    ids = rows["id"].to_numpy()
    keyed = rows["rest"].is_valid().to_numpy(zero_copy_only=False)
    keyed_key, keyed_id = key[keyed], ids[keyed]
    order = np.lexsort((keyed_id, rows["rest"].drop_null().to_numpy(), keyed_key))
    keyed_key, keyed_id = keyed_key[order], keyed_id[order]
    starts = np.r_[0, np.flatnonzero(np.diff(keyed_key)) + 1] if len(keyed_key) else np.zeros(0, np.int64)
    rank = np.arange(len(keyed_key)) - np.repeat(starts, np.diff(np.r_[starts, len(keyed_key)]))
    best = rank < cap
    holder, keyed_phrase = _join(key, ids, keyed_key[best], keyed_id[best])
    keep = holder != keyed_phrase
    return holder[keep], keyed_phrase[keep]


def capped_pair_table(rows: pa.Table, cap: int) -> pa.Table:
    holder, keyed = capped_pairs(rows, cap)
    return pa.table({"holder": holder, "keyed": keyed})


def shared_word_pairs(phrases: list[str], min_share_ratio: float, cap: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) of phrases whose shared words alone score `min_share_ratio` or more under
    token_set_ratio's ratio(shared, shared + rest of one side), both directions."""
    return both_ways(*capped_pairs(word_key_rows(phrases, list(range(len(phrases))), min_share_ratio), cap))


def both_ways(holder: np.ndarray, keyed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.concatenate([holder, keyed]), np.concatenate([keyed, holder])


SharedWords = Callable[[list[str], float, int], tuple[np.ndarray, np.ndarray]]  # shared_word_pairs' signature


class WordKeys(RowActor):
    """A Ray actor (`engine: ray`): phrases and their ids in, their word_key_rows out, each with the
    partition of its key that the shuffle before capped_pairs groups by."""

    def __init__(self, min_share_ratio: float, parts: int):
        self.min_share_ratio, self.parts = min_share_ratio, parts

    def process(self, batch: pa.Table) -> pa.Table:
        rows = word_key_rows(batch["phrase"].to_pylist(), batch["id"].to_pylist(), self.min_share_ratio)
        return rows.append_column("part", partitions(rows["key"].to_pylist(), self.parts))


def _join(left_key, left_id, right_key, right_id) -> tuple[np.ndarray, np.ndarray]:
    """Every (left_id, right_id) with equal keys; right_key is sorted."""
    lo = np.searchsorted(right_key, left_key, "left")
    count = np.searchsorted(right_key, left_key, "right") - lo
    offsets = np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)
    return np.repeat(left_id, count), right_id[np.repeat(lo, count) + offsets]


def character_vectors(phrases: list[str], dim: int, seed: int) -> np.ndarray:
    """Unit vectors whose cosines approximate the cosine of character 1-2-gram counts."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    counts = TfidfVectorizer(analyzer="char_wb", ngram_range=(1, 2), lowercase=False, use_idf=False,
                             sublinear_tf=True, dtype=np.float32).fit_transform(phrases)
    projection = np.random.default_rng(seed).standard_normal((counts.shape[1], dim), dtype=np.float32)
    vectors = np.ascontiguousarray(counts @ projection, dtype=np.float32)
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return vectors


Neighbours = Callable[["faiss.Index", np.ndarray, int], np.ndarray]  # (index, queries, m) → ids, n × m


def search_in_chunks(index: "faiss.Index", vectors: np.ndarray, m: int) -> np.ndarray:
    return np.vstack([index.search(vectors[start:start + SEARCH_ROWS], m)[1]
                      for start in range(0, len(vectors), SEARCH_ROWS)])


@contextlib.contextmanager
def omp_threads(threads: int) -> Iterator[None]:
    """faiss on `threads` threads, then the process's count as before: torch shares the OpenMP runtime, and a
    later stage in the same process (the Python API) would otherwise train on other threads, to other bytes."""
    import faiss

    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(threads)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


def character_neighbour_pairs(phrases: list[str], settings: CandidateSettings,
                              neighbours: Neighbours = search_in_chunks) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) of each phrase's block_top_m nearest others by character-vector cosine."""
    with omp_threads(settings.n_threads):
        return _character_neighbour_pairs(phrases, settings, neighbours)


def _character_neighbour_pairs(phrases: list[str], settings: CandidateSettings,
                               neighbours: Neighbours) -> tuple[np.ndarray, np.ndarray]:
    import faiss

    vectors = character_vectors(phrases, settings.block_dim, settings.seed)
    n, dim = vectors.shape
    if n < EXACT_BELOW:
        index = faiss.IndexFlatIP(dim)
    else:
        cells = int(4 * math.sqrt(n))
        # 8-bit codes: the search reads a quarter of the memory, which bounds its speed
        index = faiss.IndexIVFScalarQuantizer(faiss.IndexFlatIP(dim), dim, cells, faiss.ScalarQuantizer.QT_8bit,
                                              faiss.METRIC_INNER_PRODUCT)
        index.cp.seed = settings.seed
        index.cp.niter = 10
        sample = np.random.default_rng(settings.seed).choice(n, min(n, 40 * cells), replace=False)
        index.train(vectors[np.sort(sample)])
        index.nprobe = settings.block_nprobe
    index.add(vectors)
    m = min(settings.block_top_m + 1, n)
    found = neighbours(index, vectors, m)
    rows, cols = np.repeat(np.arange(n), m), found.ravel()
    keep = (cols >= 0) & (cols != rows)
    return rows[keep], cols[keep]


def blocked_pairs(phrases: list[str], settings: CandidateSettings, neighbours: Neighbours = search_in_chunks,
                  shared_words: SharedWords = shared_word_pairs) -> tuple[np.ndarray, np.ndarray]:
    """Distinct (row, col) pairs proposed by the shared-word and character channels."""
    n = len(phrases)
    clock = Stopwatch()
    r1, c1 = shared_words(phrases, min(1.0, settings.min_edit_sim / 0.95), settings.block_key_cap)
    log.info("shared words: %d pairs in %.1f s", len(r1), clock.seconds)
    clock = Stopwatch()
    r2, c2 = character_neighbour_pairs(phrases, settings, neighbours)
    log.info("character neighbours: %d pairs in %.1f s", len(r2), clock.seconds)
    clock = Stopwatch()
    pairs = np.sort(np.concatenate([r1, r2]) * n + np.concatenate([c1, c2]))
    pairs = pairs[np.r_[True, pairs[1:] != pairs[:-1]]]  # np.unique hashes: 100× slower here
    log.info("%d distinct pairs in %.1f s", len(pairs), clock.seconds)
    return pairs // n, pairs % n


def top_k(rows: np.ndarray, cols: np.ndarray, scores: np.ndarray, k: int, min_score: float):
    """Per row, the k best-scoring columns at or above min_score; ties go to the lower index."""
    keep = scores >= min_score
    rows, cols, scores = rows[keep], cols[keep], scores[keep]
    order = np.lexsort((cols, -scores, rows))
    rows, cols, scores = rows[order], cols[order], scores[order]
    starts = np.r_[0, np.flatnonzero(np.diff(rows)) + 1]
    rank = np.arange(len(rows)) - np.repeat(starts, np.diff(np.r_[starts, len(rows)]))
    chosen = rank < k
    return rows[chosen], cols[chosen], scores[chosen]


class PairScorer(RowActor):
    """A Ray actor (`engine: ray`): holds the phrases once; a batch of (row, col) pairs in, their
    edit similarities out, on `threads` threads."""

    def __init__(self, texts: np.ndarray, scorer: str, threads: int, cutoff: float):
        self.texts, self.scorer, self.threads, self.cutoff = texts, scorer, threads, cutoff

    def process(self, batch: pa.Table) -> pa.Table:
        rows, cols = batch["row"].to_numpy(), batch["col"].to_numpy()
        return pa.table({"score": score_indexed_pairs(self.texts, rows, cols, self.scorer, self.threads, self.cutoff)})


class NeighbourSearcher(RowActor):
    """A Ray actor (`engine: ray`): holds the character index once (faiss-serialised); a batch of
    character vectors in, each one's m nearest rows out, on `threads` threads."""

    def __init__(self, index: np.ndarray, m: int, threads: int):
        import faiss

        faiss.omp_set_num_threads(threads)
        self.index, self.m = faiss.deserialize_index(index), m

    def process(self, batch: pa.Table) -> pa.Table:
        _, found = self.index.search(column_matrix(batch, "vector"), self.m)
        return pa.table({"found": matrix_column(found)})


PairScores = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def mine_candidates(phrases: list[str], settings: CandidateSettings, score: PairScores | None = None,
                    neighbours: Neighbours = search_in_chunks, shared_words: SharedWords = shared_word_pairs):
    """(phrase index, candidate index, edit_sim) of every phrase's top-k edit-similar others.
    `score(texts, rows, cols)` scores the blocked pairs, by default score_indexed_pairs on all
    threads; `neighbours` searches the character index; `shared_words` joins the shared-word keys."""
    if len(phrases) < 2:
        empty = np.array([], dtype=np.int64)
        return empty, empty, np.array([], dtype=np.float32)
    rows, cols = blocked_pairs(phrases, settings, neighbours, shared_words)
    texts = np.asarray(phrases, dtype=object)
    if score is None:
        scores = score_indexed_pairs(texts, rows, cols, settings.scorer, settings.n_threads, settings.min_edit_sim)
    else:
        scores = score(texts, rows, cols)
    return top_k(rows, cols, scores, settings.top_k, settings.min_edit_sim)
