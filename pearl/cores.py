"""The CPU cores this process may run on."""

from __future__ import annotations

import os


def available_cores() -> int:
    """The cores of this process's affinity mask (a container or `taskset` may allow fewer than the machine has)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
