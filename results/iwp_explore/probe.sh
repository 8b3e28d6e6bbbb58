#!/usr/bin/env bash
# Short LeNet runs with the capture probe (sync_param.measure_capture): how much of
# the ranks' summed residual each step's choice held, against the best choice of as
# many coordinates, and how stale the coordinates get. 1000 iterations (100 dense,
# then 1/80), 4 ranks, seed 1, the shipped protection; one name per variant:
#
#   results/iwp_explore/probe.sh L_p0 "" L_mag "score: MAGNITUDE" L_f1 "weight_floor: 1"
#
# Logs go to probe/<name>.log; the last lines of each are printed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=${CAFFE_BUILD:-$repo/build}
cd "$repo"
CAFFE_BUILD=$build data/get_fashion_mnist.sh > /dev/null
mkdir -p "$repo/build/iwp_explore" "$here/probe"
while (( $# >= 2 )); do
  name=$1 extra=$2
  shift 2
  python3 scripts/make_solver.py models/lenet_fashion/solver_iwp.prototxt \
    "$repo/build/iwp_explore/$name.prototxt" max_iter=1000 test_interval=1000 random_seed=1 display=100 \
    --sync "method: IWP seed: 1 density: 0.0125 warmup_iter: 100 max_relative_step: 0.1 stochastic_fraction: 0.1 measure_capture: true $extra"
  mpirun --allow-run-as-root --oversubscribe -np 4 "$build/tools/caffe" train \
    -solver "$repo/build/iwp_explore/$name.prototxt" > "$here/probe/$name.log" 2>&1
  echo "$name ($extra):"
  grep -o "age max.*" "$here/probe/$name.log" | tail -3
  grep -o "Final: .*" "$here/probe/$name.log"
done
