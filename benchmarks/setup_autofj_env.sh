#!/usr/bin/env bash
# AutoFJ's own environment for benchmarks/join_autofj.py: autofj 0.0.6 breaks on numpy 2
# (np.array_split of a DataFrame), so it runs with the versions it was released against.
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -x .autofj-venv/bin/python ]; then
    python3.11 -m venv .autofj-venv
fi
.autofj-venv/bin/pip install -q "autofj==0.0.6" "numpy<2" "pandas<2.1"
