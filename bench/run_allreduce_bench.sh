#!/usr/bin/env bash
# All-reduce on MPI, the tables of bench/README.md: for 2 and 4 ranks, our ring
# (RING_P2P), MPI_Allreduce with Open MPI's own choice (MPI_NATIVE), and MPI_Allreduce
# with Open MPI's ring forced through its tuned-collective MCA parameters.
#   bench/run_allreduce_bench.sh [build dir, default build] [extra bench flags...]
set -euo pipefail
build=${1:-build}
shift || true
bench="$build/bench/allreduce_bench"
[[ -x "$bench" ]] || { echo "missing $bench: build target allreduce_bench first" >&2; exit 1; }
mpirun=(mpirun --allow-run-as-root --oversubscribe)

for np in 2 4; do
  "${mpirun[@]}" -np "$np" "$bench" --algo both "$@"
  # coll_tuned_allreduce_algorithm 4 = ring (ompi_info --param coll tuned --level 9).
  "${mpirun[@]}" -np "$np" --mca coll_tuned_use_dynamic_rules 1 \
      --mca coll_tuned_allreduce_algorithm 4 \
      "$bench" --algo native --label "(Open MPI ring forced)" "$@"
done
