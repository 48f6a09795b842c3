"""`pearl join`'s chooser against an earlier version of it, side by side in one process on the 50 AutoFJ datasets.

Dataset by dataset, the join chosen for precision 0.9 (`join_autofj.scores_for`, encoding included) runs with
`pearl/joining/select.py` as it was at `--baseline`, then with today's, on the same loaded model, so that a change
in the machine's load falls on both alike. Per dataset: both versions' seconds and whether their joins are the
same (each right row's left row and score, and the chosen union). Both run once on a small dataset first, so that
imports and first calls fall outside the timings. The table gives the medians over the design
half, the held-out half and all 50, and how many datasets joined alike.

    python benchmarks/join_chooser_speed.py --model models/pearl-static --baseline d829bbf --markdown t.md --out t.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from join_autofj import machine, scores_for  # noqa: E402

from pearl.bench import data  # noqa: E402
from pearl.index.encoder import load_encoder  # noqa: E402
from pearl.joining import join, select  # noqa: E402
from autofj_tables import SPLITS  # noqa: E402


def select_at(ref: str):
    """pearl.joining.select as it was at `ref`, as a module of its own."""
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{ref}:pearl/joining/select.py"], check=True,
                            capture_output=True, text=True).stdout
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(f"select_{ref}", loader=None))
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(source, f"{ref}:pearl/joining/select.py", "exec"), module.__dict__)
    return module


def timed(name: str, encoder, chooser) -> tuple[float, tuple]:
    join.choose = chooser
    began = time.perf_counter()
    predicted, score, _, _, how = scores_for(name, encoder, 0.9)
    return time.perf_counter() - began, (predicted, score, re.sub(r"encoding took [0-9.]+ s", "", str(how)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="models/pearl-static")
    parser.add_argument("--baseline", required=True, help="the git ref whose chooser runs beside today's")
    parser.add_argument("--datasets", type=int, default=50, help="the first N by name (a quick look)")
    parser.add_argument("--markdown", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    before = select_at(args.baseline)
    encoder = load_encoder(args.model)
    names = data.autofj_names()[:args.datasets]
    host = machine()
    for chooser in (before.choose, select.choose):  # imports and first calls, outside the timings
        timed("ArtificialSatellite", encoder, chooser)
    rows = []
    for name in names:
        old_s, old = timed(name, encoder, before.choose)
        new_s, new = timed(name, encoder, select.choose)
        same = np.array_equal(old[0], new[0]) and np.array_equal(old[1], new[1]) and old[2] == new[2]
        rows.append({"dataset": name, "baseline_s": old_s, "today_s": new_s, "same_joins": bool(same)})
        print(f"{name}: {old_s:.2f} s → {new_s:.2f} s, {'same joins' if same else 'OTHER JOINS'}", flush=True)
    lines = [f"`{args.model}`, `{args.baseline}`'s chooser beside today's, dataset by dataset in one process; "
             f"{host['nproc']} cores of {host['cpu']} (load average {host['load_average_start']:.1f} at the start), "
             f"{datetime.now(timezone.utc):%Y-%m-%d}. Seconds per dataset, encoding included.", "",
             f"| datasets | median s, {args.baseline} | median s, today | same joins |", "|---|---:|---:|---:|"]
    for label, part in SPLITS.items():
        chosen = rows[part]
        if not chosen:
            continue
        lines.append(f"| {label} | {np.median([r['baseline_s'] for r in chosen]):.2f} | "
                     f"{np.median([r['today_s'] for r in chosen]):.2f} | "
                     f"{sum(r['same_joins'] for r in chosen)} of {len(chosen)} |")
    print("\n".join(lines))
    if args.markdown:
        args.markdown.write_text("\n".join(lines) + "\n")
    if args.out:
        args.out.write_text(json.dumps({"model": args.model, "baseline": args.baseline, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
