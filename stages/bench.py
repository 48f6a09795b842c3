"""DVC entry point of the `bench_base` and `bench_string` stages: `bench.py SYSTEM TASK`."""

import sys

from pearl.cli import main

if __name__ == "__main__":
    main(["bench-task", *sys.argv[1:]])
