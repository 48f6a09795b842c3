"""What a user waits for `pearl embed`: the whole command (start-up, imports, model load, encode, write), per model
and install, side by side in one run.

Installs: the core wheel alone in a new venv (`pip install .`: no torch), this checkout in the full venv
(scripts/setup.sh's), and `--baseline`'s code in the full venv. The names are GeoNames names (the seed picks them),
one per line; each command writes a .npy matrix. Every row runs `--rounds` times in alternating order, so that none
gets the warmer machine; a row keeps the fastest round and lists all.

    python benchmarks/embed_command.py        # PEARL-static and PEARL-small, 20,000 names → metrics/embed_command.md
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from datetime import date
from pathlib import Path

import numpy as np

from install_size import install, uv
from peers import machine
from verbs_scale import ROOT, Names, baseline_code, child_env, run_child

MODELS = ("models/pearl-static", "models/pearl")
IMPORTED = ("import sys; from pearl.cli import main\ntry: main(sys.argv[1:])\nexcept SystemExit: pass\n"
            "print('torch' in sys.modules)")


def markdown(rows: list[dict], args) -> str:
    lines = [f"Measured {date.today()} by `python benchmarks/embed_command.py`: `pearl embed --input names.txt --model M "
             f"--out vectors.npy` of {args.names:,} GeoNames names (seed {args.seed}), the whole command as a user "
             f"starts it, {os.cpu_count()} cores ({machine()['cpu']}); fastest of {args.rounds} alternating rounds.", "",
             "| model | install and code | seconds | every round | peak GB | torch imported |",
             "|---|---|---:|---|---:|---|"]
    for row in rows:
        lines.append(f"| `{row['model']}` | {row['install']} | {min(row['seconds']):.2f} | "
                     f"{', '.join(f'{s:.2f}' for s in row['seconds'])} | {row['peak_gb']:.2f} | "
                     f"{'yes' if row['torch'] else 'no'} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--names", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", default="8bb5d60", help="the code to run side by side ('' for none)")
    parser.add_argument("--out", type=Path, default=Path("metrics/embed_command.md"))
    args = parser.parse_args()
    left = Names().left
    rng = np.random.default_rng(args.seed)
    names = [left[i] for i in sorted(rng.choice(len(left), args.names, replace=False))]
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        (work / "names.txt").write_text("\n".join(names) + "\n", encoding="utf-8")
        uv("build", "-q", "--wheel", "--out-dir", str(work / "dist"))
        install(next((work / "dist").glob("pearl-*.whl")), "core", work / "core")
        # install → (python, the code it imports pearl from: None for the venv's own)
        installs = {"core wheel, new venv": (str(work / "core" / "bin" / "python"), None),
                    "this checkout, full venv": (sys.executable, ROOT)}
        if args.baseline:
            installs[f"{args.baseline}, full venv"] = (sys.executable, baseline_code(args.baseline, work))
        runs = {(model, name): {"model": model, "install": name, "seconds": [], "peak_gb": 0.0, "torch": False}
                for model in args.models for name in installs
                if name != "core wheel, new venv" or Path(model).name == "pearl-static"}  # the core has no torch
        try:
            for round_ in range(args.rounds):
                for key in list(runs) if round_ % 2 == 0 else reversed(list(runs)):
                    model, name = key
                    python, code = installs[name]
                    out = work / "vectors.npy"
                    seconds, peak, _ = run_child(["embed", "--input", str(work / "names.txt"), "--model",
                                                  str(ROOT / model), "--out", str(out)], code, python)
                    runs[key]["seconds"].append(seconds)
                    runs[key]["peak_gb"] = max(runs[key]["peak_gb"], peak)
                    if np.load(out).shape[0] != len(names):
                        raise SystemExit(f"{model} ({name}) wrote {np.load(out).shape[0]} rows for {len(names)} names")
                    print(json.dumps({"model": model, "install": name, "seconds": round(seconds, 2)}), flush=True)
            for (model, name), row in runs.items():  # torch's import, outside the timed rounds
                python, code = installs[name]
                ran = subprocess.run([python, "-P", "-c", IMPORTED, "embed", "zurich", "--model", str(ROOT / model),
                                      "--out", str(work / "one.npy")], capture_output=True, text=True,
                                     env=child_env(code), cwd=work, check=True)
                row["torch"] = ran.stdout.strip().splitlines()[-1] == "True"
        finally:
            if args.baseline:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                                str(installs[f"{args.baseline}, full venv"][1])], check=False, capture_output=True)
    rows = list(runs.values())
    text = markdown(rows, args)
    print(text)
    args.out.write_text(text)
    args.out.with_suffix(".json").write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
