"""`dvc` and `git` as subprocesses, from this Python environment: `dvc` and the stages' `python`
are the ones installed beside the running interpreter, activated or not."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pearl.errors import PearlError


def _env() -> dict[str, str]:
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def run(args: list[str], capture: bool = True) -> str:
    """Run a command; its stdout, or a one-line PearlError with its last stderr line."""
    done = subprocess.run(args, capture_output=capture, text=True, env=_env())
    if done.returncode != 0:
        lines = (done.stderr or "").strip().splitlines()
        raise PearlError(f"`{' '.join(args[:3])}` failed: {lines[-1] if lines else f'exit {done.returncode}'}")
    return done.stdout or ""


def git_show(rev: str, path: str) -> str | None:
    """A file of a commit, or None when the commit has no such file."""
    done = subprocess.run(["git", "show", f"{rev}:{path}"], capture_output=True, text=True)
    return done.stdout if done.returncode == 0 else None
