"""Running benchmark tasks for one encoder (or the string baseline) and recording their metrics."""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path

from pearl.artifacts import write_json
from pearl.embedder import Embedder
from pearl.bench.probe_settings import ProbeSettings
from pearl.bench.task_names import STRING_TASKS
from pearl.cores import available_cores
from pearl.bench.tasks import TASKS, BenchContext
from pearl.device import resolve_device
from pearl.errors import PearlError
from pearl.log import Stopwatch, get_logger
from pearl.params import Params

log = get_logger("bench")
KB_HUB_FILES = {"yago": "data/kb/yago_kb.tsv", "umls": "data/kb/umls_kb.tsv"}


def resolve_kb(setting: str | None, task: str, hf_dataset: str) -> Path | None:
    """None: use the test file's names; "hub": download the paper's dictionary; else a path."""
    if setting is None:
        return None
    if setting != "hub":
        return Path(setting)
    from huggingface_hub import hf_hub_download

    try:
        return Path(hf_hub_download(hf_dataset, KB_HUB_FILES[task], repo_type="dataset"))
    except Exception as error:
        raise PearlError(
            f"bench.{task}_kb=hub: {KB_HUB_FILES[task]} of {hf_dataset} could not be downloaded "
            f"({type(error).__name__}); give a local path or null"
        ) from None


def build_context(params: Params, model: str | None, prefix: str, param: str = "--model") -> BenchContext:
    """`model` is an HF id or directory to embed with, or None for the string baseline; `param` pointed to it."""
    b = params.bench
    load_embedder = None if model is None else partial(_load_embedder, params, model, prefix, param)
    return BenchContext(
        data_dir=Path(b.data_dir),
        short_text_dir=Path(b.short_text_dir),
        general_dir=Path(b.general_dir),
        tune_dir=Path(b.tune_dir),
        burt_dir=Path(b.burt_dir),
        seed=params.base.seed,
        probe=ProbeSettings(lrs=tuple(b.probe_lrs), batch_size=b.probe_batch_size, max_epochs=b.probe_max_epochs,
                            patience=b.probe_patience, device=params.base.device),
        ppdb_seeds=b.ppdb_seeds,
        atis_seeds=b.atis_seeds,
        kmeans_inits=b.kmeans_inits,
        kb={task: resolve_kb(getattr(b, f"{task}_kb"), task, b.hf_dataset) for task in KB_HUB_FILES},
        load_embedder=load_embedder,
    )


def _load_embedder(params: Params, model: str, prefix: str, param: str) -> Embedder:
    """The encoder, on a task's first use: torch loads here, once the task has read and checked its files."""
    if not os.environ.get("OMP_NUM_THREADS"):
        # torch's default is the physical cores; an explicit OMP_NUM_THREADS (side-by-side runs) wins
        import torch

        torch.set_num_threads(available_cores())
    b = params.bench
    return Embedder(model, prefix, b.batch_size, b.max_length, resolve_device(params.base.device), param)


def run_task(ctx: BenchContext, task: str) -> dict:
    if task not in TASKS:
        raise PearlError(f"unknown benchmark task {task!r} (valid: {', '.join(TASKS)})")
    if ctx.load_embedder is None and task not in STRING_TASKS:
        raise PearlError(f"the string baseline cannot run {task!r}: it needs vectors (string tasks: {', '.join(STRING_TASKS)})")
    clock = Stopwatch()
    result = TASKS[task](ctx)
    result["seconds"] = round(clock.seconds, 1)
    log.info("%s: %s", task, result)
    return result


def run_tasks(ctx: BenchContext, tasks: list[str], out_dir: Path | None) -> dict[str, dict]:
    results = {}
    for task in tasks:
        results[task] = run_task(ctx, task)
        if out_dir is not None:
            write_json(results[task], out_dir / f"{task}.json")
    return results


def run_reference(params: Params, models: list[str], task: str, out: Path) -> dict[str, dict]:
    """One task for each off-the-shelf reference model → {model id: result} in one metrics file.

    A reference model gets no prefix: the ids here are sentence-transformers models that take none."""
    results = {model: run_task(build_context(params, model, "", "bench.reference_models"), task) for model in models}
    write_json(results, out)
    return results
