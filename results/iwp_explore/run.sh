#!/usr/bin/env bash
# Trains the named runs of results/iwp_explore/runs.txt, one after another:
#
#   results/iwp_explore/run.sh R_rl10st_lr02_s2 R_dense_lr02_s2 ...
#
# For each name, its runs.txt line's make_solver.py arguments write the solver to
# build/iwp_explore/<name>.prototxt, and `mpirun -np 4 caffe train` trains it with
# rank 0's log in logs/<name>.log (written to logs/<name>.log.part until it ends).
# Then `python3 results/iwp_explore/make_table.py` refreshes TABLE.md.
# Environment: CAFFE_BUILD (default <repo>/build), NP (default 4).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=${CAFFE_BUILD:-$repo/build}
np=${NP:-4}
fail() { echo "run.sh: error: $*" >&2; exit 1; }
(( $# > 0 )) || fail "no run named (expected names from $here/runs.txt)"
[[ -x $build/tools/caffe ]] || fail "$build/tools/caffe not found: build it first or set CAFFE_BUILD"
work=$repo/build/iwp_explore
mkdir -p "$work" "$here/logs"

cd "$repo"
CAFFE_BUILD=$build data/get_fashion_mnist.sh
for name in "$@"; do
  line=$(grep -E "^$name \|" "$here/runs.txt" || true)
  [[ -n $line ]] || fail "$name: no such run in $here/runs.txt"
  # Fields are separated by " | ", so a label may hold a bare "|" (as in |v|).
  args=${line#* | }
  args=${args#* | }
  # The arguments are written as a shell would take them (quoted --sync blocks).
  eval "argv=($args)"
  python3 scripts/make_solver.py "${argv[0]}" "$work/$name.prototxt" "${argv[@]:1}"
  echo "$name: started $(date -u +%H:%M:%S)"
  if ! mpirun --allow-run-as-root --oversubscribe -np "$np" "$build/tools/caffe" train \
      -solver "$work/$name.prototxt" > "$here/logs/$name.log.part" 2>&1; then
    tail -5 "$here/logs/$name.log.part" >&2
    echo "$name: failed (log kept: logs/$name.log.part)" >&2
    continue
  fi
  mv "$here/logs/$name.log.part" "$here/logs/$name.log"
  echo "$name: $(grep -o 'test 0/accuracy = [0-9.]*' "$here/logs/$name.log" | tail -1) at $(date -u +%H:%M:%S)"
  python3 "$here/make_table.py" > /dev/null
done
