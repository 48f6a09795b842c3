#!/usr/bin/env bash
# Set up (idempotent), then run the test suite. CI runs exactly this through .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --tests
exec .venv/bin/python -m pytest -q "$@"
