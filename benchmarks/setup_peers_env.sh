#!/usr/bin/env bash
# The peers' own environment for benchmarks/peers.py: Splink on DuckDB, goldenmatch, rapidfuzz,
# string_grouper and polyfuzz, each at the version the peers table names, apart from pearl's pins
# (goldenmatch and Splink bring their own pandas and numpy). goldenmatch imports polars on some inputs
# (AutoFJ's datasets) without declaring it but in its extra "all". polyfuzz imports matplotlib,
# whose 3.9 and later break its plotting import, so matplotlib stays at 3.8.
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -x .peers-venv/bin/python ]; then
    python3.11 -m venv .peers-venv
fi
.peers-venv/bin/pip install -q --disable-pip-version-check \
    "splink==5.0.0" "duckdb" "goldenmatch==3.22.0" "string_grouper==0.8.0" "polyfuzz==0.4.3" \
    "rapidfuzz==3.14.6" "polars>=1.0" "matplotlib==3.8.*" "psutil"
.peers-venv/bin/pip freeze --disable-pip-version-check > .peers-venv/versions.txt
