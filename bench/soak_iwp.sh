#!/usr/bin/env bash
# Soak test: trains LeNet on Fashion-MNIST with IWP on 4 ranks for ITERATIONS steps
# (default 20000) and checks that no rank's resident memory grows during the run.
#
#   bench/soak_iwp.sh [ITERATIONS]
#
# Each rank's VmRSS (and RssAnon, its heap/anonymous part) is read from
# /proc/<pid>/status every POLL seconds. "start" is the first sample after the first
# `Iteration N, loss` display line with N past the warm-up (the larger of the
# solver's and sync_param's warmup_iter); "end" is the last sample before the rank
# exited. Prints a table and exits non-zero if any rank's VmRSS grew more than
# MAX_GROWTH percent (default 5), no start sample was taken, or the run did not
# finish (mpirun's exit status, and the `Final:` line).
# Env: CAFFE_BUILD (build), SOAK_OUT (CAFFE_BUILD/soak), POLL (5), MAX_GROWTH (5),
# SOLVER (models/lenet_fashion/solver_iwp.prototxt). Needs data/fashion_mnist
# (bash data/get_fashion_mnist.sh) and CAFFE_BUILD/tools/caffe.
# No -e: the polling loop expects greps that find nothing yet. No -u: bash counts an
# empty associative array as unset.
set -o pipefail
cd "$(dirname "$0")/.." || exit 1

iters=${1:-20000}
build=${CAFFE_BUILD:-build}
out=${SOAK_OUT:-$build/soak}
poll=${POLL:-5}
max_growth=${MAX_GROWTH:-5}
base_solver=${SOLVER:-models/lenet_fashion/solver_iwp.prototxt}
ranks=4

mkdir -p "$out" || exit 1
solver=$out/solver_iwp_$iters.prototxt
log=$out/train_$iters.log
# The base solver's schedule (steps at 2200/2700 of 3000) is kept as is: past it the
# rate stays at its last value, which is what a long soak should exercise. Snapshots
# go to the soak folder, not next to real runs.
python3 scripts/make_solver.py "$base_solver" "$solver" "max_iter=$iters" \
  "snapshot_prefix=\"$out/lenet_fashion_iwp_soak\"" || exit 1
[ -x "$build/tools/caffe" ] || { echo "soak: $build/tools/caffe is missing; build it first"; exit 1; }

# Warm-up: the later of the solver's learning-rate ramp and the exchange's dense start.
warmup=$(grep -oE "warmup_iter: *[0-9]+" "$solver" | grep -oE "[0-9]+" | sort -n | tail -1)
warmup=${warmup:-0}

mpi=(mpirun --allow-run-as-root --oversubscribe -np "$ranks")
echo "soak: ${mpi[*]} $build/tools/caffe train -solver $solver  (log: $log)"
t0=$(date +%s)
"${mpi[@]}" "$build/tools/caffe" train -solver "$solver" >"$log" 2>&1 &
mpirun_pid=$!

declare -A pid_of_rank rss_start anon_start rss_end anon_end
start_iter=""

# Ranks are mpirun's own children running the caffe binary (Open MPI starts local
# ranks directly); the rank number comes from each child's environment.
find_ranks() {
  local child rank
  for child in $(cat /proc/"$mpirun_pid"/task/*/children 2>/dev/null); do
    [ -r /proc/"$child"/cmdline ] || continue
    tr '\0' ' ' </proc/"$child"/cmdline 2>/dev/null | grep -q "tools/caffe" || continue
    rank=$(tr '\0' '\n' </proc/"$child"/environ 2>/dev/null |
           sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
    [ -n "$rank" ] && pid_of_rank[$rank]=$child
  done
  return 0
}

# kB of a /proc/<pid>/status field, empty when the process is gone.
status_kb() { awk -v f="$2:" '$1 == f { print $2 }' /proc/"$1"/status 2>/dev/null || true; }

while kill -0 "$mpirun_pid" 2>/dev/null; do
  [ "${#pid_of_rank[@]}" -lt "$ranks" ] && find_ranks
  if [ -z "$start_iter" ]; then
    # Rank 0 logs "Iteration N (x iter/s, ...), loss = L" at each display step.
    start_iter=$(grep -oE "Iteration [0-9]+ .*loss = " "$log" 2>/dev/null |
                 grep -oE "^Iteration [0-9]+" | awk -v w="$warmup" '$2 >= w { print $2; exit }')
    take_start=${start_iter:+1}
  else
    take_start=""
  fi
  for rank in "${!pid_of_rank[@]}"; do
    pid=${pid_of_rank[$rank]}
    rss=$(status_kb "$pid" VmRSS)
    anon=$(status_kb "$pid" RssAnon)
    [ -n "$rss" ] || continue
    if [ -n "$take_start" ]; then
      rss_start[$rank]=$rss
      anon_start[$rank]=$anon
    fi
    rss_end[$rank]=$rss
    anon_end[$rank]=$anon
  done
  sleep "$poll"
done
status=0
wait "$mpirun_pid" || status=$?
t1=$(date +%s)

final=$(grep -m1 "Final:" "$log" | sed 's/.*Final:/Final:/' || true)
finished=no
if [ "$status" -eq 0 ] && [ -n "$final" ]; then finished=yes; fi

mb() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.1f", 100 * (b - a) / a }'; }

fail=0
echo
echo "soak: $iters iterations, $ranks ranks, $((t1 - t0)) s; start = first display at iteration ${start_iter:-never} (warm-up $warmup)"
echo "| rank | VmRSS start (MB) | VmRSS end (MB) | growth | RssAnon start (MB) | RssAnon end (MB) | growth |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
for rank in $(seq 0 $((ranks - 1))); do
  if [ -z "${rss_start[$rank]:-}" ] || [ -z "${rss_end[$rank]:-}" ]; then
    echo "| $rank | no sample | | | | | |"
    fail=1
    continue
  fi
  growth=$(pct "${rss_start[$rank]}" "${rss_end[$rank]}")
  echo "| $rank | $(mb "${rss_start[$rank]}") | $(mb "${rss_end[$rank]}") | $growth% |" \
       "$(mb "${anon_start[$rank]}") | $(mb "${anon_end[$rank]}") |" \
       "$(pct "${anon_start[$rank]}" "${anon_end[$rank]}")% |"
  if awk -v g="$growth" -v m="$max_growth" 'BEGIN { exit !(g > m) }'; then fail=1; fi
done
echo "finished: $finished (mpirun exit $status)${final:+; $final}"
if [ "$finished" != yes ]; then
  tail -n 20 "$log"
  fail=1
fi
if [ "$fail" -ne 0 ]; then
  echo "soak: FAILED (VmRSS growth over ${max_growth}%, a missing sample, or an unfinished run)"
  exit 1
fi
echo "soak: passed (every rank within ${max_growth}% VmRSS growth)"
