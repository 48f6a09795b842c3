#!/usr/bin/env bash
# On a GPU machine lent by the device tool: PEARL-small and PEARL-base in issue 40's join table. Trains, with the
# pipeline's own stages on the default data, for each seed of PEARL_GPU_SEEDS (default "42 1"):
#   pearl-base   all-mpnet-base-v2 at the paper's scale (batch 512, bf16, 2 epochs);
#   pearl-small  all-MiniLM-L6-v2 at the recipe of the default `dvc repro` on 2 cores (batch 64, 540 steps, fp32);
# each exported as the default (average stage's params), then joins the 50 AutoFJ datasets with each export and
# with the untuned peers and `string` beside them (benchmarks/join_autofj.py, default flags, AutoFJ's committed
# outputs). The joins run beside the trainings and each other, so their seconds are no speed figure. PEARL-small's
# seed-42 export comes back in fp16 pieces ($OUT/pearl-small-s42.tar.NN), so that its 2-core seconds can be measured
# where AutoFJ's were.
#
#   here:  bash scripts/gpu_pack.sh, then the pieces as in scripts/gpu_train_base.sh; the last call runs this
#   here:  python scripts/gpu_table.py UNPACKED_RESULTS metrics/gpu/NAME, and the join tables are in
#          UNPACKED_RESULTS/join.md (python benchmarks/join_autofj.py --tables-from UNPACKED_RESULTS/join/*.json)
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/gpu_common.sh
repo=$PWD arms=/tmp/gpu-arms joins=/tmp/gpu-joins seeds=(${PEARL_GPU_SEEDS:-42 1})
if [ "$device" = cuda ]; then
  small_scale=(-S train.batch_size=64 -S train.max_steps=540 -S train.precision=fp32 -S train.num_workers=2)
  datasets=50
else
  small_scale=("${scale[@]}") datasets=2
fi
set_=("${on_device[@]}" -S "model.teacher=$base" -S teacher.batch_size=1024)
rm -rf "$arms" "$joins" models checkpoints && mkdir -p "$arms" "$joins" "$res/join"

join_with() {  # NAME: benchmarks/join_autofj.py on $joins/NAME (a link to the model), so that its rows are named NAME
  ( cd "$joins" && OMP_NUM_THREADS=2 $py "$repo/benchmarks/join_autofj.py" --models "$1" --datasets $datasets \
      --out "$res/join/$1.json" > "$res/join-$1.log" 2>&1 ) && stamp "join $1 done" || stamp "join $1 FAILED"
}
model_arm() {  # NAME SEED BACKBONE [-S KEY=VALUE]...: trains and exports in $arms/NAME-sSEED, then joins with it
  local name=$1-s$2 seed=$2 backbone=$3; shift 3
  local set_=("${set_[@]}" -S "model.backbone=$backbone" -S "train.seed=$seed" "$@")
  mkdir -p "$arms/$name/metrics" && cp params.yaml "$arms/$name/" && cp -r data "$arms/$name/data" \
    || { stamp "error: $name's folder could not be made"; return 1; }
  ( cd "$arms/$name" && export STAGE_THREADS=2 && run_stage train "train-$name" && run_stage average "average-$name" \
    && cp metrics/train_log.csv "$res/train_log-$name.csv" ) || return 1
  ln -s "$arms/$name/models/pearl" "$joins/$name" && join_with "$name"
}

run_stage teacher teacher && run_stage negatives negatives || { finish; exit 1; }
jobs_=()
for peer in all-MiniLM-L6-v2 all-mpnet-base-v2; do
  ln -s "$models/$peer" "$joins/$peer" && { join_with "$peer" & jobs_+=($!); }
done
join_with string & jobs_+=($!)
for seed in "${seeds[@]}"; do
  model_arm pearl-base "$seed" "$base" "${scale[@]}" & jobs_+=($!)
  model_arm pearl-small "$seed" "$models/all-MiniLM-L6-v2" "${small_scale[@]}" & jobs_+=($!)
done
wait "${jobs_[@]}"
$py benchmarks/join_autofj.py --tables-from "$res"/join/*.json --markdown "$res/join.md" > "$res/join-tables.log" 2>&1 \
  || stamp "error: the join tables failed"
small=$arms/pearl-small-s${seeds[0]}/models/pearl
# fp16, in pieces under the 16 MiB a returned file may have
$py scripts/cast_weights.py fp16 "$small" /tmp/pearl-small-fp16 \
  && tar -C /tmp -cf - pearl-small-fp16 | split -b 15m -d - "$out/pearl-small-s${seeds[0]}.tar." \
  || stamp "error: PEARL-small's export could not be packed"
finish
