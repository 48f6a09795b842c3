# Sourced by scripts/gpu_train_base.sh, gpu_distill_small.sh and gpu_join_models.sh on a GPU machine lent by the
# device tool, from the repository's root: joins scripts/gpu_pack.sh's pieces from /tmp/stage, installs their
# wheels, casts both backbones back to fp32 into $models and copies the front half's data into data/. Then defines
# `stamp`, `pearl`, `bench` and `run_stage` (which reads the caller's `set_`), and saves $res to $OUT/results.tgz
# every 20 s, so that a call stopped at its limit still returns what it measured; `finish PID...` waits for them and
# saves it last.
#
# PEARL_GPU_DRY_RUN=1 rehearses on CPU with this checkout's .venv: a few steps, two tasks per suite, and
# all-MiniLM-L6-v2 in place of all-mpnet-base-v2 (whose teacher pass alone takes 16 min on 2 cores). Its stages
# overwrite data/, models/, checkpoints/ and metrics/: rehearse in a copy of the checkout (the .venv linked in).
out=${OUT:-/tmp/gpu-out}; res=/tmp/gpu-results; work=/tmp/gpu-work; models=/tmp/gpu-models; trained=/tmp/gpu-trained
rm -rf "$res" && mkdir -p "$out" "$res"
stamp() { echo "$(date +%T) $*" | tee -a "$res/timeline.txt"; }

if [ "${PEARL_GPU_DRY_RUN:-0}" = 1 ]; then
  py=$PWD/.venv/bin/python device=cpu base=all-MiniLM-L6-v2   # absolute: the arms run in their own folders
  scale=(-S train.batch_size=16 -S train.max_steps=3 -S train.precision=fp32)
  tasks=(--tasks turney,bird) tune_tasks=(--tasks stsb_dev,wiki_aliases)
else
  py=python3 device=cuda base=all-mpnet-base-v2
  scale=(-S train.batch_size=512 -S train.max_steps=null -S train.precision=bf16)
  tasks=() tune_tasks=()
fi

stamp "joining $(ls /tmp/stage/piece-* | wc -l) pieces"
rm -rf "$work" && mkdir -p "$work" && cat /tmp/stage/piece-* | tar -x -C "$work" || { stamp "error: the pieces do not join"; exit 1; }
if [ "$py" = python3 ] && [ ! -e /tmp/site/.complete ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    "$work"/wheels/*.whl && touch /tmp/site/.complete || exit 1
fi
[ "$py" = python3 ] && export PYTHONPATH=/tmp/site
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
{ nvidia-smi -L; $py -c "import torch, transformers, sentence_transformers as st; print(torch.__version__, transformers.__version__, st.__version__)"; } > "$res/env.txt" 2>&1
for model in all-mpnet-base-v2 all-MiniLM-L6-v2; do
  $py scripts/cast_weights.py fp32 "$work/models/$model" "$models/$model" || exit 1
done
base=$models/$base
cp -r "$work/data/." data/

on_device=(-S "base.device=$device")
pearl() { $py -c 'import sys; from pearl.cli import main; main(sys.argv[1:])' "$@"; }
bench() {  # NAME MODEL THREADS SUITE
  local chosen=("${tasks[@]}"); [ "$4" = tune ] && chosen=("${tune_tasks[@]}")
  OMP_NUM_THREADS=$3 pearl bench --model "$2" --suite "$4" "${chosen[@]}" --out "$res/$4/$1" "${on_device[@]}" \
    > "$res/bench-$1-$4.log" 2>&1 && stamp "bench $1 $4 done" || stamp "bench $1 $4 FAILED"
}
run_stage() {  # STAGE NAME [-S KEY=VALUE]...: the caller's set_, then these; metrics/STAGE.json is kept as $res/NAME.json
  local stage=$1 name=$2; shift 2
  stamp "$name"
  OMP_NUM_THREADS=${STAGE_THREADS:-8} pearl "$stage" "${set_[@]}" "$@" > "$res/$name.log" 2>&1 \
    || { stamp "error: $name failed"; return 1; }
  cp "metrics/$stage.json" "$res/$name.json"
}
( while sleep 20; do tar -czf "$out/results.tgz.part" -C "$res" . && mv "$out/results.tgz.part" "$out/results.tgz"; done ) &
saver=$!
finish() {  # PID...: the background benches (a bare `wait` would wait for the saver too)
  [ $# -gt 0 ] && wait "$@"
  stamp done
  kill $saver
  tar -czf "$out/results.tgz" -C "$res" .
}
