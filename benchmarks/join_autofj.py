"""Fuzzy-join quality of `pearl join` on the 50 AutoFJ datasets, beside the `autofj` package.

For each encoder (default: the trained export, its untuned backbone and `string`), every right
title gets its best left title (`pearl.joining.join.best_matches`, no all-pairs scoring) and the
default cut (calibrated on the left table's own nearest neighbours). Against gt.csv:
- precision = correct joined / joined, recall = correct joined / right rows with a true match,
  F1, at the chosen cut (the AutoFJ paper's definitions);
- recall at AutoFJ's precision: the most right rows, taken by falling score, whose precision is
  at least what `autofj.AutoFJ` reached on that dataset.
`AutoFJ(precision_target=0.9)` runs, in its own environment (bash benchmarks/setup_autofj_env.sh),
on the datasets in name order until `--autofj-budget` seconds are spent (its time per dataset
is printed); the comparison covers those datasets.
Means are macro-averages over datasets.

    bash benchmarks/setup_autofj_env.sh && python benchmarks/join_autofj.py
    python benchmarks/join_autofj.py --models string --autofj-budget 0     # quick
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from pearl.bench import data
from pearl.index.encoder import load_encoder
from pearl.joining.join import best_matches
from pearl.log import configure_logging
from pearl.model_ids import model_cache


def truth(gt) -> dict[int, int]:
    return dict(zip(gt["id_r"].astype(int), gt["id_l"].astype(int)))


def titles(table) -> pl.DataFrame:
    return pl.DataFrame({"title": [None if isinstance(t, float) else str(t) for t in table["title"]]},
                        schema={"title": pl.String})


def scores_for(name: str, encoder) -> tuple[np.ndarray, np.ndarray, float, dict[int, int], int]:
    """Per right row: its predicted left id (-1: none), score, the chosen cut, truth, right rows."""
    from autofj.datasets import load_data

    left, right, gt = load_data(name)
    left_pl, right_pl = titles(left), titles(right)
    matches = best_matches(left_pl, right_pl, "title", "title", encoder)
    left_ids = left["id"].to_numpy()
    predicted = np.where(matches.left_row >= 0, left_ids[np.maximum(matches.left_row, 0)], -1)
    return predicted, matches.score, matches.threshold, truth(gt), len(right)


def prf(predicted: np.ndarray, right_ids: np.ndarray, gold: dict[int, int], keep: np.ndarray) -> tuple[float, float, float]:
    correct = sum(gold.get(int(r)) == int(p) for r, p in zip(right_ids[keep], predicted[keep]))
    joined = int(keep.sum())
    precision = correct / joined if joined else 1.0
    recall = correct / len(gold) if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def recall_at_precision(predicted: np.ndarray, score: np.ndarray, right_ids: np.ndarray, gold: dict[int, int],
                        target: float) -> float:
    order = np.argsort(-np.nan_to_num(score, nan=-np.inf), kind="stable")
    hits = np.cumsum([gold.get(int(right_ids[i])) == int(predicted[i]) for i in order])
    precision = hits / np.arange(1, len(order) + 1)
    ok = np.flatnonzero(precision >= target - 1e-9)
    return float(hits[ok[-1]] / len(gold)) if len(ok) and gold else 0.0


def run_autofj(name: str, python: Path, target: float, cache: Path) -> tuple[float, float, float, float]:
    """AutoFJ's precision, recall, F1 and seconds; its output is cached, as it takes minutes."""
    from autofj.datasets import load_data

    cached = cache / f"{name}-{target}.json"
    if cached.is_file():
        result = json.loads(cached.read_text())
    else:
        with tempfile.TemporaryDirectory() as scratch:  # AutoFJ writes autofj_temp/ into its working folder
            done = subprocess.run([str(python), str(Path(__file__).with_name("autofj_join.py")), name, str(target)],
                                  capture_output=True, text=True, check=True, cwd=scratch)
        result = json.loads(done.stdout.strip().splitlines()[-1])
        cache.mkdir(parents=True, exist_ok=True)
        cached.write_text(json.dumps(result))
    gold = truth(load_data(name)[2])
    correct = sum(gold.get(r) == l for r, l in result["pairs"])
    precision = correct / len(result["pairs"]) if result["pairs"] else 1.0
    recall = correct / len(gold)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1, result["seconds"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="models/pearl,sentence-transformers/all-MiniLM-L6-v2,string")
    parser.add_argument("--autofj-budget", type=float, default=900, help="seconds of AutoFJ runs")
    parser.add_argument("--autofj-python", type=Path, default=Path(__file__).with_name(".autofj-venv") / "bin/python",
                        help="AutoFJ's environment (bash benchmarks/setup_autofj_env.sh)")
    parser.add_argument("--autofj-precision", type=float, default=0.9, help="AutoFJ's precision_target")
    parser.add_argument("--autofj-cache", type=Path, default=model_cache() / "bench/autofj",
                        help="AutoFJ's outputs, reused by later runs (its times are those of the first run)")
    parser.add_argument("--out", type=Path, default=None, help="write the per-dataset rows as JSON")
    args = parser.parse_args()
    configure_logging()
    names = data.autofj_names()
    from autofj.datasets import load_data

    right_ids = {name: load_data(name)[1]["id"].to_numpy() for name in names}

    autofj_rows, spent = {}, 0.0
    for name in names:
        if spent >= args.autofj_budget:
            break
        precision, recall, f1, seconds = run_autofj(name, args.autofj_python, args.autofj_precision, args.autofj_cache)
        spent += seconds
        autofj_rows[name] = {"precision": precision, "recall": recall, "f1": f1, "seconds": seconds}
        print(f"AutoFJ {name:<28} P {precision:.3f} R {recall:.3f}  {seconds:6.1f} s", flush=True)

    rows = {}
    for model in args.models.split(","):
        encoder = load_encoder(model)
        start = time.perf_counter()
        for name in names:
            predicted, score, cut, gold, _ = scores_for(name, encoder)
            keep = ~np.isnan(score) & (score >= cut)
            p, r, f = prf(predicted, right_ids[name], gold, keep)
            row = {"precision": p, "recall": r, "f1": f, "cut": cut}
            if name in autofj_rows:
                row["recall_at_autofj_precision"] = recall_at_precision(
                    predicted, score, right_ids[name], gold, autofj_rows[name]["precision"])
            rows.setdefault(model, {})[name] = row
        print(f"{model}: 50 datasets in {time.perf_counter() - start:.0f} s", flush=True)

    subset = sorted(autofj_rows)
    print(f"\n{len(names)} AutoFJ datasets, {os.cpu_count()} cores; AutoFJ ran on {len(subset)} "
          f"({', '.join(subset)}), {spent / max(len(subset), 1):.0f} s per dataset on average")
    print(f"{'encoder':<44} {'P':>6} {'R':>6} {'F1':>6}   {'on AutoFJ subset: R at its P':>28}")
    for model, per in rows.items():
        mean = {k: np.mean([per[n][k] for n in names]) for k in ("precision", "recall", "f1")}
        at = np.mean([per[n]["recall_at_autofj_precision"] for n in subset]) if subset else float("nan")
        print(f"{model:<44} {mean['precision']:6.3f} {mean['recall']:6.3f} {mean['f1']:6.3f}   {at:28.3f}")
    if subset:
        p, r, f = (np.mean([autofj_rows[n][k] for n in subset]) for k in ("precision", "recall", "f1"))
        print(f"{'AutoFJ, on its subset':<44} {p:6.3f} {r:6.3f} {f:6.3f}   {r:28.3f}")
    if args.out:
        args.out.write_text(json.dumps({"autofj": autofj_rows, "encoders": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
