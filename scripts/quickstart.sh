#!/usr/bin/env bash
# The main job on the embedded default data: builds caffe-iwp, converts Fashion-MNIST
# (Debian's dataset-fashion-mnist) into LMDBs, trains LeNet on 4 MPI ranks with
# importance-weighted pruning (IWP) of the gradient exchange, and prints the test
# accuracy, the compression ratios and the time it took.
#
#   scripts/quickstart.sh            # 4 ranks, IWP (every rank leads, 1/46, FP16 values)
#   NP=2 scripts/quickstart.sh       # another rank count
#   SOLVER=models/lenet_fashion/solver_dense.prototxt NP=1 scripts/quickstart.sh
set -euo pipefail
cd "$(dirname "$0")/.."

NP="${NP:-4}"
SOLVER="${SOLVER:-models/lenet_fashion/solver_iwp.prototxt}"
BUILD_DIR="${BUILD_DIR:-build}"
JOBS="${JOBS:-2}"

bash scripts/setup_deps.sh
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DCPU_ONLY=ON >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS" --target caffe convert_idx
CAFFE_BUILD="$BUILD_DIR" bash data/get_fashion_mnist.sh

MPI_FLAGS=()
if [ "$(id -u)" -eq 0 ]; then MPI_FLAGS+=(--allow-run-as-root); fi
if [ "$NP" -gt "$(nproc)" ]; then MPI_FLAGS+=(--oversubscribe); fi

LOG="$BUILD_DIR/quickstart.log"
echo "quickstart: training $SOLVER on $NP rank(s); log in $LOG"
start=$(date +%s)
if [ "$NP" -gt 1 ]; then
  mpirun "${MPI_FLAGS[@]}" -np "$NP" "$BUILD_DIR/tools/caffe" train -solver "$SOLVER" 2>&1 | tee "$LOG"
else
  "$BUILD_DIR/tools/caffe" train -solver "$SOLVER" 2>&1 | tee "$LOG"
fi
end=$(date +%s)

final=$(grep -E "Final: " "$LOG" | tail -1 | sed 's/.*Final: //')
accuracy=$(echo "$final" | grep -oE "test 0/accuracy = [0-9.]+" | grep -oE "[0-9.]+$" || true)
echo
echo "==== quickstart summary ===="
echo "solver:         $SOLVER on $NP rank(s)"
echo "test accuracy:  ${accuracy:-n/a} (10,000 Fashion-MNIST test images)"
if echo "$final" | grep -q "nominal ratio"; then
  echo "exchange:       $(echo "$final" | grep -oE 'exchange .*')"
fi
echo "wall time:      $((end - start)) s"
