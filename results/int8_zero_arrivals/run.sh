#!/usr/bin/env bash
# Does INT8's block rounding explain why LeNet with INT8 values at density x 1.6
# (about 70x on the wire) trails INT8 at x 0.8 (about 140x)? The hypothesis: with more
# coordinates sent, a block of 64 spans a wider range, and more values round to zero.
# Runs the int8 part's two LeNet solvers (the shipped solver_iwp.prototxt with
# value_encoding INT8 and density x 1.6 / x 0.8, seed 1, 4 ranks) and tables the
# exchange log's "arrived as 0" share, averaged over the display lines after the
# density ramp (iteration 300 on), beside the wire ratio and top-1.
#   results/int8_zero_arrivals/run.sh [--table-only]   (build/tools/caffe; CAFFE_BUILD)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=${CAFFE_BUILD:-$repo/build}
cd "$repo"
density=$(sed -n 's/.*\bdensity: *\([0-9.e-]*\).*/\1/p' models/lenet_fashion/solver_iwp.prototxt | head -1)
if [[ ${1:-} != --table-only ]]; then
  [[ -x $build/tools/caffe ]] || { echo "error: $build/tools/caffe not found" >&2; exit 1; }
  CAFFE_BUILD=$build data/get_fashion_mnist.sh > /dev/null
  for factor in 1.6 0.8; do
    d=$(awk -v d="$density" -v f="$factor" 'BEGIN { printf "%.8g\n", d * f }')
    python3 scripts/make_solver.py models/lenet_fashion/solver_iwp.prototxt "$here/x$factor.prototxt" \
      random_seed=1 snapshot=0 snapshot_after_train=false solver_mode=CPU \
      --sync-set "method: IWP" --sync-set "seed: 1" --sync-set "value_encoding: INT8" \
      --sync-set "density: $d"
    mpirun --allow-run-as-root --oversubscribe -np 4 "$build/tools/caffe" train \
      -solver "$here/x$factor.prototxt" > "$here/x$factor.log" 2>&1
  done
fi
{
  echo "# INT8 values: how many summed values arrive as zero (LeNet, seed 1, 4 ranks)"
  echo
  echo "Command: \`results/int8_zero_arrivals/run.sh\`; generated $(date -u +%Y-%m-%d)."
  echo
  echo "| density | wire ratio after warm-up | arrived as 0, mean over iterations 300-2900 | range | top-1 |"
  echo "|---|---:|---:|---|---:|"
  for factor in 1.6 0.8; do
    log=$here/x$factor.log
    d=$(sed -n 's/.*\bdensity: *\([0-9.e-]*\).*/\1/p' "$here/x$factor.prototxt" | head -1)
    python3 - "$log" "$d" <<'PY'
import re, sys
log, density = sys.argv[1], sys.argv[2]
shares = []
for line in open(log, errors="replace"):
    m = re.search(r"Iteration (\d+), sync:.*arrived as 0 ([0-9.]+)%", line)
    if m and int(m.group(1)) >= 300:
        shares.append(float(m.group(2)))
final = [l for l in open(log, errors="replace") if "Final:" in l][-1]
wire = re.search(r"after warm-up: nominal ratio [0-9.]+x, wire ratio ([0-9.]+)x", final).group(1)
top1 = float(re.search(r"test 0/accuracy = ([0-9.]+)", final).group(1))
print("| %s | %.1fx | %.2f%% | %.2f-%.2f%% | %.2f%% |" % (
    density, float(wire), sum(shares) / len(shares), min(shares), max(shares), 100 * top1))
PY
  done
} > "$here/TABLE.md"
cat "$here/TABLE.md"
