"""Fuzzy-join quality of `pearl join` on the 50 AutoFJ datasets, beside the `autofj` package.

For each encoder (default: the trained export, its untuned backbone and `string`), two joins
through `pearl.joining.join.best_matches` (no all-pairs scoring):
- "chosen for P", `pearl join`'s default: AutoFJ's union of configurations, chosen by its
  label-free precision estimate for `--precision-target` (`pearl.joining.select`): join functions
  (cosine, 3-gram and word TF-IDF cosines, rapidfuzz's token_set_ratio and Indel similarity, and
  mixes of the cosine with each) at their cuts;
- "calibrated cut" (`--calibration-quantile 0.9`): every right title gets its best left title by
  cosine, cut where the left table's own nearest neighbours are.
Against gt.csv:
- precision = correct joined / joined, recall = correct joined / right rows with a true match,
  F1, at the chosen cut (the AutoFJ paper's definitions);
- recall at AutoFJ's precision: the most right rows, taken by falling score (for "chosen for P",
  the estimated probability of each join, as `pearl join --precision-target` writes it), whose
  precision is at least what `autofj.AutoFJ` reached on that dataset;
- seconds per dataset, encoding included.
`AutoFJ(precision_target=0.9)` runs, in its own environment (bash benchmarks/setup_autofj_env.sh),
on the datasets in name order until `--autofj-budget` seconds of new runs are spent. Its outputs
(pairs and seconds) are kept in metrics/join/autofj/, committed: AutoFJ on all 50 takes over an
hour on 2 cores, so later comparisons read them and show the times of the run that wrote them.
Means are macro-averages over the datasets AutoFJ finished, for the first 25 by name (where the
design is chosen), the held-out 25 and all 50. `--markdown` writes those tables, which
scripts/readme_table.py copies into the README.

`--same-run-timing` scores nothing: it times AutoFJ and `pearl join` in one run on one machine, so
that the ratio of their seconds compares like with like. Its datasets, unless named, are the 1st, 11th, 21st, 31st and
41st of the 50 by name: a rule fixed before any result, spread over sizes and both halves. Dataset
by dataset, AutoFJ runs now (metrics/join/autofj/ is left as it is), then each encoder's `pearl
join` (chosen for P), so that a change in the machine's load falls on both alike. Each model loads
once, before the first dataset, with a join of a few rows to import and warm what a join runs; that
load is reported apart from the per-dataset seconds.
`--markdown` writes the table (seconds, the ratio AutoFJ / pearl per dataset and its median, the
machine and date), `--out` the seconds as JSON.

    bash benchmarks/setup_autofj_env.sh && python benchmarks/join_autofj.py
    python benchmarks/join_autofj.py --autofj-budget inf          # AutoFJ on every dataset not kept yet
    python benchmarks/join_autofj.py --models string --datasets 25     # quick, the design half
    python benchmarks/join_autofj.py --tables-from a.json b.json       # the tables of earlier --out files
    python benchmarks/join_autofj.py --tables-from before=a.json after=b.json   # two versions side by side
    python benchmarks/join_autofj.py --models models/pearl-base --no-calibrated --out b.json   # a slow encoder
    python benchmarks/join_autofj.py --same-run-timing --markdown t.md --out t.json    # seconds, same run
    python benchmarks/join_autofj.py --same-run-timing TennisTournament --models string   # its dry run
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import polars as pl

from pearl.bench import data
from pearl.index.encoder import load_encoder
from autofj_tables import SPLIT_NAMES, summary_tables, tables_from, timing_table, write_markdown
from pearl.joining.join import CALIBRATION_QUANTILE, best_matches
from pearl.log import configure_logging

TIMING_HEAD = "<!-- written by benchmarks/join_autofj.py --same-run-timing -->\n\n"


def truth(gt) -> dict[int, int]:
    return dict(zip(gt["id_r"].astype(int), gt["id_l"].astype(int)))


def titles(table) -> pl.DataFrame:
    return pl.DataFrame({"title": [None if isinstance(t, float) else str(t) for t in table["title"]]},
                        schema={"title": pl.String})


def scores_for(name: str, encoder, precision_target: float | None = None) -> tuple[np.ndarray, np.ndarray, float,
                                                                                  dict[int, int], str]:
    """`pearl join`'s scores on one dataset (chosen for `precision_target`, or with None the calibrated cut): per
    right row its predicted left id (-1: none) and score, the cut, truth, and how the cut was set."""
    from autofj.datasets import load_data

    left, right, gt = load_data(name)
    quantile = CALIBRATION_QUANTILE if precision_target is None else None
    matches = best_matches(titles(left), titles(right), "title", "title", encoder,
                           calibration_quantile=quantile, precision_target=precision_target)
    left_ids = left["id"].to_numpy()
    predicted = np.where(matches.left_row >= 0, left_ids[np.maximum(matches.left_row, 0)], -1)
    return predicted, matches.score, matches.threshold, truth(gt), matches.estimate or matches.threshold_source


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


def autofj_now(name: str, python: Path, target: float) -> dict:
    """AutoFJ's pairs and seconds on `name`, from a run now in its own environment."""
    with tempfile.TemporaryDirectory() as scratch:  # AutoFJ writes autofj_temp/ into its working folder
        done = subprocess.run([str(python), str(Path(__file__).with_name("autofj_join.py")), name, str(target)],
                              capture_output=True, text=True, check=True, cwd=scratch)
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_autofj(name: str, python: Path, target: float, cache: Path, budget_left: float) -> dict | None:
    """AutoFJ's precision, recall, F1, seconds and whether it ran now; its output is kept, as it takes minutes.
    None when it has not run on `name` and no budget is left."""
    from autofj.datasets import load_data

    cached = cache / f"{name}-{target}.json"
    fresh = not cached.is_file()
    if not fresh:
        result = json.loads(cached.read_text())
    elif budget_left <= 0:
        return None
    else:
        result = autofj_now(name, python, target)
        cache.mkdir(parents=True, exist_ok=True)
        cached.write_text(json.dumps(result))
    gold = truth(load_data(name)[2])
    correct = sum(gold.get(r) == l for r, l in result["pairs"])
    precision = correct / len(result["pairs"]) if result["pairs"] else 1.0
    recall = correct / len(gold)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "seconds": result["seconds"], "fresh": fresh}


def machine() -> dict:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), "unknown")
    return {"nproc": len(os.sched_getaffinity(0)), "cpu": cpu,
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "load_average_start": os.getloadavg()[0]}


def _shown(model: str) -> str:
    """A model as the tables name it: a folder inside the working folder by its relative path, never by where the
    machine keeps it."""
    path = Path(model).resolve()
    return str(path.relative_to(Path.cwd())) if Path(model).is_absolute() and path.is_relative_to(Path.cwd()) else model


def write_timing(timing: dict, markdown: Path | None) -> None:
    table = timing_table(timing)
    print("\n" + table)
    if markdown:
        markdown.write_text(TIMING_HEAD + table)


def time_same_run(names: list[str], models: list[str], autofj_python: Path, autofj_precision: float,
                  precision_target: float) -> dict:
    """The seconds of AutoFJ and of each encoder's `pearl join` on each dataset, in turn, and of each model's load."""
    from autofj.datasets import load_data

    timing = {"machine": machine(), "autofj_precision": autofj_precision, "precision_target": precision_target,
              "load_seconds": {}, "datasets": {}}
    encoders, few = {}, pl.DataFrame({"title": ["Paris", "London", "Berlin"]})
    for model in map(_shown, models):
        start = time.perf_counter()
        encoders[model] = load_encoder(model)
        # the join's imports and first forward pass, which would otherwise fall on the first dataset; AutoFJ's
        # imports fall outside its seconds too
        best_matches(few, few[:2], "title", "title", encoders[model], precision_target=precision_target)
        timing["load_seconds"][model] = time.perf_counter() - start
    for name in names:
        left, right, _ = load_data(name)
        row = {"rows": [len(left), len(right)], "AutoFJ": autofj_now(name, autofj_python, autofj_precision)["seconds"]}
        for model, encoder in encoders.items():
            start = time.perf_counter()
            scores_for(name, encoder, precision_target)
            row[model] = time.perf_counter() - start
        timing["datasets"][name] = row
        print(f"{name:<28} " + "  ".join(f"{system} {row[system]:.2f} s" for system in ("AutoFJ", *models)), flush=True)
    timing["machine"]["load_average_end"] = os.getloadavg()[0]
    return timing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="models/pearl,sentence-transformers/all-MiniLM-L6-v2,string")
    parser.add_argument("--precision-target", type=float, default=0.9,
                        help="also join with the function and cut chosen without labels for this precision")
    parser.add_argument("--autofj-budget", type=float, default=0, help="seconds of new AutoFJ runs (inf: all)")
    parser.add_argument("--autofj-python", type=Path, default=Path(__file__).with_name(".autofj-venv") / "bin/python",
                        help="AutoFJ's environment (bash benchmarks/setup_autofj_env.sh)")
    parser.add_argument("--autofj-precision", type=float, default=0.9, help="AutoFJ's precision_target")
    parser.add_argument("--autofj-cache", type=Path, default=Path(__file__).parent.parent / "metrics/join/autofj",
                        help="AutoFJ's outputs, reused by later runs (its times are those of the first run)")
    parser.add_argument("--no-calibrated", action="store_true",
                        help="only `pearl join`'s default (chosen for P): half the encoding, for a slow encoder")
    parser.add_argument("--datasets", type=int, default=50, help="the first N datasets by name")
    parser.add_argument("--out", type=Path, default=None, help="write the per-dataset rows as JSON")
    parser.add_argument("--markdown", type=Path, default=None,
                        help="write the tables as Markdown (metrics/join/summary.md is the README's)")
    parser.add_argument("--markdown-splits", default="all,held-out",
                        help=f"the halves --markdown writes, of {','.join(SPLIT_NAMES)} (default: the README's)")
    parser.add_argument("--tables-from", nargs="+", default=None, metavar="[LABEL=]FILE",
                        help="join nothing: print (and with --markdown write) the tables of these --out files")
    parser.add_argument("--timing-from", type=Path, metavar="JSON",
                        help="time nothing: the table of a --same-run-timing --out file (with --markdown, written)")
    parser.add_argument("--same-run-timing", nargs="*", default=None, metavar="NAME",
                        help="score nothing: time AutoFJ, run now, and each encoder's `pearl join` on these datasets "
                             "(none named: every 10th by name) in this run; --markdown writes the table, --out JSON")
    args = parser.parse_args()
    unknown = set(args.markdown_splits.split(",")) - set(SPLIT_NAMES)
    if unknown:
        parser.error(f"--markdown-splits {args.markdown_splits}: each of {', '.join(SPLIT_NAMES)}")
    splits = [SPLIT_NAMES[s] for s in args.markdown_splits.split(",")]
    if args.tables_from:
        return tables_from(args.tables_from, args.markdown, splits)
    if args.timing_from:
        return write_timing(json.loads(args.timing_from.read_text()), args.markdown)
    configure_logging()
    if args.same_run_timing is not None:
        unknown = set(args.same_run_timing) - set(data.autofj_names())
        if unknown:
            parser.error(f"--same-run-timing: no AutoFJ dataset {', '.join(sorted(unknown))}")
        timing = time_same_run(args.same_run_timing or data.autofj_names()[::10], args.models.split(","),
                               args.autofj_python, args.autofj_precision, args.precision_target)
        if args.out:
            args.out.write_text(json.dumps(timing, indent=2) + "\n")
        return write_timing(timing, args.markdown)
    names = data.autofj_names()[: args.datasets]
    from autofj.datasets import load_data

    right_ids = {name: load_data(name)[1]["id"].to_numpy() for name in names}

    autofj_rows, spent = {}, 0.0
    for name in names:
        row = run_autofj(name, args.autofj_python, args.autofj_precision, args.autofj_cache, args.autofj_budget - spent)
        if row is None:
            continue
        spent += row["seconds"] if row.pop("fresh") else 0.0
        autofj_rows[name] = row
        print(f"AutoFJ {name:<28} P {row['precision']:.3f} R {row['recall']:.3f}  {row['seconds']:6.1f} s", flush=True)

    rows = {"AutoFJ": autofj_rows}
    for model in args.models.split(","):
        encoder = load_encoder(model)
        for how in (f"chosen for P {args.precision_target:g}", *([] if args.no_calibrated else ["calibrated cut"])):
            system = f"{model}, {how}"
            for name in names:
                start = time.perf_counter()
                predicted, score, cut, gold, function = scores_for(
                    name, encoder, None if how == "calibrated cut" else args.precision_target)
                seconds = time.perf_counter() - start
                keep = ~np.isnan(score) & (score >= cut)
                p, r, f = prf(predicted, right_ids[name], gold, keep)
                row = {"precision": p, "recall": r, "f1": f, "cut": cut, "function": function, "seconds": seconds}
                if name in autofj_rows:
                    row["recall_at_autofj_precision"] = recall_at_precision(
                        predicted, score, right_ids[name], gold, autofj_rows[name]["precision"])
                rows.setdefault(system, {})[name] = row
            print(f"{system}: {len(names)} datasets in {sum(r['seconds'] for r in rows[system].values()):.0f} s",
                  flush=True)

    print(f"\n{os.cpu_count()} cores. AutoFJ's seconds are those of the run that wrote {args.autofj_cache}; "
          "each system is scored on the datasets AutoFJ finished, side by side")
    print("\n".join(summary_tables(rows, autofj_rows, names)))
    if args.markdown:
        write_markdown(args.markdown, rows, autofj_rows, names, f"on {os.cpu_count()} cores", splits)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
