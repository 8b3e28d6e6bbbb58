#!/usr/bin/env bash
# Short runs with the capture probe (sync_param.measure_capture): how much of the
# ranks' summed residual each step's choice held, against the best choice of as many
# coordinates, and how stale the coordinates get. 4 ranks, seed 1, the shipped
# protection, 1/80; one name and its extra sync settings per variant:
#
#   results/iwp_explore/probe.sh L_p0 "" L_mag "score: MAGNITUDE" L_f1 "weight_floor: 1"
#
# NET=lenet (the default): LeNet, 1000 iterations (100 dense, then 1/80).
# NET=resnet20: ResNet-20 at rate 0.2, 1000 iterations (200 dense, the ramp 0.25 and
# 0.0625 for 200 each, then 1/80 from iteration 600).
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
  if [[ ${NET:-lenet} == resnet20 ]]; then
    python3 scripts/make_solver.py models/resnet20_fashion/solver_dense.prototxt \
      "$repo/build/iwp_explore/$name.prototxt" max_iter=1000 base_lr=0.2 stepvalue=2000 stepvalue=3000 \
      test_interval=1000 test_initialization=false snapshot=0 snapshot_after_train=false random_seed=1 display=100 \
      --sync "method: IWP seed: 1 density: 0.0125 warmup_iter: 200 density_schedule: 0.25 density_schedule: 0.0625 density_schedule_iter: 200 max_relative_step: 0.1 stochastic_fraction: 0.1 measure_capture: true $extra"
  else
    python3 scripts/make_solver.py models/lenet_fashion/solver_iwp.prototxt \
      "$repo/build/iwp_explore/$name.prototxt" max_iter=1000 test_interval=1000 random_seed=1 display=100 \
      --sync "method: IWP seed: 1 density: 0.0125 warmup_iter: 100 max_relative_step: 0.1 stochastic_fraction: 0.1 measure_capture: true $extra"
  fi
  mpirun --allow-run-as-root --oversubscribe -np 4 "$build/tools/caffe" train \
    -solver "$repo/build/iwp_explore/$name.prototxt" > "$here/probe/$name.log" 2>&1
  echo "$name ($extra):"
  grep -o "age max.*" "$here/probe/$name.log" | tail -3
  grep -o "Final: .*" "$here/probe/$name.log"
done
