#!/usr/bin/env bash
# On a GPU machine lent by the device tool: train PEARL-base at the paper's scale (batch 512, bf16 autocast,
# 2 epochs; backbone all-mpnet-base-v2) with the pipeline's own stages, then benchmark it beside its untuned
# peers, all-mpnet-base-v2 and all-MiniLM-L6-v2, cast the same way (fp16 in transit, fp32 here).
#
#   here:  dvc repro candidates augment typing && bash scripts/gpu_pack.sh
#   there: one call per .gpu/piece-NN, each `mkdir -p /tmp/stage && cp .gpu/piece-* /tmp/stage/`, in quick
#          succession (/tmp stays while the machine is warm); the last call runs this script. The wheels lead
#          the pack, so the call of piece-02 can already install them and import pearl's stages:
#            (cat /tmp/stage/piece-0[0-2] | tar -x -C /tmp/smoke wheels; true) && python3 -m pip install -q \
#              --no-index --no-deps --target /tmp/site /tmp/smoke/wheels/*.whl && touch /tmp/site/.complete
#   here:  python scripts/gpu_table.py UNPACKED_RESULTS metrics/gpu/NAME   (the record: run.json, run.md)
#
# Results: $OUT/results.tgz (this run's metrics, bench outputs and logs), refreshed every 20 s so that a run
# stopped at its limit still returns what it measured. PEARL_GPU_DRY_RUN=1 rehearses it on CPU with this
# checkout's .venv: a few steps, two tasks per suite (its stages overwrite data/ and metrics/ here: `git checkout
# metrics` and `dvc checkout` after). PEARL_GPU_SEEDS lists the training seeds (train.seed; default 42): teacher
# and negatives run once, then each seed trains and is averaged in turn, its export benchmarked while the next
# one trains. Each system runs its test suite before its tune suite. PEARL_GPU_ALSO_SPELLING lists other
# average.spelling_weight values (e.g. "0"): each seed's training is exported once more per value, as
# pearl-base-wW-sSEED, and benchmarked after the default export, tune suite first.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/gpu-out}; res=/tmp/gpu-results; work=/tmp/gpu-work; models=/tmp/gpu-models; trained=/tmp/gpu-trained
rm -rf "$res" && mkdir -p "$out" "$res"
stamp() { echo "$(date +%T) $*" | tee -a "$res/timeline.txt"; }

if [ "${PEARL_GPU_DRY_RUN:-0}" = 1 ]; then
  py=.venv/bin/python device=cpu backbone=all-MiniLM-L6-v2   # mpnet's teacher pass alone takes 16 min on 2 cores
  scale=(-S train.batch_size=16 -S train.max_steps=3 -S train.precision=fp32)
  tasks=(--tasks turney,bird) tune_tasks=(--tasks stsb_dev,wiki_aliases)
else
  py=python3 device=cuda backbone=all-mpnet-base-v2
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
cp -r "$work/data/." data/

base=$models/$backbone
shared=(-S "bench.data_dir=$work/shared/pearl-benchmark" -S "bench.tune_dir=$work/shared/pearl-tune"
        -S "bench.general_dir=$work/shared/general-similarity" -S "bench.short_text_dir=$work/shared/short-text"
        -S "base.device=$device")
set_=("${shared[@]}" -S "model.backbone=$base" -S "model.teacher=$base" -S teacher.batch_size=1024 "${scale[@]}")
pearl() { $py -c 'import sys; from pearl.cli import main; main(sys.argv[1:])' "$@"; }
bench() {  # NAME MODEL THREADS SUITE
  local chosen=("${tasks[@]}"); [ "$4" = tune ] && chosen=("${tune_tasks[@]}")
  OMP_NUM_THREADS=$3 pearl bench --model "$2" --suite "$4" "${chosen[@]}" --out "$res/$4/$1" "${shared[@]}" \
    > "$res/bench-$1-$4.log" 2>&1 && stamp "bench $1 $4 done" || stamp "bench $1 $4 FAILED"
}
( while sleep 20; do tar -czf "$out/results.tgz.part" -C "$res" . && mv "$out/results.tgz.part" "$out/results.tgz"; done ) &
saver=$!

# The peers need no training: they run beside it, at a lower CPU priority than the trained seeds' chain.
# PEARL_GPU_PEERS="" leaves them out: their scores repeat from run to run, and with three seeds (six exports with
# PEARL_GPU_ALSO_SPELLING) the benches, not training, fill the call (metrics/gpu/pearl-base-spelling-3seeds-h100).
benched=()
for peer in ${PEARL_GPU_PEERS-all-mpnet-base-v2 all-MiniLM-L6-v2}; do
  ( renice -n 10 $BASHPID > /dev/null; bench $peer "$models/$peer" 3 test; bench $peer "$models/$peer" 3 tune ) &
  benched+=($!)
done
rm -rf "$trained"
rm -f metrics/teacher.json metrics/negatives.json metrics/train.json metrics/train_log.csv metrics/average.json
run_stage() {  # STAGE NAME [-S KEY=VALUE]...: metrics/STAGE.json is kept as $res/NAME.json
  local stage=$1 name=$2; shift 2
  stamp "$name"
  OMP_NUM_THREADS=8 pearl "$stage" "${set_[@]}" "$@" > "$res/$name.log" 2>&1 || { stamp "error: $name failed"; return 1; }
  cp "metrics/$stage.json" "$res/$name.json"
}
also=(${PEARL_GPU_ALSO_SPELLING-})
if run_stage teacher teacher && run_stage negatives negatives; then
  for seed in ${PEARL_GPU_SEEDS:-42}; do
    rm -rf models/pearl models/finetuned checkpoints  # a checkpoint left by the last seed would be resumed
    run_stage train "train-s$seed" -S "train.seed=$seed" && run_stage average "average-s$seed" -S "train.seed=$seed" || break
    cp metrics/train_log.csv "$res/train_log-s$seed.csv"
    mkdir -p "$trained" && mv models/pearl "$trained/pearl-base-s$seed"
    for w in "${also[@]}"; do
      run_stage average "average-w$w-s$seed" -S "train.seed=$seed" -S "average.spelling_weight=$w" \
        && mv models/pearl "$trained/pearl-base-w$w-s$seed"
    done
    ( bench "pearl-base-s$seed" "$trained/pearl-base-s$seed" 4 test
      bench "pearl-base-s$seed" "$trained/pearl-base-s$seed" 4 tune
      for w in "${also[@]}"; do bench "pearl-base-w$w-s$seed" "$trained/pearl-base-w$w-s$seed" 4 tune; done
      for w in "${also[@]}"; do bench "pearl-base-w$w-s$seed" "$trained/pearl-base-w$w-s$seed" 4 test; done ) & benched+=($!)
  done
fi
wait "${benched[@]}"
stamp done
kill $saver
tar -czf "$out/results.tgz" -C "$res" .
