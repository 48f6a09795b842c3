"""PEARL-base: the recipe on `pearl_base.backbone`, trained and exported by the *_pearl_base stages
beside PEARL-small, from the same data stages' output.

With `pearl_base.enabled` false, its stages write only a note (`NOT_TRAINED`) in their outputs, so
that the DAG keeps one shape and a small-only experiment costs seconds more than before. This module
lives outside pearl/train, which PEARL-small's training depends on as a whole: editing it must not
retrain PEARL-small.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING

from pearl.artifacts import atomic_dir, atomic_path, write_json
from pearl.errors import MissingModelError
from pearl.log import get_logger

if TYPE_CHECKING:  # the product verbs import check_trained; the params schema (pydantic) need not load with it
    from pearl.params import Params

log = get_logger("pearl-base")

FINETUNED = Path("models/pearl-base-finetuned")
EXPORT = Path("models/pearl-base")
METRICS = Path("metrics/pearl-base")
NOT_TRAINED = "NOT_TRAINED.json"
DISABLED = "pearl_base.enabled was false: `dvc exp run -S pearl_base.enabled=true` trains PEARL-base"


def recipe(params: Params) -> Params:
    """PEARL-small's params with PEARL-base's backbone, batch and steps; its checkpoints in a folder of its own."""
    base = params.pearl_base
    return dataclasses.replace(
        params,
        model=dataclasses.replace(params.model, backbone=base.backbone, prefix=base.prefix),
        train=dataclasses.replace(params.train, batch_size=base.batch_size, max_steps=base.max_steps,
                                  checkpoint_dir=f"{params.train.checkpoint_dir}-pearl-base"))


def write_not_trained(out_dir: Path, metrics: Path) -> dict:
    numbers = {"enabled": False, "note": DISABLED}
    with atomic_dir(out_dir) as staged:
        (staged / NOT_TRAINED).write_text(json.dumps(numbers) + "\n")
    write_json(numbers, metrics)
    log.info("%s; %s holds only %s", DISABLED, out_dir, NOT_TRAINED)
    return numbers


def check_trained(folder: str | Path) -> None:
    """A model folder that a small-only run left holding only its note fails in one line, saying why."""
    note = Path(folder) / NOT_TRAINED
    if note.is_file():
        try:
            why = json.loads(note.read_text())["note"]
        except (OSError, ValueError, KeyError, TypeError):
            why = f"{NOT_TRAINED} says so"
        raise MissingModelError(f"{folder}: holds no model ({why})")


def run_train(params: Params) -> dict:
    from pearl.train.stage import run_train as train

    if not params.pearl_base.enabled:
        with atomic_path(METRICS / "train_log.csv") as tmp:  # the plot DVC tracks: no rows
            tmp.write_text("step,loss\n")
        return write_not_trained(FINETUNED, METRICS / "train.json")
    return train(recipe(params), out_dir=FINETUNED, metrics=METRICS / "train.json", log_path=METRICS / "train_log.csv")


def run_average(params: Params) -> dict:
    from pearl.train.stage import run_average as average

    if not params.pearl_base.enabled:
        return write_not_trained(EXPORT, METRICS / "average.json")
    check_trained(FINETUNED)
    return average(recipe(params), source=FINETUNED, out_dir=EXPORT, metrics=METRICS / "average.json")
