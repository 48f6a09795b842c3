#!/usr/bin/env bash
# Set up (idempotent), then run the test suite. CI runs exactly this through .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --tests
# Two pytest-xdist workers for CI's two cores; `-n 0` runs everything in this process.
exec .venv/bin/python -m pytest -q -n 2 "$@"
