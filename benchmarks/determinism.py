"""The determinism table: run the pipeline again over a finished run and compare, output by output.

    python benchmarks/determinism.py                 # dvc repro -f average, then compare with the run before
    python benchmarks/determinism.py --stages corpus parse

Before re-running it keeps dvc.lock's output hashes and the metrics files; afterwards it prints, per
output, whether the bytes are the same (DVC's md5 of the file or folder) and, per metrics file, which
keys differ. Timing keys (`seconds`, `*_per_s`, …) are expected to differ and are listed apart.
tests/reliability/test_interrupts.py::test_dvc_repro_twice_gives_the_same_bytes checks the same on a slice.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.reliability.test_interrupts import TIMING_KEYS  # noqa: E402


def lock_outputs(lock: dict, stages: set[str]) -> dict[str, str]:
    return {out["path"]: out["md5"] for name, stage in lock["stages"].items() if name in stages
            for out in stage.get("outs", [])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stages", nargs="+", default=["average"], help="dvc repro -f targets (with their upstream)")
    args = parser.parse_args()
    before_lock = yaml.safe_load(Path("dvc.lock").read_text())
    before_metrics = {path: json.loads(path.read_text()) for path in Path("metrics").glob("*.json")}
    start = time.perf_counter()
    subprocess.run(["dvc", "repro", "-f", *args.stages], check=True)
    minutes = (time.perf_counter() - start) / 60
    after_lock = yaml.safe_load(Path("dvc.lock").read_text())
    ran = {name for name, stage in after_lock["stages"].items() if stage != before_lock["stages"].get(name)} | set(args.stages)
    before, after = lock_outputs(before_lock, ran), lock_outputs(after_lock, ran)
    print(f"\n`dvc repro -f {' '.join(args.stages)}` over the previous run: {minutes:.0f} min\n")
    print("| output | same bytes | differing keys (timing keys apart) |\n|---|---|---|")
    for path in sorted(after):
        differ = timing = ""
        if path.endswith(".json") and Path(path) in before_metrics:
            new = json.loads(Path(path).read_text())
            keys = sorted(k for k in new.keys() | before_metrics[Path(path)].keys()
                          if new.get(k) != before_metrics[Path(path)].get(k))
            differ = ", ".join(k for k in keys if not any(t in k for t in TIMING_KEYS)) or "none"
            timing = ", ".join(k for k in keys if any(t in k for t in TIMING_KEYS))
            differ += f" ({timing})" if timing else ""
        print(f"| {path} | {'yes' if before.get(path) == after[path] else 'NO'} | {differ} |")


if __name__ == "__main__":
    main()
