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
# Results: $OUT/results.tgz (this run's metrics, bench outputs and logs; scripts/gpu_common.sh). PEARL_GPU_DRY_RUN=1
# rehearses it on CPU (see there). PEARL_GPU_SEEDS lists the training seeds (train.seed; default 42): teacher and
# negatives run once, then each seed trains and is averaged in turn, its export benchmarked while the next one
# trains. Each system runs its test suite before its tune suite. PEARL_GPU_ALSO_SPELLING lists other
# average.spelling_weight values (e.g. "0"): each seed's training is exported once more per value, as
# pearl-base-wW-sSEED, and benchmarked after the default export, tune suite first.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/gpu_common.sh
set_=("${on_device[@]}" -S "model.backbone=$base" -S "model.teacher=$base" -S teacher.batch_size=1024 "${scale[@]}")

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
finish "${benched[@]}"
