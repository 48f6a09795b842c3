#!/usr/bin/env bash
# Set up (idempotent), then reproduce the DVC pipeline on params.yaml.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
exec dvc repro "$@"
