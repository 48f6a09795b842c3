"""Multi-node for real, on one machine: a Ray head and a worker node (`ray start`, 1 CPU each, 127.0.0.1).

1. `dvc repro teacher` of a scratch clone (corpus slice `corpus.max_docs`) with `engine: ray` and
   `ray.address` pointing at the head: both nodes must have done work in each of the six stages that
   run on Ray, corpus to teacher (the stages' `ray_nodes` metric), and the outputs must be what
   `engine: local` writes: the same sentences, phrases, variants, candidates and teacher vectors,
   row for row and value for value (Ray writes each as a folder of shards, local as one file).
2. The worker node is killed (`kill -9` of its raylet) while `parse` runs on both: the stage either
   finishes through Ray's actor restarts with the same rows, or fails in one line and leaves its
   previous output in place. The script says which.
Both nodes are stopped at the end, whatever happens. Run from the project root after `dvc repro corpus`.
With --shared-storage, parse's nodes read the sentence shards themselves (`ray.shared_storage`; the two
nodes share this machine's disk).

    python scripts/ray_loopback.py --max-docs 3000
    python scripts/ray_loopback.py --max-docs 3000 --shared-storage
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import yaml

from pearl.artifacts import (CANDIDATES_SCHEMA, PHRASES_SCHEMA, SENTENCES_SCHEMA, TEACHER_VECTORS_SCHEMA,
                             TYPED_PHRASES_SCHEMA, VARIANTS_SCHEMA, read_artifact)

ROOT = Path(__file__).resolve().parents[1]
PORT = 6391
OUTPUTS = {"data/corpus/sentences.parquet": SENTENCES_SCHEMA, "data/phrases/phrases.parquet": PHRASES_SCHEMA,
           "data/typed/phrases.parquet": TYPED_PHRASES_SCHEMA, "data/augment/variants.parquet": VARIANTS_SCHEMA,
           "data/negatives/candidates.parquet": CANDIDATES_SCHEMA, "data/teacher/vectors.parquet": TEACHER_VECTORS_SCHEMA}
PHRASES = "data/phrases/phrases.parquet"
STAGES = ("corpus", "parse", "typing", "augment", "candidates", "teacher")


def sh(*args: str, cwd: Path | None = None, env: dict | None = None) -> str:
    return subprocess.run(args, cwd=cwd, check=True, capture_output=True, text=True,
                          env=None if env is None else {**os.environ, **env}).stdout


def raylets() -> set[int]:
    found = subprocess.run(["pgrep", "-f", "ray/core/src/ray/raylet/raylet"], capture_output=True, text=True)
    return {int(pid) for pid in found.stdout.split()}


def start_loopback_nodes(address: str) -> set[int]:
    """A Ray head at `address` and a worker node, 1 CPU each on 127.0.0.1; the worker's raylet pids, to kill."""
    before = raylets()
    sh("ray", "start", "--head", "--node-ip-address=127.0.0.1", f"--port={PORT}", "--num-cpus=1",
       "--include-dashboard=false", "--disable-usage-stats")
    head = raylets() - before
    sh("ray", "start", f"--address={address}", "--node-ip-address=127.0.0.1", "--num-cpus=1")
    return raylets() - before - head


def set_params(project: Path, **values) -> None:
    params = yaml.safe_load((project / "params.yaml").read_text())
    for dotted, value in values.items():
        *sections, key = dotted.split("__")
        table = params
        for section in sections:
            table = table[section]
        table[key] = value
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


def repro(project: Path, *targets: str, env: dict | None = None) -> None:
    sh("dvc", "repro", "--no-run-cache", *targets, cwd=project, env=env)  # really run: a cached run used no nodes


def rows(project: Path, path: str) -> list[tuple]:
    return read_artifact(project / path, OUTPUTS[path]).rows()


def snapshot(project: Path) -> dict[str, list[tuple]]:
    return {path: rows(project, path) for path in OUTPUTS}


def differing(run: dict, local: dict) -> list[str]:
    return [path for path in OUTPUTS if run[path] != local[path]]


def how_they_differ(run: list[tuple], local: list[tuple]) -> str:
    """Rows only one engine wrote, a few of each, or 'the same rows in another order'."""
    ours, theirs = Counter(run), Counter(local)
    only_ray, only_local = list((ours - theirs).elements()), list((theirs - ours).elements())
    if not only_ray and not only_local:
        first = next(i for i, (a, b) in enumerate(zip(run, local)) if a != b)
        return f"the same {len(run)} rows in another order from row {first}"
    return (f"{len(run)} rows against {len(local)}; only on Ray ({len(only_ray)}): {sorted(only_ray)[:5]}; "
            f"only local ({len(only_local)}): {sorted(only_local)[:5]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-docs", type=int, default=3000, help="corpus.max_docs of the scratch clone")
    parser.add_argument("--kill-after", type=float, default=8.0,
                        help="seconds after parse's Ray pipeline starts to kill the worker node")
    parser.add_argument("--shared-storage", action="store_true", help="ray.shared_storage: the nodes read parse's input")
    args = parser.parse_args()
    os.environ.update(RAY_AUTH_MODE="token", RAY_USAGE_STATS_ENABLED="0",
                      PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    sh("ray", "get-auth-token", "--generate")
    address = f"127.0.0.1:{PORT}"

    with tempfile.TemporaryDirectory() as scratch:
        project = Path(scratch) / "pearl"
        sh("git", "clone", "-q", str(ROOT), str(project))
        sh("dvc", "cache", "dir", "--local", str(ROOT / ".dvc" / "cache"), cwd=project)
        # the clone has no nltk_data/ (scripts/setup.sh prepares it in this project): augment reads ours
        set_params(project, corpus__max_docs=args.max_docs, augment__nltk_data=str(ROOT / "nltk_data"), engine="local",
                   ray__candidates__batch_size=100_000)  # pairs per actor call: each node gets some
        # one thread, as each 1-CPU actor has: CPU matrix products split a small batch (the teacher's last)
        # by thread, so 2 threads give other floats in the 7th digit
        repro(project, "teacher", env={"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
        local = snapshot(project)

        worker = start_loopback_nodes(address)
        try:
            set_params(project, engine="ray", ray__address=address, ray__shared_storage=args.shared_storage)
            started = time.perf_counter()
            repro(project, "teacher")
            nodes = {stage: json.loads((project / f"metrics/{stage}.json").read_text())["ray_nodes"]
                     for stage in STAGES}
            ray_rows = snapshot(project)
            differ = differing(ray_rows, local)
            print(f"1. dvc repro teacher on two loopback nodes: {time.perf_counter() - started:.0f} s, nodes used "
                  f"{nodes}, outputs other than local: {differ or 'none'}")
            for path in differ:
                print(f"   {path}: {how_they_differ(ray_rows[path], local[path])}")
            if set(nodes.values()) != {2} or differ:
                raise SystemExit("the two-node run did not use both nodes, or wrote other rows")

            stage = subprocess.Popen(["dvc", "repro", "-f", "--single-item", "parse"], cwd=project,
                                     stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
            lines = []
            for line in stage.stderr:
                lines.append(line)
                if "Starting execution of Dataset" in line:
                    break
            time.sleep(args.kill_after)
            for pid in worker:
                os.kill(pid, 9)
            lines += stage.stderr.readlines()
            code = stage.wait()
            ours = [line.strip() for line in lines if line.startswith("error:")]
            same = rows(project, PHRASES) == local[PHRASES]
            leftovers = sorted(p.name for p in (project / "data/phrases").iterdir() if p.name.startswith("."))
            outcome = (f"finished with the same rows, from {json.loads((project / 'metrics/parse.json').read_text())['ray_nodes']} "
                       "node(s)" if code == 0 and same else "failed: " + (ours[-1] if ours else lines[-1].strip()))
            print(f"2. worker node killed {args.kill_after:g} s into parse: exit {code}, {outcome}; "
                  f"phrases.parquet {'unchanged' if same else 'CHANGED'}, hidden leftovers {leftovers or 'none'}")
        finally:
            sh("ray", "stop", "--force")
            shutil.rmtree(project / ".dvc" / "tmp", ignore_errors=True)


if __name__ == "__main__":
    main()
