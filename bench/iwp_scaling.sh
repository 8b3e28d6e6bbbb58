#!/usr/bin/env bash
# Bytes per rank per step against the number of ranks, for IWP and TOPK_ALLGATHER at
# the same density (issue 6: IWP's traffic should stay flat, the all-gather's grow),
# plus the share of the exchange's local work (accumulate + select + gather + scatter
# in the log's sync line) in the step time.
#
#   [MODEL=lenet_fashion] bench/iwp_scaling.sh [iterations=80] [ranks="2 4 8"]
#
# Trains models/$MODEL (lenet_fashion or resnet20_fashion; batch 64 per rank) from its
# shipped solver_iwp.prototxt for a short run per (method, N): the shipped sync_param
# (density, leader, value encoding) with the method changed, dense for the first 10
# iterations and no density ramp, so the shipped density holds from iteration 10. The
# learning rate stays in its warm-up, so these short runs stay stable at every N. Reads
# the steady-state figures from each run's "Final:" line and its last "sync:" line.
# Needs data/fashion_mnist (bash data/get_fashion_mnist.sh) and build/tools/caffe.
set -euo pipefail
cd "$(dirname "$0")/.."
iters=${1:-80}
ranks=${2:-"2 4 8"}
model=${MODEL:-lenet_fashion}
build=${CAFFE_BUILD:-build}
out=$build/bench_iwp_scaling
base=models/$model/solver_iwp.prototxt
[[ -f $base ]] || { echo "error: $base not found (MODEL=$model)" >&2; exit 1; }
mkdir -p "$out"
mpi=(mpirun --oversubscribe)
if [ "$(id -u)" -eq 0 ]; then mpi+=(--allow-run-as-root); fi

echo "| method | ranks | nominal ratio | wire ratio | bytes/rank/step | local work ms | step ms | local work share |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for method in IWP TOPK_ALLGATHER; do
  for n in $ranks; do
    solver=$out/solver_${model}_${method}_$n.prototxt
    python3 scripts/make_solver.py "$base" "$solver" "max_iter=$iters" "test_interval=0" \
      "test_iter=" "display=$((iters / 2))" "snapshot=0" "snapshot_after_train=false" \
      --sync-set "method: $method" --sync-set "warmup_iter: 10" --sync-set "density_schedule:"
    log=$out/${model}_${method}_$n.log
    if ! "${mpi[@]}" -np "$n" "$build/tools/caffe" train -solver "$solver" -threads 1 > "$log" 2>&1; then
      echo "| $method | $n | failed: $(grep -m1 -oE 'error: .*' "$log" | cut -c1-120) | | | | | |"
      continue
    fi
    final=$(grep "Final:" "$log" | sed 's/.*after warm-up: //')
    nominal=$(echo "$final" | grep -oE "nominal ratio [0-9.]+" | grep -oE "[0-9.]+$")
    wire=$(echo "$final" | grep -oE "wire ratio [0-9.]+" | grep -oE "[0-9.]+$")
    bytes=$(echo "$final" | grep -oE "bytes/step [0-9]+" | grep -oE "[0-9]+$")
    sync=$(grep "sync:" "$log" | tail -1)
    # The local phases' milliseconds summed (the all-gather's "allgather" is not one).
    local_ms=$(echo "$sync" | grep -oE "(accumulate|select|[^l]gather|scatter) [0-9.]+ ms" \
      | grep -oE "[0-9.]+ ms" | python3 -c "import sys; print(sum(float(w) for w in sys.stdin.read().split() if w != 'ms'))")
    rate=$(grep -oE "\([0-9.]+ iter/s" "$log" | tail -1 | grep -oE "[0-9.]+")
    step_ms=$(python3 -c "print(f'{1000/$rate:.1f}')")
    work=$(python3 -c "print(f'{$local_ms:.2f}')")
    share=$(python3 -c "print(f'{100*($local_ms)/(1000/$rate):.1f}%')")
    echo "| $method | $n | $nominal | $wire | $bytes | $work | $step_ms | $share |"
  done
done
