"""The product verbs' `--engine ray` on two loopback nodes: the local engine's bytes, and a node lost.

1. `index build` and `link`, `join` and `cluster --threshold` of two tables, each with `--engine local`
   and with `--engine ray` at a Ray head and a worker node of 1 CPU each on 127.0.0.1 (`ray start`):
   the same output files, byte for byte.
2. `cluster --engine ray` again, the worker node killed (`kill -9` of its raylet) `--kill-after` s
   after Ray starts encoding: it either finishes with the same bytes or fails in one line. The script
   says which.
Both nodes are stopped at the end, whatever happens. Tables: Parquet files with a `name` column
(`benchmarks/verbs_scale.py --write-tables DIR` writes GeoNames names and generated forms of them).
What it prints is written to --out as well (docs/measurements.md includes it).

    python scripts/ray_loopback_verbs.py --left LEFT.parquet --right RIGHT.parquet --model models/pearl
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import polars as pl

from ray_loopback import PORT, sh, start_loopback_nodes

PEARL = str(Path(sys.executable).parent / "pearl")
OUTPUTS = ("index/index.faiss", "index/rows.parquet", "links.parquet", "joined.parquet", "clusters.parquet")


def verbs(left: Path, right: Path, model: str, threshold: float, out: Path) -> list[list[str]]:
    return [["index", "build", "--input", str(left), "--column", "name", "--model", model, "--out", str(out / "index")],
            ["link", "--index", str(out / "index"), "--input", str(right), "--column", "name", "--k", "3",
             "--out", str(out / "links.parquet")],
            ["join", str(left), str(right), "--left-on", "name", "--right-on", "name", "--model", model,
             "--how", "left", "--out", str(out / "joined.parquet")],
            ["cluster", str(right), "--column", "name", "--model", model, "--threshold", str(threshold),
             "--out", str(out / "clusters.parquet")]]


def run_all(commands: list[list[str]], engine: list[str]) -> float:
    started = time.perf_counter()
    for command in commands:
        sh(PEARL, *command, *engine)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--left", type=Path, required=True)
    parser.add_argument("--right", type=Path, required=True)
    parser.add_argument("--model", default="models/pearl")
    parser.add_argument("--threshold", type=float, default=0.8, help="cluster --threshold")
    parser.add_argument("--kill-after", type=float, default=10.0,
                        help="seconds after the cluster joins the Ray to kill the worker node")
    parser.add_argument("--out", type=Path, default=Path("metrics/ray_loopback_verbs.md"))
    args = parser.parse_args()
    rows = {side: pl.scan_parquet(path).select(pl.len()).collect().item() for side, path in
            (("left", args.left), ("right", args.right))}
    report = [f"Measured {date.today()} by `python scripts/ray_loopback_verbs.py --model {Path(args.model).name} "
              f"--threshold {args.threshold:g} --kill-after {args.kill_after:g}` on {os.cpu_count()} CPU cores: "
              f"{rows['left']:,} left names, {rows['right']:,} right names.", ""]

    def say(line: str) -> None:
        print(line, flush=True)
        report.extend([line, ""])

    os.environ.update(RAY_AUTH_MODE="token", RAY_USAGE_STATS_ENABLED="0", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
                      PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    sh("ray", "get-auth-token", "--generate")
    address = f"127.0.0.1:{PORT}"
    ray_flags = ["--engine", "ray", "--ray-address", address, "--ray-workers", "2"]

    with tempfile.TemporaryDirectory() as scratch:
        local, on_ray, killed = (Path(scratch) / name for name in ("local", "ray", "killed"))
        for folder in (local, on_ray, killed):
            folder.mkdir()
        # one thread, as each 1-CPU actor has: CPU matrix products split a small batch by thread
        seconds = run_all(verbs(args.left, args.right, args.model, args.threshold, local), [])
        say(f"local engine, one thread: {seconds:.0f} s")

        worker = start_loopback_nodes(address)
        try:
            seconds = run_all(verbs(args.left, args.right, args.model, args.threshold, on_ray), ray_flags)
            differ = [name for name in OUTPUTS if (on_ray / name).read_bytes() != (local / name).read_bytes()]
            say(f"1. index build, link, join and cluster on two loopback nodes: {seconds:.0f} s; files other "
                f"than local: {differ or 'none'}")

            cluster = verbs(args.left, args.right, args.model, args.threshold, killed)[-1]
            stage = subprocess.Popen([PEARL, *cluster, *ray_flags], stderr=subprocess.PIPE,
                                     stdout=subprocess.DEVNULL, text=True)
            lines = []
            for line in stage.stderr:
                lines.append(line)
                if f"Ray at {address}" in line:  # joined: the encoding starts
                    break
            time.sleep(args.kill_after)
            for pid in worker:
                os.kill(pid, 9)
            lines += stage.stderr.readlines()
            code = stage.wait()
            written = killed / "clusters.parquet"
            same = written.is_file() and written.read_bytes() == (local / "clusters.parquet").read_bytes()
            errors = [line.strip() for line in lines if line.startswith("error:")]
            outcome = ("finished with the local engine's bytes" if code == 0 and same else
                       "failed: " + (errors[-1] if errors else lines[-1].strip()))
            leftovers = sorted(p.name for p in killed.iterdir() if p.name != "clusters.parquet")
            say(f"2. worker node killed {args.kill_after:g} s after cluster joined the Ray: exit {code}, {outcome}; "
                f"other files left: {leftovers or 'none'}")
        finally:
            sh("ray", "stop", "--force")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text("\n".join(report).rstrip() + "\n", encoding="utf-8")
    tmp.replace(args.out)


if __name__ == "__main__":
    main()
