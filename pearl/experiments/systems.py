"""What a table's rows train, PEARL-small (the default) or BURT-small (`system: burt-small` in the table file):
the params that train it, the stages an experiment runs, and where each column's scores and their model are.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pearl.bench.task_names import (ALL_TASKS, BURT_TABLE_TASKS, BURT_TASKS, BURT_TUNE_TABLE_TASKS, BURT_TUNE_TASKS,
                                    TUNE_TASKS)
from pearl.params import Params


@dataclass(frozen=True)
class Column:
    folder: str  # where the task files are
    stage: Callable[[str], str]  # task → the dvc.lock stage that wrote its file
    tasks: tuple[str, ...]
    trained: bool  # the trained model's scores (else the untuned backbone's)


@dataclass(frozen=True)
class System:
    name: str
    export: str  # the model the trained columns' stages must have read
    export_stage: str  # the stage that writes it
    metrics_dir: str  # its train.json and average.json
    columns: dict[str, Column]  # tune, tune_base, test, test_base
    recipe: Callable[[Params], Params]  # the params it trains with, from a run's params

    def targets(self, suite: str) -> tuple[str, ...]:
        """`dvc exp run` targets of a suite (tune or test): stage groups, or single stages."""
        if self.name == "pearl-small":
            return {"tune": ("bench_tune_base", "bench_tune"), "test": ("bench_base", "bench")}[suite]
        return tuple(column.stage(task) for key in (f"{suite}_base", suite) for column in [self.columns[key]]
                     for task in column.tasks)


def _burt_small_recipe(params: Params) -> Params:
    from pearl.burt_small import recipe

    return recipe(params)


def _burt_stage(system: str, suite: str) -> Callable[[str], str]:
    """BURT's own tasks run in the bench_*burt_tasks_<system> stages, the suites' tasks in the system's bench stages."""
    tune = suite == "tune"
    suite_stage = {("base", False): "bench_base", ("base", True): "bench_tune_base",
                   ("burt-small", False): "bench_burt_small", ("burt-small", True): "bench_tune_burt_small"}[system, tune]

    def stage(task: str) -> str:
        if task in (BURT_TUNE_TASKS if tune else BURT_TASKS):
            return f"bench{'_tune' if tune else ''}_burt_tasks_{system.replace('-', '_')}@{task}"
        return f"{suite_stage}@{task}"

    return stage


SYSTEMS = {
    "pearl-small": System(
        "pearl-small", "models/pearl", "average", "metrics",
        {"tune": Column("metrics/tune/model", "bench_tune@{}".format, TUNE_TASKS, True),
         "tune_base": Column("metrics/tune/base", "bench_tune_base@{}".format, TUNE_TASKS, False),
         "test": Column("metrics/bench/model", "bench@{}".format, ALL_TASKS, True),
         "test_base": Column("metrics/bench/base", "bench_base@{}".format, ALL_TASKS, False)},
        lambda params: params),
    "burt-small": System(
        "burt-small", "models/burt-small", "average_burt_small", "metrics/burt-small",
        {"tune": Column("metrics/tune/burt-small", _burt_stage("burt-small", "tune"), BURT_TUNE_TABLE_TASKS, True),
         "tune_base": Column("metrics/tune/base", _burt_stage("base", "tune"), BURT_TUNE_TABLE_TASKS, False),
         "test": Column("metrics/bench/burt-small", _burt_stage("burt-small", "test"), BURT_TABLE_TASKS, True),
         "test_base": Column("metrics/bench/base", _burt_stage("base", "test"), BURT_TABLE_TASKS, False)},
        _burt_small_recipe),
}
