#!/usr/bin/env bash
# Infinity's own environment for benchmarks/serve_anchor.py: infinity-emb 0.0.78 wants numpy<2 and
# sentence-transformers<4, which pearl's environment outgrew. torch is pinned to the CPU build pip
# finds on this machine's disk; unpinned, pip would fetch a CUDA build of several GB.
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -x .infinity-venv/bin/python ]; then
    python3.11 -m venv .infinity-venv
fi
.infinity-venv/bin/pip install -q --disable-pip-version-check "torch==2.13.0" "infinity-emb[server,torch]==0.0.78"
