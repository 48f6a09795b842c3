"""Throughput of the front-half stages that run on Ray, engine by engine, side by side:

- local on 1 core (parse.n_process 1, negatives.n_threads 1, torch on 1 thread) and on 2 cores
  (parse.n_process 2, 2 threads; corpus and typing run in one process locally whatever the cores),
- Ray with 1 and 2 actors per stage on a Ray started here (`ray.address: null`, `ray.num_cpus` = actors),
- Ray with 2 actors per stage on two loopback nodes of 1 CPU each (`ray start`, 127.0.0.1), with the
  driver sending parse's input and with the nodes reading it (`ray.shared_storage`).

Every run must write what the local 1-core run writes: the same rows in the same order, with equal
values (Ray writes each output as a folder of shards); the two-node runs must have used both nodes
in every stage (`ray_nodes`, listed stage by stage); a failed check ends the script after its
tables. A stage's seconds include its start-up (Ray, the actors and their models; the local pool
and its models), as `dvc repro` pays it. The teacher encodes a slice of the phrases (`--teacher-texts`): all-mpnet-base-v2
takes ~4 min for all of them on 2 cores. The candidates stage mines `--candidate-phrases` phrases, the
corpus's and variants of them: from 50K on, its blocking runs on Ray too.

    python benchmarks/ray_front_half.py                      # the whole offline corpus (10K documents)
    python benchmarks/ray_front_half.py --docs 2000 --teacher-texts 1000
    python benchmarks/ray_front_half.py --until parse        # corpus and parse only
    python benchmarks/ray_front_half.py --until parse --marginal --repeats 3

`--marginal` runs everything again on half the work (documents, mined phrases, teacher texts) and
prints Ray ÷ local on the added half, (full − half) ÷ (full − half): each stage's start-up, paid
once whatever the corpus, cancels, which leaves the overhead that a corpus of hours would see; and
each run's start-up, 2 × half − full. Both are differences: only stages that take tens of seconds
here give a stable one, and mining is not linear in its phrases. `--repeats N` runs the whole set N
times, interleaved (full, half, full, half, ...), so that a slow spell of the machine hits every
run alike; every figure is then the median of the N, with the range of the ratios beside it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import torch

from pearl.artifacts import (CANDIDATES_SCHEMA, PHRASES_SCHEMA, SENTENCES_SCHEMA, TEACHER_VECTORS_SCHEMA,
                             TYPED_PHRASES_SCHEMA, VARIANTS_SCHEMA, read_artifact)
from pearl.augment import stage as augment_stage
from pearl.corpus import stage as corpus_stage
from pearl.entity_typing import stage as typing_stage
from pearl.negatives import stage as negatives_stage
from phrase_pool import phrases_of_size
from pearl.params import Params, load_params
from pearl.parse import stage as parse_stage
from pearl.teacher import stage as teacher_stage

PORT = 6390
STAGES = ("corpus", "parse", "typing", "augment", "candidates", "teacher")
OUTPUTS = {"corpus": ("sentences", SENTENCES_SCHEMA), "parse": ("phrases", PHRASES_SCHEMA),
           "typing": ("typed", TYPED_PHRASES_SCHEMA), "augment": ("variants", VARIANTS_SCHEMA),
           "candidates": ("candidates", CANDIDATES_SCHEMA), "teacher": ("vectors", TEACHER_VECTORS_SCHEMA)}
LOOPBACK = "Ray, 2 loopback nodes × 1 actor"
PAIRS = (("local, 1 core", "Ray here, 1 actor"), ("local, 2 cores", "Ray here, 2 actors"),
         ("local, 2 cores", LOOPBACK), ("local, 2 cores", f"{LOOPBACK}, nodes read parse's input"))


def ray_cli(*args: str) -> None:
    subprocess.run([str(Path(sys.executable).parent / "ray"), *args], check=True, capture_output=True)


@contextlib.contextmanager
def loopback_nodes(wanted: bool) -> Iterator[dict]:
    """The `ray.address` of a head and a worker node of 1 CPU each, started on 127.0.0.1 and stopped
    afterwards; no override, and no nodes, unless wanted."""
    if not wanted:
        yield {}
        return
    try:
        ray_cli("start", "--head", "--node-ip-address=127.0.0.1", f"--port={PORT}", "--num-cpus=1",
                "--include-dashboard=false", "--disable-usage-stats")
        ray_cli("start", f"--address=127.0.0.1:{PORT}", "--node-ip-address=127.0.0.1", "--num-cpus=1")
        yield {"ray.address": f"127.0.0.1:{PORT}"}
    finally:
        ray_cli("stop", "--force")


def candidate_phrases(typed: Path, count: int, out: Path) -> Path:
    """`count` phrases for the candidates stage: the run's own, then variants of them (a typo, a word
    dropped or added; benchmarks/mine_candidates.py), the same in every run."""
    phrases, _ = phrases_of_size(count, read_artifact(typed, TYPED_PHRASES_SCHEMA)["phrase"].to_list(), seed=0)
    pl.DataFrame({"phrase": phrases, "label_id": [0] * len(phrases)}).write_parquet(out)
    return out


def run_stages(overrides: dict, folder: Path, teacher_texts: int, threads: int, mined_phrases: int,
               stages: tuple[str, ...]) -> dict:
    params = load_params("params.yaml", overrides)
    files = {name: folder / f"{name}.parquet" for name, _ in OUTPUTS.values()}
    torch.set_num_threads(threads)
    corpus_stage.run(params, output=files["sentences"], metrics=folder / "corpus.json")
    parse_stage.run(params, source=files["sentences"], output=files["phrases"], metrics=folder / "parse.json")
    if "typing" in stages:
        run_back_stages(params, files, folder, teacher_texts, mined_phrases)
    return {"metrics": {stage: json.loads((folder / f"{stage}.json").read_text()) for stage in stages},
            "rows": {stage: read_artifact(files[OUTPUTS[stage][0]], OUTPUTS[stage][1]) for stage in stages}}


def run_back_stages(params: Params, files: dict[str, Path], folder: Path, teacher_texts: int,
                    mined_phrases: int) -> None:
    typing_stage.run(params, source=files["phrases"], output=files["typed"], metrics=folder / "typing.json")
    augment_stage.run(params, source=files["typed"], sentences=files["sentences"], output=files["variants"],
                      metrics=folder / "augment.json")
    mined = candidate_phrases(files["typed"], mined_phrases, folder / "mined.parquet") if mined_phrases else files["typed"]
    negatives_stage.run_candidates(params, source=mined, output=files["candidates"], metrics=folder / "candidates.json")
    # the teacher's slice: the first phrases, no candidates or variants
    sliced = {name: folder / f"teacher_{name}.parquet" for name in ("typed", "candidates", "variants")}
    read_artifact(files["typed"], TYPED_PHRASES_SCHEMA).head(teacher_texts).write_parquet(sliced["typed"])
    read_artifact(files["candidates"], CANDIDATES_SCHEMA).head(0).write_parquet(sliced["candidates"])
    pl.DataFrame(schema={c: pl.String for c in ("phrase", "level", "method", "variant")}).write_parquet(sliced["variants"])
    teacher_stage.run(params, sliced["typed"], sliced["candidates"], sliced["variants"], files["vectors"],
                      folder / "teacher.json")


def on_ray(actors: int) -> dict:
    return {f"ray.{stage}.workers": actors for stage in STAGES}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=None, help="corpus.max_docs; default all")
    parser.add_argument("--teacher-texts", type=int, default=3000, help="phrases the teacher encodes")
    parser.add_argument("--candidate-phrases", type=int, default=100_000,
                        help="phrases the candidates stage mines (from 50K on, its blocking runs on Ray too); 0: the corpus's")
    parser.add_argument("--until", choices=("parse", "teacher"), default="teacher", help="the last stage run")
    parser.add_argument("--marginal", action="store_true",
                        help="run everything again on half the work and print Ray ÷ local with start-up cancelled")
    parser.add_argument("--repeats", type=int, default=1, help="runs of the whole set; figures are medians")
    args = parser.parse_args()
    stages = STAGES[:STAGES.index(args.until) + 1]
    # two nodes of one machine join with the token Ray keeps in ~/.ray/auth_token
    os.environ.update(RAY_AUTH_MODE="token", RAY_USAGE_STATS_ENABLED="0")
    ray_cli("get-auth-token", "--generate")

    fulls, halves = [], []
    for _ in range(args.repeats):
        fulls.append(run_all(args.docs, args.teacher_texts, args.candidate_phrases, stages))
        if args.marginal:
            documents = fulls[0]["local, 1 core"]["metrics"]["corpus"]["documents"]
            halves.append(run_all(documents // 2, args.teacher_texts // 2, args.candidate_phrases // 2, stages))
    failed = report(fulls, stages)
    if args.marginal:
        print("\nThe same on half the work:")
        failed += [f"half the work: {problem}" for problem in report(halves, stages)]
        report_marginal(fulls, halves, stages)
    if failed:
        raise SystemExit("; ".join(failed))


def run_all(docs: int | None, teacher_texts: int, candidate_phrases: int, stages: tuple[str, ...]) -> dict:
    base = {"corpus.max_docs": docs}
    runs = {  # (overrides, torch threads)
        "local, 1 core": ({**base, "engine": "local", "parse.n_process": 1, "negatives.n_threads": 1}, 1),
        "local, 2 cores": ({**base, "engine": "local", "parse.n_process": 2, "negatives.n_threads": 2}, 2),
        "Ray here, 1 actor": ({**base, "engine": "ray", "ray.num_cpus": 1, **on_ray(1)}, 1),
        "Ray here, 2 actors": ({**base, "engine": "ray", "ray.num_cpus": 2, **on_ray(2)}, 1),
        LOOPBACK: ({**base, "engine": "ray", **on_ray(2)}, 1),
        f"{LOOPBACK}, nodes read parse's input": ({**base, "engine": "ray", "ray.shared_storage": True, **on_ray(2)}, 1),
    }
    with tempfile.TemporaryDirectory() as scratch:
        results = {}
        for name, (overrides, threads) in runs.items():
            folder = Path(scratch) / str(len(results))
            folder.mkdir()
            with loopback_nodes(name.startswith(LOOPBACK)) as address:
                results[name] = run_stages({**overrides, **address}, folder, teacher_texts, threads,
                                           candidate_phrases, stages)
    return results


def seconds(repeats: list[dict], run: str, stage: str) -> float:
    """The median over the repeats."""
    return statistics.median(results[run]["metrics"][stage]["seconds"] for results in repeats)


def spread(ratios: list[float]) -> str:
    """The median ratio, and its range when there are repeats."""
    shown = f"{statistics.median(ratios):.2f}×"
    return shown if len(ratios) == 1 else f"{shown} ({min(ratios):.2f}–{max(ratios):.2f})"


def report(repeats: list[dict], stages: tuple[str, ...]) -> list[str]:
    """Print the runs' table (median seconds) and ratios; return the checks any repeat fails."""
    failed = []
    for results in repeats:
        failed += [problem for problem in checks(results, stages) if problem not in failed]
    m = repeats[0]["local, 1 core"]["metrics"]
    summary = f"{m['corpus']['documents']} documents → {m['corpus']['sentences']} sentences → {m['parse']['phrases']} phrases"
    if "candidates" in stages:
        summary += (f"; candidates mined among {m['candidates']['phrases']} phrases: {m['candidates']['pairs']} pairs; "
                    f"the teacher encodes {m['teacher']['texts']} texts")
    runs = f"median of {len(repeats)} runs" if len(repeats) > 1 else "one run"
    print(f"\n{summary}; 2 CPU cores; {runs}\n")
    print("| run | " + " | ".join(f"{stage} s" for stage in stages) + " | Ray nodes used | same output |")
    print("|---|" + "---|" * (len(stages) + 2))
    for name, r in repeats[0].items():
        nodes = [str(r["metrics"][stage].get("ray_nodes", "–")) for stage in stages]
        same = all(same_rows(results, name, stages) for results in repeats)
        print(f"| {name} | " + " | ".join(f"{seconds(repeats, name, stage):.1f}" for stage in stages)
              + f" | {'–' if set(nodes) == {'–'} else ', '.join(nodes)} | {'yes' if same else 'NO'} |")
    print("\nRay ÷ local at equal cores (seconds; goal ≤ 1.15):")
    for local, ray in PAIRS:
        print(f"- {ray} vs {local}: " + ", ".join(
            f"{s} {spread([seconds([r], ray, s) / seconds([r], local, s) for r in repeats])}" for s in stages))
    return failed


def same_rows(results: dict, name: str, stages: tuple[str, ...]) -> bool:
    return all(results[name]["rows"][stage].equals(results["local, 1 core"]["rows"][stage]) for stage in stages)


def checks(results: dict, stages: tuple[str, ...]) -> list[str]:
    """Every run wrote the local 1-core run's rows; the two-node runs used both nodes in every stage."""
    failed = [f"{name} wrote other output than the local 1-core run" for name in results
              if not same_rows(results, name, stages)]
    failed += [f"{name} used one node in {stage}" for name, r in results.items() if name.startswith(LOOPBACK)
               for stage in stages if r["metrics"][stage].get("ray_nodes") != 2]
    return failed


def report_marginal(fulls: list[dict], halves: list[dict], stages: tuple[str, ...]) -> None:
    def added(full: dict, half: dict, run: str, stage: str) -> float:
        return seconds([full], run, stage) - seconds([half], run, stage)

    def ratio(ray: str, local: str, stage: str) -> str:  # a stage too short here for a difference: –
        pairs = list(zip(fulls, halves))
        if any(added(*pair, local, stage) <= 0 for pair in pairs):
            return "–"
        return spread([added(*pair, ray, stage) / added(*pair, local, stage) for pair in pairs])

    print("\nRay ÷ local on the added half of the work, start-up cancelled (goal ≤ 1.15):")
    for local, ray in PAIRS:
        print(f"- {ray} vs {local}: " + ", ".join(f"{s} {ratio(ray, local, s)}" for s in stages))
    print("\nStart-up, 2 × half − full (s):")
    for run in fulls[0]:
        print(f"- {run}: " + ", ".join(f"{s} {2 * seconds(halves, run, s) - seconds(fulls, run, s):.1f}" for s in stages))


if __name__ == "__main__":
    main()
