"""Throughput of the parse and typing stages on one slice of the corpus, engine by engine, side by side:

- local with 1 and 2 processes (parse.n_process; typing runs in one process locally),
- Ray with 1 and 2 actors on a Ray started here (`ray.address: null`, `ray.num_cpus` = actors),
- Ray with 2 actors on two loopback nodes of 1 CPU each (`ray start`, 127.0.0.1), joined via ray.address.

Every run must write the bytes of the local one-process run, and the two-node run must have used both
nodes (the stage's `ray_nodes` metric). A stage's seconds include its start-up (Ray, the actors and
their models; the local pool and its models), as `dvc repro` pays it. Run `dvc repro corpus` first.

    python benchmarks/ray_front_half.py                      # the whole offline corpus (36K sentences)
    python benchmarks/ray_front_half.py --sentences 5000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from pearl.artifacts import SENTENCES_SCHEMA, read_artifact
from pearl.entity_typing import stage as typing_stage
from pearl.params import load_params
from pearl.parse import stage as parse_stage

CORPUS = Path("data/corpus/sentences.parquet")
PORT = 6390


def ray_cli(*args: str) -> None:
    subprocess.run([str(Path(sys.executable).parent / "ray"), *args], check=True, capture_output=True)


def start_loopback_nodes() -> str:
    """A head and a worker node of 1 CPU each on 127.0.0.1; their address."""
    ray_cli("start", "--head", "--node-ip-address=127.0.0.1", f"--port={PORT}", "--num-cpus=1",
            "--include-dashboard=false", "--disable-usage-stats")
    ray_cli("start", f"--address=127.0.0.1:{PORT}", "--node-ip-address=127.0.0.1", "--num-cpus=1")
    return f"127.0.0.1:{PORT}"


def run_stages(overrides: dict, folder: Path, sentences: Path) -> dict:
    params = load_params("params.yaml", overrides)
    phrases, typed = folder / "phrases.parquet", folder / "typed.parquet"
    parse_stage.run(params, source=sentences, output=phrases, metrics=folder / "parse.json")
    typing_stage.run(params, source=phrases, output=typed, metrics=folder / "typing.json")
    return {"parse": json.loads((folder / "parse.json").read_text()),
            "typing": json.loads((folder / "typing.json").read_text()),
            "bytes": (phrases.read_bytes(), typed.read_bytes())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=None, help="the first N sentences; default all")
    args = parser.parse_args()
    # two nodes of one machine join with the token Ray keeps in ~/.ray/auth_token
    os.environ.update(RAY_AUTH_MODE="token", RAY_USAGE_STATS_ENABLED="0")
    ray_cli("get-auth-token", "--generate")

    corpus = read_artifact(CORPUS, SENTENCES_SCHEMA)
    corpus = corpus.head(args.sentences) if args.sentences else corpus
    runs = {
        "local, 1 process": {"engine": "local", "parse.n_process": 1},
        "local, 2 processes": {"engine": "local", "parse.n_process": 2},
        "Ray here, 1 actor": {"engine": "ray", "ray.num_cpus": 1, "ray.parse.workers": 1, "ray.typing.workers": 1},
        "Ray here, 2 actors": {"engine": "ray", "ray.num_cpus": 2, "ray.parse.workers": 2, "ray.typing.workers": 2},
        "Ray, 2 loopback nodes × 1 actor": {"engine": "ray", "ray.parse.workers": 2, "ray.typing.workers": 2},
    }
    with tempfile.TemporaryDirectory() as scratch:
        sentences = Path(scratch) / "sentences.parquet"
        corpus.write_parquet(sentences)
        results = {}
        for name, overrides in runs.items():
            folder = Path(scratch) / str(len(results))
            folder.mkdir()
            if "loopback" in name:
                overrides = {**overrides, "ray.address": start_loopback_nodes()}
                try:
                    results[name] = run_stages(overrides, folder, sentences)
                finally:
                    ray_cli("stop", "--force")
            else:
                results[name] = run_stages(overrides, folder, sentences)

    reference = results["local, 1 process"]["bytes"]
    print(f"\n{corpus.height} sentences → {results['local, 1 process']['parse']['phrases']} phrases; 2 CPU cores\n")
    print("| run | parse s | sentences/s | typing s | phrases/s | Ray nodes used | same bytes |")
    print("|---|---|---|---|---|---|---|")
    for name, r in results.items():
        p, t = r["parse"], r["typing"]
        nodes = p.get("ray_nodes", "–") if p.get("ray_nodes") == t.get("ray_nodes") else f"{p['ray_nodes']}/{t['ray_nodes']}"
        print(f"| {name} | {p['seconds']:.1f} | {p['sentences_per_s']:.0f} | {t['seconds']:.1f} | "
              f"{t['phrases_per_s']:.0f} | {nodes} | {'yes' if r['bytes'] == reference else 'NO'} |")
    print("\nRay ÷ local at equal cores (seconds; goal ≤ 1.15):")
    for cores, local, ray in ((1, "local, 1 process", "Ray here, 1 actor"), (2, "local, 2 processes", "Ray here, 2 actors"),
                              (2, "local, 2 processes", "Ray, 2 loopback nodes × 1 actor")):
        ratios = [results[ray][s]["seconds"] / results[local][s]["seconds"] for s in ("parse", "typing")]
        print(f"- {ray} vs {local}: parse {ratios[0]:.2f}×, typing {ratios[1]:.2f}×")
    if any(r["bytes"] != reference for r in results.values()):
        raise SystemExit("an engine wrote other bytes than the local one-process run")
    if results["Ray, 2 loopback nodes × 1 actor"]["parse"].get("ray_nodes") != 2:
        raise SystemExit("the two-node run did not use both nodes")


if __name__ == "__main__":
    main()
