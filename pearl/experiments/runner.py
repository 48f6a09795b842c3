"""Runs a table's experiments one after another in the workspace with `dvc exp run`.

Each experiment starts from HEAD's params.yaml, dvc.lock and metrics (else `-S` would pile up over
the last experiment's), and the workspace is back at HEAD's state at the end.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from pearl.errors import PearlError
from pearl.experiments import shell
from pearl.experiments.definitions import Run
from pearl.log import get_logger

log = get_logger("experiments")
_BASELINE_FILES = ("params.yaml", "dvc.lock", "metrics")  # metrics: the stages' git-tracked (cache: false) outputs


def command(run: Run, base_seed: int, targets: tuple[str, ...]) -> list[str]:
    return ["dvc", "exp", "run", "-n", run.name, *run.set_args(base_seed), *targets]


@contextmanager
def _from_head() -> Iterator[Callable[[], None]]:
    if shell.run(["git", "status", "--porcelain", "--", *_BASELINE_FILES]).strip():
        raise PearlError("params.yaml, dvc.lock or metrics/ has uncommitted changes: commit or stash them "
                         "(each experiment starts from HEAD's state)")

    # an interrupted `dvc exp run` can leave HEAD detached at the baseline: go back to the branch
    branch = shell.run(["git", "branch", "--show-current"]).strip()

    def reset() -> None:
        shell.run(["git", "checkout", "HEAD", "--", *_BASELINE_FILES])

    try:
        yield reset
    finally:
        if branch and shell.run(["git", "branch", "--show-current"]).strip() != branch:
            shell.run(["git", "checkout", "--quiet", branch])
        reset()
        # a clone need not hold every output of HEAD's lock (PEARL-base's, when only PEARL-small was
        # built): restore what the cache has, and leave absent what was absent before
        shell.run(["dvc", "checkout", "--quiet", "--allow-missing"])


def run_all(runs: list[Run], base_seed: int, targets: tuple[str, ...], done: set[str],
            dry_run: bool = False) -> list[str]:
    """Run each experiment not in `done` (finished on this baseline); the names run."""
    todo = [run for run in runs if run.name not in done]
    for run in runs:
        if run.name in done:
            log.info("%s: finished on this commit already, skipped", run.name)
    if dry_run:
        for run in todo:
            print(shlex.join(command(run, base_seed, targets)))
        return [run.name for run in todo]
    with _from_head() as reset:
        for i, run in enumerate(todo, 1):
            reset()
            cmd = command(run, base_seed, targets)
            log.info("[%d/%d] %s", i, len(todo), shlex.join(cmd))
            began = time.monotonic()
            try:
                shell.run(cmd, capture=False)
            except PearlError:
                raise PearlError(f"experiment {run.name} failed (rerun it alone: {shlex.join(cmd)})") from None
            log.info("%s done in %.0f s", run.name, time.monotonic() - began)
    return [run.name for run in todo]
