"""Time candidate mining (pearl.negatives.candidates) at 10K, 100K and 1M phrases.

Phrases: real ones first (data/typed/phrases.parquet when built, the AutoFJ titles of PyPI
`autofj`, the YAGO/UMLS names of data/reference/pearl-benchmark); beyond that pool, realistic
variants of them (a typo, a word dropped, a word added). For each size: blocking and scoring
time, pairs scored, recall of the true top-k on a query sample against brute force, and the
all-pairs cost extrapolated from the brute-force rate. Settings: `negatives.*` of params.yaml.

    python benchmarks/mine_candidates.py                 # 10K, 100K, 1M
    python benchmarks/mine_candidates.py --sizes 10000   # one size
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
from rapidfuzz import process

from pearl.artifacts import TYPED_PHRASES_SCHEMA, read_artifact
from pearl.bench import data
from pearl.log import configure_logging
from pearl.negatives import candidates as mining
from pearl.negatives.stage import candidate_settings
from pearl.params import load_params

ROOT = Path(__file__).resolve().parents[1]


def real_phrases() -> list[str]:
    pool: list[str] = []
    typed = ROOT / "data/typed/phrases.parquet"
    if typed.exists():
        pool += read_artifact(typed, TYPED_PHRASES_SCHEMA)["phrase"].to_list()
    for name in data.autofj_names():
        join = data.load_autofj(name)
        pool += join.left + join.right
    for task in ("yago", "umls"):
        path = ROOT / "data/reference/pearl-benchmark" / task / f"{task}_test_samples.txt"
        for line in path.read_text(encoding="utf-8").splitlines():
            pool += [field.strip() for field in line.split("\t")[:2]]
    return list(dict.fromkeys(p for p in pool if p.strip()))


def variant(phrase: str, words: list[str], rng: np.random.Generator) -> str:
    tokens = phrase.split()
    kind = rng.integers(3)
    if kind == 0 and len(phrase) > 3:  # a typo
        i = int(rng.integers(len(phrase)))
        return phrase[:i] + phrase[i + 1:]
    if kind == 1 and len(tokens) > 1:  # a word dropped
        del tokens[int(rng.integers(len(tokens)))]
        return " ".join(tokens)
    tokens.insert(int(rng.integers(len(tokens) + 1)), words[int(rng.integers(len(words)))])  # a word added
    return " ".join(tokens)


def phrases_of_size(n: int, pool: list[str], seed: int) -> tuple[list[str], int]:
    rng = np.random.default_rng(seed)
    if n <= len(pool):
        return [pool[i] for i in rng.choice(len(pool), n, replace=False)], n
    words = sorted({w for p in pool[:50_000] for w in p.split()})
    chosen = dict.fromkeys(pool)
    while len(chosen) < n:
        for i in rng.integers(len(pool), size=n - len(chosen)):
            chosen.setdefault(variant(pool[i], words, rng))
    return list(chosen)[:n], len(pool)


def score_matrix(queries: list[str], phrases: list[str], scorer: str, n_threads: int) -> np.ndarray:
    """Edit similarity of every query with every phrase (brute force), by mining's scorers."""
    if scorer == "lookalike":
        parts = {k: process.cdist(queries, phrases, scorer=f, workers=n_threads, dtype=np.float32)
                 for k, (f, _) in mining.LOOKALIKE_PARTS.items()}
        return mining.lookalike(parts)
    function, scale = mining.SINGLE_SCORERS[scorer]
    return process.cdist(queries, phrases, scorer=function, workers=n_threads, dtype=np.float32) / scale


def brute_force_top_k(queries: list[int], phrases: list[str], settings: mining.CandidateSettings) -> list[np.ndarray]:
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


def measure(phrases: list[str], settings: mining.CandidateSettings, queries: int, seed: int) -> dict:
    start = time.perf_counter()
    rows, cols = mining.blocked_pairs(phrases, settings)
    blocked = time.perf_counter()
    scores = mining.score_indexed_pairs(np.asarray(phrases, dtype=object), rows, cols, settings.scorer,
                                        settings.n_threads, settings.min_edit_sim)
    r, c, s = mining.top_k(rows, cols, scores, settings.top_k, settings.min_edit_sim)
    done = time.perf_counter()

    sample = sorted(np.random.default_rng(seed).choice(len(phrases), queries, replace=False).tolist())
    brute_start = time.perf_counter()
    truth = brute_force_top_k(sample, phrases, settings)
    brute_seconds = time.perf_counter() - brute_start
    order = np.argsort(r, kind="stable")
    r, s = r[order], s[order]
    found = [s[np.searchsorted(r, q, "left"):np.searchsorted(r, q, "right")] for q in sample]
    all_pairs = brute_seconds / (queries * len(phrases)) * len(phrases) * (len(phrases) - 1) / 2
    return {
        "block_s": blocked - start, "score_s": done - blocked, "total_s": done - start,
        "pairs_scored": len(rows), "kept": len(r), "recall": recall_at_k(found, truth),
        "all_pairs_s": all_pairs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--queries", type=int, default=200, help="brute-force sample for recall")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    configure_logging()
    settings = candidate_settings(load_params(ROOT / "params.yaml"))
    pool = real_phrases()
    print(f"real phrases available: {len(pool)}; {settings}; {os.cpu_count()} cores")
    header = f"{'phrases':>9} {'real':>8} {'block s':>8} {'score s':>8} {'total s':>8} {'pairs':>11} {'kept':>10} {'recall@10':>9} {'all-pairs s (est.)':>19}"
    print(header)
    for n in (int(x) for x in args.sizes.split(",")):
        phrases, real = phrases_of_size(n, pool, args.seed)
        m = measure(phrases, settings, min(args.queries, n), args.seed)
        print(f"{n:>9} {real:>8} {m['block_s']:>8.1f} {m['score_s']:>8.1f} {m['total_s']:>8.1f} "
              f"{m['pairs_scored']:>11} {m['kept']:>10} {m['recall']:>9.3f} {m['all_pairs_s']:>19.0f}", flush=True)


if __name__ == "__main__":
    main()
