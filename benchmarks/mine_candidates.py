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

from pearl.log import configure_logging
from pearl.negatives import candidates as mining
from phrase_pool import phrases_of_size, real_phrases
from candidate_recall import brute_force_top_k, recall_at_k
from pearl.negatives.stage import candidate_settings
from pearl.params import load_params

ROOT = Path(__file__).resolve().parents[1]


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
    pool = real_phrases(ROOT)
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
