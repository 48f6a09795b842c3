"""Stages stopped by SIGTERM or killed with -9 under `dvc repro`, then re-run; and `dvc repro -f` twice.

Each stage is stopped a fixed time after its process starts. Afterwards no output is half-written,
and a plain `dvc repro` of the stage finishes with the same bytes as the uninterrupted run. Each
front-half stage also runs forced in a process of its own once and gives the bytes of the project's
build: after its kill -9 for the stopped stages (train's resumes from what the stopped run saved), in
test_dvc_repro_twice_gives_the_same_bytes for the others.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import time
from pathlib import Path

import polars as pl
import psutil
import pytest
import yaml

from tests.reliability.conftest import FRONT_HALF, commit_all, connections, offline_env

pytestmark = pytest.mark.slow

# timings and what depends only on the machine: every other metric must repeat exactly
TIMING_KEYS = ("seconds", "_per_s", "_s_per_step", "threads", "device")


def dvc(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(["dvc", *args], cwd=root, env=offline_env(root), capture_output=True, text=True)
    assert not check or result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


def locked_outputs(root: Path) -> dict[str, str]:
    """Each output's hash in dvc.lock, metrics files left out (they hold timings)."""
    lock = yaml.safe_load((root / "dvc.lock").read_text())
    return {out["path"]: out["md5"] for stage in lock["stages"].values() for out in stage.get("outs", [])
            if not out["path"].startswith("metrics/")}


def untimed(path: Path) -> dict:
    return {key: value for key, value in json.loads(path.read_text()).items() if not any(t in key for t in TIMING_KEYS)}


def leftovers(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for folder in ("data", "models", "metrics", "checkpoints")
                  if (root / folder).exists()
                  for p in (root / folder).rglob("*") if p.name.endswith((".tmp", ".staging")))


@pytest.fixture(scope="module")
def repo(project, tmp_path_factory) -> Path:
    """The scratch project as a git + DVC repository whose front half is recorded as up to date."""
    root = tmp_path_factory.mktemp("dvc") / "project"
    shutil.copytree(project.root, root)  # a real copy: DVC moves outputs into its cache
    # the bench is stopped once its probe seeds are under way (STAGES): the seeds left keep it at work when
    # the stop lands, and every forced re-run pays for all of them
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["bench"]["ppdb_seeds"] = 4
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    commit_all(root)
    dvc(root, "commit", "-f", *FRONT_HALF)
    dvc(root, "repro", "--single-item", "bench_base@ppdb")
    return root


def untimed_metrics(root: Path) -> dict[str, object]:
    """Every metrics file (JSON, and the training log's CSV) without its timing fields."""
    found = {str(path): untimed(path) for path in (root / "metrics").rglob("*.json")}
    for path in (root / "metrics").rglob("*.csv"):
        table = pl.read_csv(path)
        found[str(path)] = table.select([c for c in table.columns if not any(t in c for t in TIMING_KEYS)]).to_dicts()
    return found


def test_dvc_repro_twice_gives_the_same_bytes(repo):
    """The front half's stages that no stop case re-runs from scratch, and a benchmark of the trained model (the
    clustering one: KMeans is seeded too), run again, each in its own process: every Parquet, meta file and model
    file repeats byte for byte, every metric apart from timings."""
    dvc(repo, "repro", "--single-item", "bench@conll2003")
    first, metrics = locked_outputs(repo), untimed_metrics(repo)
    # a stopped stage that does not resume runs from scratch in its kill -9 case; train resumes there
    dvc(repo, "repro", "-f", "--single-item", *(stage for stage in FRONT_HALF if stage not in STAGES or STAGES[stage][3]))
    dvc(repo, "repro", "-f", "--single-item", "bench@conll2003")  # unforced, DVC would see the same model and skip it
    assert locked_outputs(repo) == first
    assert untimed_metrics(repo) == metrics
    assert {"train_log.csv", "conll2003.json", "ppdb.json"} <= {Path(p).name for p in metrics}
    assert connections(repo) == []


# stage → (its script, a log line that shows its work under way, seconds to wait after it, whether a re-run
# resumes from what the stopped one saved: train's checkpoints)
STAGES = {"parse": ("stages/parse.py", "pearl.parse: parsing", 0.1, False),
          "augment": ("stages/augment.py", "pearl.augment:", 1.0, False),
          "candidates": ("stages/candidates.py", "pearl.candidates: shared words", 0.2, False),
          "train": ("stages/train.py", "pearl.train: training", 1.0, True),
          # pearl's own progress bar, not a library's log line (pearl turns those off): the vectors are made. The
          # bar's first line reaches the test with its first update, about a seed in
          "bench_base@ppdb": ("stages/bench.py", "probe seeds", 0.0, False)}


def _metrics(root: Path, stage: str) -> Path:
    """The stage's metrics JSON, which DVC removes before the stage runs and the stage writes last."""
    outs = yaml.safe_load((root / "dvc.lock").read_text())["stages"][stage]["outs"]
    [path] = [out["path"] for out in outs if out["path"].startswith("metrics/") and out["path"].endswith(".json")]
    return root / path


def _stage_process(dvc_run: subprocess.Popen, script: str) -> psutil.Process:
    for child in psutil.Process(dvc_run.pid).children(recursive=True):
        try:
            command = child.cmdline()
        except psutil.NoSuchProcess:
            continue
        if command and "python" in Path(command[0]).name and script in command:
            return child
    raise AssertionError(f"no process runs {script}")


# every stage killed with -9, and the front half's also stopped by SIGTERM; the bench's SIGTERM (12 s) would land in
# the same CLI handler, in the same Python loop, as the stages' before it
STOPS = [(stage, stop) for stage in STAGES for stop in (signal.SIGTERM, signal.SIGKILL)
         if stop == signal.SIGKILL or stage in FRONT_HALF]


@pytest.mark.parametrize("stage, stop", STOPS, ids=[f"{stage}-{'SIGTERM' if stop == signal.SIGTERM else 'kill -9'}"
                                                    for stage, stop in STOPS])
def test_a_stopped_stage_leaves_no_partial_output_and_reruns_to_the_same_bytes(repo, stage, stop):
    script, marker, delay, _ = STAGES[stage]
    outputs = locked_outputs(repo)
    score = json.loads((repo / "metrics/bench/base/ppdb.json").read_text())["score"]
    run = subprocess.Popen(["dvc", "repro", "-f", "--single-item", stage], cwd=repo, env=offline_env(repo),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    log = []
    for line in run.stdout:
        log.append(line)
        if marker in line:
            break
    time.sleep(delay)
    process = _stage_process(run, script)
    process.send_signal(stop)
    rest, _ = run.communicate(timeout=300)
    log = "".join(log) + rest
    assert run.returncode != 0, log[-3000:]
    assert not _metrics(repo, stage).exists(), f"{stage} had finished when the stop came: give it more work"
    if stop == signal.SIGTERM:
        assert "error: stopped by SIGTERM" in log and "Traceback" not in log, log[-3000:]
        assert leftovers(repo) == []
    dvc(repo, "repro", "--single-item", stage)  # what a user types: DVC checks the locked outputs out of its cache
    assert locked_outputs(repo) == outputs
    assert json.loads((repo / "metrics/bench/base/ppdb.json").read_text())["score"] == score
    # SIGTERM left nothing behind: the kill -9 case's forced re-run (train's resumed) is this one's. The bench's
    # only output is its metrics, which DVC does not cache: the plain re-run above ran it from scratch
    if stop == signal.SIGTERM or stage.startswith("bench"):
        return
    # forced, so that the stage really runs: it clears what the stopped run left, and its bytes are compared
    dvc(repo, "repro", "-f", "--single-item", stage)
    assert leftovers(repo) == []
    assert locked_outputs(repo) == outputs
    assert json.loads((repo / "metrics/bench/base/ppdb.json").read_text())["score"] == score
