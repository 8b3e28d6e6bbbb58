#!/usr/bin/env bash
# Do two builds train bit for bit alike? For a change that must not move the numbers
# (a refactoring, an option removed): each configuration below trains a few dozen
# steps on 2 ranks with either `caffe` binary, from the same solver and seed, and the
# trained weights and every rank's solver state (residuals, momenta, ages) must be
# byte-identical.
#
#   cp build/tools/caffe /tmp/caffe_before      # before the change
#   ... change, rebuild ...
#   scripts/compare_builds.sh /tmp/caffe_before build/tools/caffe
#
# The configurations are the shipped solvers (models/<net>/solver_iwp.prototxt) with a
# short warm-up and ramp, so that the sparse steps come early, and each exchange method
# from the same file. Needs the Fashion-MNIST LMDBs (data/get_fashion_mnist.sh) and
# mpirun. Bit-for-bit holds on one machine; another CPU may take other kernel paths,
# so compare two builds on the same machine, not against stored figures.
# Exits 1 if any configuration differs, 2 on a usage error.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -ne 2 ] || [ ! -x "$1" ] || [ ! -x "$2" ]; then
  echo "usage: $0 CAFFE_BEFORE CAFFE_AFTER   (two caffe binaries)" >&2
  exit 2
fi
before=$(realpath "$1")
after=$(realpath "$2")
[ -d data/fashion_mnist/train_lmdb ] || {
  echo "error: data/fashion_mnist/train_lmdb missing: run data/get_fashion_mnist.sh" >&2
  exit 2
}
work=$(mktemp -d /tmp/compare_builds.XXXXXX)
trap 'rm -rf "$work"' EXIT
mpirun_flags=(--allow-run-as-root --oversubscribe -np 2 --bind-to none)

# name | net | iterations | sync_param edits (make_solver.py --sync-set, ";"-separated)
configurations=(
  "iwp|lenet_fashion|60|"
  "iwp_int8|lenet_fashion|60|value_encoding: INT8"
  "iwp_one_leader|lenet_fashion|60|iwp_param.leader: PER_STEP"
  "iwp_per_layer_magnitude|lenet_fashion|60|iwp_param.leader: PER_LAYER;iwp_param.score: MAGNITUDE"
  "iwp_momentum_correction|lenet_fashion|60|momentum_correction: true"
  "iwp_global_sampled|lenet_fashion|60|iwp_param.leader: PER_STEP;iwp_param.layer_wise: false;iwp_param.threshold_mode: SAMPLED"
  "fixed_threshold|lenet_fashion|60|method: FIXED_THRESHOLD;iwp_param.leader: PER_STEP"
  "topk_allgather|lenet_fashion|60|method: TOPK_ALLGATHER"
  "randomk|lenet_fashion|60|method: RANDOMK"
  "scalecom|lenet_fashion|60|method: SCALECOM"
  "powersgd|lenet_fashion|60|method: POWERSGD;powersgd_param.rank: 2;max_relative_step:"
  "dense_fp16|lenet_fashion|60|method: DENSE;value_encoding: FP16"
  "iwp|resnet20_fashion|24|"
)

train() {  # caffe name net iterations edits side
  local caffe=$1 name=$2 net=$3 iterations=$4 edits=$5 side=$6
  # Both builds train in the same folder: the solver state names the weights' path.
  local dir="$work/run"
  rm -rf "$dir"
  mkdir -p "$dir" "$work/$side"
  local args=("models/$net/solver_iwp.prototxt" "$dir/solver.prototxt" "max_iter=$iterations"
              "test_interval=1000000" "test_initialization=false" "display=0" "snapshot=0"
              "snapshot_after_train=true" "snapshot_prefix=\"$dir/s\"" "random_seed=1")
  local sync=(--sync-set "warmup_iter: 4" --sync-set "density_schedule: 0.25"
              --sync-set "density_schedule_iter: 4")
  local edit
  IFS=';' read -r -a split <<< "$edits"
  for edit in "${split[@]}"; do [ -n "$edit" ] && sync+=(--sync-set "$edit"); done
  python3 scripts/make_solver.py "${args[@]}" "${sync[@]}"
  if ! mpirun "${mpirun_flags[@]}" "$caffe" train -solver "$dir/solver.prototxt" \
      > "$dir/log" 2>&1; then
    echo "error: $net $name failed with $caffe:" >&2
    tail -5 "$dir/log" >&2
    exit 1
  fi
  mv "$dir" "$work/$side/$net.$name"
}

differ=0
for configuration in "${configurations[@]}"; do
  IFS='|' read -r name net iterations edits <<< "$configuration"
  train "$before" "$name" "$net" "$iterations" "$edits" before
  train "$after" "$name" "$net" "$iterations" "$edits" after
  result=identical
  files=0
  for file in "$work/before/$net.$name"/s_iter_*; do
    files=$((files + 1))
    if ! cmp -s "$file" "$work/after/$net.$name/$(basename "$file")"; then
      result="DIFFERENT ($(basename "$file"))"
    fi
  done
  # The weights and one state file per rank.
  [ "$files" -ge 3 ] || result="DIFFERENT (only $files snapshot files)"
  printf '%-28s %-18s %s\n' "$name" "$net" "$result"
  [ "$result" = identical ] || differ=1
done
exit $differ
