"""The reproduction contract, checked: after `dvc repro` on any machine, every metric lands within its tolerance of
the committed one.

`dvc metrics diff --all` of the working tree against `--rev` gives each metric's two values;
scripts/repro_tolerances.yaml gives each metric's tolerance and where it comes from. One line a metric (within,
outside or ignored), the machine's CPU, and exit 1 when any metric is outside.

    bash scripts/repro.sh average && python scripts/check_repro.py
    python scripts/check_repro.py --rev HEAD~1 --only-outside
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
from fnmatch import fnmatchcase
from pathlib import Path

import polars as pl
import yaml

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("ignore", "exact", "rel", "seed_spread", "log_mean", "binomial")


def metrics_diff(rev: str) -> dict[str, dict[str, dict]]:
    """{file: {key: {"old", "new"}}} of every metric, changed or not."""
    ran = subprocess.run([str(Path(sys.executable).with_name("dvc")), "metrics", "diff", "--all", "--json", rev],
                         capture_output=True, text=True, cwd=ROOT)
    if ran.returncode != 0:
        raise SystemExit(f"error: dvc metrics diff {rev} failed: {ran.stderr.strip().splitlines()[-1:]}")
    return json.loads(ran.stdout or "{}")


def load_rules(path: Path) -> dict:
    config = yaml.safe_load(path.read_text())
    for number, rule in enumerate(config["rules"], start=1):
        kinds = [kind for kind in KINDS if kind in rule]
        if len(kinds) != 1 or "pattern" not in rule or "why" not in rule:
            raise SystemExit(f"error: {path} rule {number}: give a pattern, a why and one of {', '.join(KINDS)}")
        rule["kind"] = kinds[0]
    return config


class Bounds:
    """Each rule's bound for one metric, from the committed files it is derived from."""

    def __init__(self, config: dict, diff: dict):
        self.seed_runs = [ROOT / run for run in config.get("seed_runs", [])]
        self.diff = diff

    def bound(self, rule: dict, file: str, key: str, old) -> float:
        kind, factor = rule["kind"], rule.get(rule["kind"])
        if kind == "exact":
            return 0.0
        if kind == "rel":
            return factor * abs(old)
        if kind == "seed_spread":
            values = [self._seed_value(run, file, key) for run in self.seed_runs]
            values = [v for v in values if v is not None]
            spread = statistics.stdev(values) if len(values) > 1 else 0.0
            return max(factor * spread, rule.get("floor", 0.0))
        if kind == "log_mean":
            return factor * self._log_standard_error(rule)
        if kind == "binomial":
            n_file, n_key = rule["n_from"].split(":")
            n = self.diff[n_file][n_key]["old"]
            return factor * math.sqrt(old * (1 - old) / n)
        raise ValueError(kind)

    def _seed_value(self, run: Path, file: str, key: str):
        parts = Path(file).parts  # metrics/bench/<system>/<task>.json
        seeded = run / parts[1] / parts[-1]
        if not seeded.is_file():
            return None
        return json.loads(seeded.read_text()).get(key.rsplit(".", 1)[-1])  # a reference model's "<model>.score"

    @staticmethod
    def _log_standard_error(rule: dict) -> float:
        # the committed log, as the stage's own mean reads it: one tenth of the logged rows at least one
        values = pl.read_csv(ROOT / rule["log"])[rule["column"]].to_list()
        window = max(1, len(values) // 10)
        tenth = values[:window] if rule["tenth"] == "first" else values[-window:]
        return statistics.stdev(tenth) / math.sqrt(len(tenth)) if len(tenth) > 1 else 0.0


def judge(rule: dict, bounds: Bounds, file: str, key: str, old, new) -> tuple[str, str]:
    """("within" | "outside" | "ignored", the reason)."""
    if rule["kind"] == "ignore":
        return "ignored", rule["why"]
    if old is None or new is None:
        return "outside", "missing in the " + ("committed metrics" if old is None else "working tree")
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (old, new))
    if not numeric or rule["kind"] == "exact":
        return ("within", "equal") if old == new else ("outside", f"must be equal: {rule['why']}")
    bound = bounds.bound(rule, file, key, old)
    delta = abs(new - old)
    if delta <= bound + 1e-12:
        return "within", f"|Δ| {delta:.4g} ≤ {bound:.4g}"
    return "outside", f"|Δ| {delta:.4g} > {bound:.4g}: {rule['why']}"


def cpu() -> str:
    info = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").is_file() else ""
    model = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")), "?")
    flags = next((line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")), [])
    simd = [flag for flag in ("avx2", "avx512f", "avx512_bf16", "amx_tile") if flag in flags]
    return f"{model}, {os.cpu_count()} cores, {' '.join(simd) or 'no AVX2'}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rev", default="HEAD", help="the commit whose metrics are the promise")
    parser.add_argument("--tolerances", type=Path, default=ROOT / "scripts" / "repro_tolerances.yaml")
    parser.add_argument("--only-outside", action="store_true", help="print only the metrics outside")
    args = parser.parse_args()
    config = load_rules(args.tolerances)
    diff = metrics_diff(args.rev)
    bounds = Bounds(config, diff)
    counts = {"within": 0, "outside": 0, "ignored": 0}
    for file in sorted(diff):
        for key in sorted(diff[file]):
            change = diff[file][key]
            name = f"{file}:{key}"
            rule = next(r for r in config["rules"] if fnmatchcase(name, r["pattern"]))
            verdict, reason = judge(rule, bounds, file, key, change.get("old"), change.get("new"))
            counts[verdict] += 1
            if verdict == "outside" or not args.only_outside:
                print(f"{verdict:8} {name}  {change.get('old')!r} → {change.get('new')!r}  ({reason})")
    print(f"{counts['within']} within, {counts['outside']} outside, {counts['ignored']} ignored; against {args.rev}, "
          f"on {cpu()}")
    sys.exit(1 if counts["outside"] else 0)


if __name__ == "__main__":
    main()
