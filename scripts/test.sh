#!/usr/bin/env bash
# Set up (idempotent), then run the test suite. CI runs exactly this through .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --tests
# Two workers for CI's two cores; the reliability tests share one scratch project, so they stay on one
# worker (loadgroup) instead of each worker building its own. `-n 0` runs everything in this process.
exec .venv/bin/python -m pytest -q -n 2 --dist loadgroup "$@"
