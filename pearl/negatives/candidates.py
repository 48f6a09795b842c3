"""Edit-similar candidates: for every phrase, its top-k other phrases by edit similarity.

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

Scoring all pairs is quadratic (3.8M phrases in the paper). Blocking: each phrase is
compared only with its nearest phrases under three sparse products of character 3-gram
vectors (sparse_dot_topn, multithreaded, 3-grams in more than `block_max_df` phrases left
out): TF-IDF cosine (similar strings), and the IDF-weighted share of one phrase's 3-grams
found in the other, both ways (containment). Those pairs are scored exactly, vectorised
(rapidfuzz `cpdist`). Recall against brute force: benchmarks/mine_candidates.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from rapidfuzz import fuzz, process
from rapidfuzz.distance import Levenshtein
from sklearn.feature_extraction.text import TfidfVectorizer

_CHUNK = 2_000_000


@dataclass(frozen=True)
class CandidateSettings:
    top_k: int
    min_edit_sim: float
    scorer: str
    block_top_m: int
    block_min_cos: float
    block_max_df: int
    n_threads: int


def _lookalike(parts: dict[str, np.ndarray]) -> np.ndarray:
    return np.maximum.reduce([parts["ratio"], 0.95 * parts["sort"], 0.95 * parts["set"]]) / 100


_PARTS = {"ratio": fuzz.ratio, "sort": fuzz.token_sort_ratio, "set": fuzz.token_set_ratio}
_SINGLE = {"wratio": (fuzz.WRatio, 100.0), "levenshtein": (Levenshtein.normalized_similarity, 1.0)}


def score_pairs(a, b, scorer: str, n_threads: int) -> np.ndarray:
    """Edit similarity in [0, 1] of aligned pairs a[i], b[i], in chunks, all threads."""
    scores = np.empty(len(a), dtype=np.float32)
    for start in range(0, len(a), _CHUNK):
        x, y = a[start:start + _CHUNK], b[start:start + _CHUNK]
        if scorer == "lookalike":
            parts = {k: process.cpdist(x, y, scorer=f, workers=n_threads, dtype=np.float32) for k, f in _PARTS.items()}
            scores[start:start + _CHUNK] = _lookalike(parts)
        else:
            function, scale = _SINGLE[scorer]
            scores[start:start + _CHUNK] = process.cpdist(x, y, scorer=function, workers=n_threads, dtype=np.float32) / scale
    return scores


def score_matrix(queries: list[str], phrases: list[str], scorer: str, n_threads: int) -> np.ndarray:
    """Edit similarity of every query with every phrase (brute force)."""
    if scorer == "lookalike":
        parts = {k: process.cdist(queries, phrases, scorer=f, workers=n_threads, dtype=np.float32) for k, f in _PARTS.items()}
        return _lookalike(parts)
    function, scale = _SINGLE[scorer]
    return process.cdist(queries, phrases, scorer=function, workers=n_threads, dtype=np.float32) / scale


def edit_similarity(a: str, b: str, scorer: str = "lookalike") -> float:
    return float(score_pairs([a], [b], scorer, 1)[0])


def trigram_vectors(phrases: list[str], max_df: int) -> tuple[sp.csr_matrix, sp.csr_matrix, sp.csr_matrix]:
    """TF-IDF (L2 rows), binary presence, and IDF weights with L1 rows, of character 3-grams.

    3-grams found in more than `max_df` phrases ("the", "ion") are left out: they make the
    sparse products quadratic and say little about which phrases look alike.
    """
    vectorizer = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 3), lowercase=True, sublinear_tf=True,
                                 dtype=np.float32, max_df=max(max_df, 1) if len(phrases) > max_df else 1.0)
    tfidf = vectorizer.fit_transform(phrases).tocsr()
    present = tfidf.copy()
    present.data[:] = 1.0
    weighted = present.multiply(vectorizer.idf_[None, :].astype(np.float32)).tocsr()
    sums = np.asarray(weighted.sum(axis=1)).ravel()
    weighted = sp.diags(np.divide(1.0, sums, out=np.zeros_like(sums), where=sums > 0)) @ weighted
    return tfidf, present.tocsr(), weighted.tocsr().astype(np.float32)


def blocked_pairs(phrases: list[str], settings: CandidateSettings) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) of each phrase's nearest others under the three blocking products."""
    from sparse_dot_topn import sp_matmul_topn

    tfidf, present, weighted = trigram_vectors(phrases, settings.block_max_df)
    m, t = settings.block_top_m + 1, settings.n_threads
    products = (
        (tfidf, tfidf.T.tocsr(), settings.block_min_cos),  # similar strings
        (present, weighted.T.tocsr(), 0.5),                 # the candidate inside the phrase
        (weighted, present.T.tocsr(), 0.5),                 # the phrase inside the candidate
    )
    rows, cols = [], []
    for left, right, threshold in products:
        near = sp_matmul_topn(left, right, top_n=m, threshold=threshold, n_threads=t).tocoo()
        rows.append(near.row)
        cols.append(near.col)
    pairs = np.unique(np.stack([np.concatenate(rows), np.concatenate(cols)]).astype(np.int64), axis=1)
    keep = pairs[0] != pairs[1]
    return pairs[0][keep], pairs[1][keep]


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


def mine_candidates(phrases: list[str], settings: CandidateSettings):
    """(phrase index, candidate index, edit_sim) of every phrase's top-k edit-similar others."""
    if len(phrases) < 2:
        empty = np.array([], dtype=np.int64)
        return empty, empty, np.array([], dtype=np.float32)
    rows, cols = blocked_pairs(phrases, settings)
    texts = np.asarray(phrases, dtype=object)
    scores = score_pairs(texts[rows].tolist(), texts[cols].tolist(), settings.scorer, settings.n_threads)
    return top_k(rows, cols, scores, settings.top_k, settings.min_edit_sim)


def brute_force_top_k(queries: list[int], phrases: list[str], settings: CandidateSettings) -> list[np.ndarray]:
    """The exact top-k scores of each query against every other phrase (for recall checks)."""
    matrix = score_matrix([phrases[q] for q in queries], phrases, settings.scorer, settings.n_threads)
    best = []
    for row, q in enumerate(queries):
        scores = matrix[row]
        scores[q] = -1.0
        kept = np.sort(scores[scores >= settings.min_edit_sim])[::-1][: settings.top_k]
        best.append(kept)
    return best


def recall_at_k(found_scores: list[np.ndarray], true_scores: list[np.ndarray]) -> float:
    """Share of the true top-k reached: a found score counts if it is ≥ the true k-th score."""
    hit = total = 0
    for found, true in zip(found_scores, true_scores):
        if len(true) == 0:
            continue
        hit += min(int(np.sum(found >= true[-1] - 1e-6)), len(true))
        total += len(true)
    return hit / total if total else 1.0
