#!/usr/bin/env bash
# Time to accuracy on an emulated slow network (issue 50): builds caffe, makes the
# Fashion-MNIST LMDBs, then runs scripts/time_to_accuracy.py, which trains every method
# in every cell of the emulated cluster (scripts/emulated_cluster.sh) and writes
# results/time_to_accuracy/TABLE.md, rows.csv and one plot per net.
#
#   scripts/time_to_accuracy.sh                       all nets, cells, methods (hours)
#   scripts/time_to_accuracy.sh --nets lenet_fashion --cells 2x1gbit 2xref
#   scripts/time_to_accuracy.sh --quick               a smoke test of the whole path
#   scripts/time_to_accuracy.sh report                the table and plots only
#
# Needs root (network namespaces, tc) and a quiet machine: the step times are the result.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${BUILD_DIR:-build}"
# Debian's Python has matplotlib (scripts/setup_deps.sh) for the plots.
PYTHON=python3
[ -x /usr/bin/python3 ] && PYTHON=/usr/bin/python3
if [ "${1:-}" = report ]; then
  shift
  exec "$PYTHON" scripts/time_to_accuracy.py report "$@"
fi
bash scripts/emulated_cluster.sh check >/dev/null || { bash scripts/emulated_cluster.sh check; exit 2; }
cmake --build "$BUILD_DIR" -j "${JOBS:-2}" --target caffe convert_idx upgrade_solver_proto_text >/dev/null
CAFFE_BUILD="$BUILD_DIR" bash data/get_fashion_mnist.sh >/dev/null
export BUILD_DIR
"$PYTHON" scripts/time_to_accuracy.py run "$@"
quick=()
for arg in "$@"; do [ "$arg" = --quick ] && quick=(--quick); done
"$PYTHON" scripts/time_to_accuracy.py report "${quick[@]}"
