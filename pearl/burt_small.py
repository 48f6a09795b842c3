"""BURT-small: model.backbone trained with BURT's three objectives alone, the recipe of its paper on our offline
data (pearl.train.burt_pairs), by the *_burt_small stages beside PEARL-small, from the same data stages' output.

The same training and export code as PEARL-small's, with PEARL's losses, character encoder, weight averaging and
3-gram block off and BURT's learning-rate schedule. Like pearl/pearl_base.py this module lives outside pearl/train,
which PEARL-small's training depends on as a whole: editing it must not retrain PEARL-small.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pearl.params import Params

FINETUNED = Path("models/burt-small-finetuned")
EXPORT = Path("models/burt-small")
METRICS = Path("metrics/burt-small")


def recipe(params: Params) -> Params:
    """PEARL-small's params with BURT-small's objectives, pooling, steps and schedule; checkpoints in their own folder."""
    b = params.burt_small
    return dataclasses.replace(
        params,
        model=dataclasses.replace(params.model, char_encoder=False, pooling=b.pooling),
        train=dataclasses.replace(params.train, contrastive_weight=0.0, type_weight=0.0, distill_weight=0.0,
                                  view_min_cos=None, max_steps=b.max_steps, lr_schedule="warmup_linear",
                                  checkpoint_dir=f"{params.train.checkpoint_dir}-burt-small"),
        burt=dataclasses.replace(params.burt, nli_weight=b.nli_weight, pi_weight=b.pi_weight, ptc_weight=b.ptc_weight),
        average=dataclasses.replace(params.average, alpha=1.0, spelling_weight=0.0))


def run_train(params: Params) -> dict:
    from pearl.train.stage import run_train as train

    return train(recipe(params), out_dir=FINETUNED, metrics=METRICS / "train.json", log_path=METRICS / "train_log.csv")


def run_average(params: Params) -> dict:
    """The export, as `average` writes PEARL-small's, at alpha 1: BURT does not average weights."""
    from pearl.train.stage import run_average as average

    return average(recipe(params), source=FINETUNED, out_dir=EXPORT, metrics=METRICS / "average.json")
