#!/usr/bin/env bash
# Set up (idempotent), then run the test suite. CI runs exactly this through .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --tests
# Two pytest-xdist workers for CI's two cores; `-n 0` runs everything in this process.
# One math thread for each worker and each stage it starts: with torch's and BLAS's default of one per core, the
# two workers' threads wait on one another, and two training runs side by side took twice as long as one thread each
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" MKL_NUM_THREADS="${MKL_NUM_THREADS:-1}"
exec .venv/bin/python -m pytest -q -n 2 "$@"
