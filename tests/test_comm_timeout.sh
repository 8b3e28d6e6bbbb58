#!/usr/bin/env bash
# A lost or stalled link ends the job in bounded time, and a slow one does not
# (-comm_timeout, include/caffe/sync/comm_deadline.hpp). Two ranks of LeNet (synthetic
# data, DENSE) in an emulated cluster (scripts/emulated_cluster.sh) at 1 Gbit/s, with a
# deadline of 6 s:
#   1. rank 1's link goes down mid-run: every process exits within the deadline + 15 s,
#      non-zero, with an error line naming the iteration and the silent rank; the last
#      snapshot then resumes, and its first iterations match an uninterrupted run's;
#   2. rank 1's link drops 100x (1 Gbit/s to 10 Mbit/s) mid-run: the job completes;
#   3. rank 1 is stopped (SIGSTOP) past the deadline: as a lost link;
#   4. rank 1 is stopped for 4 s and resumed: a warning only, and the job completes;
#   5. rank 0's test pass (the others wait for it) outlasts the deadline: no warning;
#   6. a Python solver (caffe.set_comm_timeout) whose peer's link goes down: as 1.
# Skipped (exit 77) where the cluster cannot be made: not root, no namespaces, no tc.
set -uo pipefail
BUILD="$(cd "${1:?usage: test_comm_timeout.sh BUILD_DIR [PYTHON]}" && pwd)"
# The Python pycaffe is built for; empty where it is not built (case 6 then says so).
PYTHON="${2:-}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
CLUSTER="$ROOT/scripts/emulated_cluster.sh"
CAFFE="$BUILD/tools/caffe"

if ! why="$(bash "$CLUSTER" check)"; then
  echo "SKIP: $why"
  exit 77
fi

NAME="ct$$"
WORK="$(mktemp -d)"
JOB=""
cleanup() {
  [ -n "$JOB" ] && kill -9 "$JOB" 2>/dev/null
  bash "$CLUSTER" down "$NAME" >/dev/null 2>&1 || true
  [ -n "${KEEP_WORK:-}" ] && echo "kept $WORK" || rm -rf "$WORK"
}
trap cleanup EXIT
bash "$CLUSTER" up "$NAME" 2 1gbit || exit 1

DEADLINE=6
# Every process must be gone this long after the deadline: the abort's own waits for
# mpirun to take the error line (at most ~11 s, AbortMpiJob) and mpirun's kill.
GRACE=15

fail() {
  echo "FAIL: $*"
  [ -n "${LOG:-}" ] && [ -f "$LOG" ] && tail -n 30 "$LOG"
  exit 1
}

# write_solver FILE MAX_ITER [SNAPSHOT]: the shipped LeNet solver, DENSE, a loss line
# every iteration, synthetic data in both nets (no LMDB), snapshots under $WORK/snap.
write_solver() {
  python3 scripts/make_solver.py models/lenet_fashion/solver_iwp.prototxt "$1" max_iter="$2" \
    display=1 test_interval=1000000 test_initialization=false snapshot="${3:-0}" \
    "snapshot_prefix=\"$WORK/snap/lenet\"" snapshot_after_train=false --sync "method: DENSE" ||
    fail "cannot write $1"
  echo 'test_state { stage: "synthetic" }' >> "$1"
}
mkdir -p "$WORK/snap"

# start LOG COMMAND...: runs COMMAND across the cluster in the background.
start() {
  LOG="$1"
  shift
  bash "$CLUSTER" mpirun "$NAME" -- "$@" > "$LOG" 2>&1 &
  JOB=$!
}

# wait_for_line PATTERN SECONDS: until the job's log holds PATTERN.
wait_for_line() {
  local waited=0
  until grep -q "$1" "$LOG"; do
    kill -0 "$JOB" 2>/dev/null || fail "the job ended before '$1'"
    sleep 0.2
    waited=$((waited + 1))
    [ "$waited" -le $(($2 * 5)) ] || fail "no '$1' within $2 s"
  done
}

# finish SECONDS: waits for the job to end, at most SECONDS; sets STATUS and ELAPSED.
finish() {
  local start=$SECONDS
  while kill -0 "$JOB" 2>/dev/null; do
    if [ $((SECONDS - start)) -gt "$1" ]; then
      fail "the job still ran $1 s later (a hang)"
    fi
    sleep 0.2
  done
  wait "$JOB"
  STATUS=$?
  ELAPSED=$((SECONDS - start))
  JOB=""
}

# rank_pid RANK: the rank's process, found in its namespace by its MPI rank.
rank_pid() {
  local pid
  for pid in $(ip netns pids "$NAME-r$1"); do
    if tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1"; then
      echo "$pid"
      return 0
    fi
  done
  return 1
}

# expect_lost WHAT: the job ended in time, non-zero, with an error line naming an
# iteration and the silent rank, and nothing left running in the cluster.
expect_lost() {
  finish $((DEADLINE + GRACE))
  [ "$STATUS" -ne 0 ] || fail "$1: the job exited 0"
  # Rank 0 names rank 1; where both time out, rank 1 may speak first and name rank 0.
  grep -Eq "error: rank (0 of 2: .*iteration [0-9]+: .*heard nothing for [0-9]+ s \(comm_timeout 6 s\); ranks not yet heard from: 1|1 of 2: .*iteration [0-9]+: .*heard nothing for [0-9]+ s \(comm_timeout 6 s\); ranks not yet heard from: 0)" "$LOG" ||
    fail "$1: no error line naming the iteration and the silent rank"
  for r in 0 1; do
    [ -z "$(ip netns pids "$NAME-r$r")" ] || fail "$1: rank $r's namespace still runs a process"
  done
  echo "ok: $1: ended ${ELAPSED} s after it (deadline ${DEADLINE} s), status $STATUS"
}

# 1. A link goes down.
write_solver "$WORK/long.prototxt" 1000000 10
start "$WORK/down.log" "$CAFFE" train -solver "$WORK/long.prototxt" -stage synthetic -comm_timeout "$DEADLINE"
wait_for_line "Snapshotting solver state to binary proto file .*lenet_iter_20.solverstate" 120
bash "$CLUSTER" link "$NAME" 1 down
expect_lost "link down"
bash "$CLUSTER" link "$NAME" 1 up

# ... and the last snapshot resumes exactly.
last="$(ls "$WORK"/snap/lenet_iter_*.solverstate | sed 's/.*_iter_\([0-9]*\)\.solverstate/\1/' | sort -n | tail -1)"
[ -n "$last" ] || fail "no snapshot survived"
until_iter=$((last + 5))
write_solver "$WORK/resume.prototxt" "$until_iter"
start "$WORK/resume.log" "$CAFFE" train -solver "$WORK/resume.prototxt" -stage synthetic \
  -snapshot "$WORK/snap/lenet_iter_${last}.solverstate"
finish 120
[ "$STATUS" -eq 0 ] || fail "resuming from iteration $last failed"
start "$WORK/straight.log" "$CAFFE" train -solver "$WORK/resume.prototxt" -stage synthetic
finish 120
[ "$STATUS" -eq 0 ] || fail "the uninterrupted run failed"
# "ITERATION LOSS" from the display lines ("Iteration 21 (31.8 iter/s, ...), loss = 2.31";
# a run's first has no speed).
losses() {
  sed -nE 's/.*Iteration ([0-9]+)( \(.*\))?, loss = ([-0-9.e+]+)$/\1 \3/p' "$1" | awk -v from="$last" '$1 >= from'
}
[ "$(losses "$WORK/resume.log" | wc -l)" -ge 5 ] || fail "the resumed run logged no losses"
[ "$(losses "$WORK/resume.log")" = "$(losses "$WORK/straight.log" | tail -n "$(losses "$WORK/resume.log" | wc -l)")" ] ||
  fail "the run resumed at $last does not match the uninterrupted one: $(losses "$WORK/resume.log" | head -3) against $(losses "$WORK/straight.log" | head -3)"
echo "ok: the snapshot of iteration $last resumes, its losses those of an uninterrupted run"

# 2. A link slows down 100x: slow is not dead. The deadline here is 60 s, not 6: what
# tbf had queued at 1 Gbit/s (up to 50 ms of it, ~6 MB) drains at 10 Mbit/s, and
# one wait may then legitimately last several seconds, as it would on a real link.
write_solver "$WORK/short.prototxt" 25
start "$WORK/slow.log" "$CAFFE" train -solver "$WORK/short.prototxt" -stage synthetic -comm_timeout 60
wait_for_line "Iteration 10 (" 120
bash "$CLUSTER" rate "$NAME" 1 10mbit
finish 180
[ "$STATUS" -eq 0 ] || fail "the job on a slowed link failed"
grep -q "^error:" "$LOG" && fail "the slowed link gave an error"
echo "ok: a link cut from 1 Gbit/s to 10 Mbit/s mid-run: the job completed (${ELAPSED} s after the cut)"
bash "$CLUSTER" rate "$NAME" 1 1gbit

# 3. A rank stops past the deadline.
start "$WORK/stopped.log" "$CAFFE" train -solver "$WORK/long.prototxt" -stage synthetic -comm_timeout "$DEADLINE"
wait_for_line "Iteration 5 (" 120
pid="$(rank_pid 1)" || fail "rank 1's process not found"
kill -STOP "$pid"
expect_lost "rank 1 stopped"

# 4. A rank stops for less than the deadline: a warning only.
write_solver "$WORK/medium.prototxt" 40
start "$WORK/paused.log" "$CAFFE" train -solver "$WORK/medium.prototxt" -stage synthetic -comm_timeout "$DEADLINE"
wait_for_line "Iteration 5 (" 120
pid="$(rank_pid 1)" || fail "rank 1's process not found"
kill -STOP "$pid"
sleep 4
kill -CONT "$pid"
finish 120
[ "$STATUS" -eq 0 ] || fail "the job whose rank paused for 4 s failed"
grep -Eq "iteration [0-9]+: .* waiting [0-9]+ s; ranks not yet heard from: 1" "$LOG" ||
  fail "no warning while rank 1 was stopped"
grep -q "^error:" "$LOG" && fail "a pause shorter than the deadline gave an error"
echo "ok: rank 1 stopped for 4 s: one warning, and the job completed"

# 5. Rank 0's test pass outlasts the deadline: the others wait for it without a word
# (rank 0's heartbeats), and the job completes.
write_solver "$WORK/tested.prototxt" 20
sed -i 's/^test_interval: .*/test_interval: 10/; s/^test_iter: .*/test_iter: 800/' "$WORK/tested.prototxt"
start "$WORK/tested.log" "$CAFFE" train -solver "$WORK/tested.prototxt" -stage synthetic -comm_timeout 2
finish 300
[ "$STATUS" -eq 0 ] || fail "a test pass longer than the deadline ended the job"
# (Only the wait for the test pass must stay quiet: with a 2 s deadline a slow start-up
# elsewhere may warn, and that is not what this case is about.)
grep -Eq "for rank 0's test pass waiting|^error:" "$LOG" &&
  fail "a test pass longer than the deadline gave a warning or an error"
# The test pass's length, from the log's clock: its first line to its first score.
test_seconds="$(grep -E "Iteration 10, Testing net|Test net output #0" "$LOG" | head -2 |
  awk '{ split($2, t, ":"); s[NR] = t[1] * 3600 + t[2] * 60 + t[3] } END { printf "%.1f", s[2] - s[1] }')"
awk -v s="$test_seconds" 'BEGIN { exit !(s > 2 * 2) }' ||
  fail "the test pass took ${test_seconds} s, not over twice the 2 s deadline: the case shows nothing"
echo "ok: rank 0's test pass took ${test_seconds} s against a deadline of 2 s; no warning, and the job completed"

# 6. A Python solver.
if [ -z "$PYTHON" ]; then
  echo "PASS (cases 1-5; case 6 needs pycaffe, which this build leaves out: BUILD_PYTHON=OFF)"
  exit 0
fi
cat > "$WORK/train.py" <<'EOF'
import sys
import caffe
caffe.set_comm_timeout(float(sys.argv[2]))
solver = caffe.get_solver(sys.argv[1])
solver.solve()
EOF
# The synthetic stage, which `caffe train -stage` gives the train net, written in.
sed 's/^net: .*/&\ntrain_state { stage: "synthetic" }/' "$WORK/long.prototxt" > "$WORK/python.prototxt"
rm -f "$WORK"/snap/*
start "$WORK/python.log" env PYTHONPATH="$ROOT/python" "$PYTHON" "$WORK/train.py" \
  "$WORK/python.prototxt" "$DEADLINE"
wait_for_line "Iteration 5 (" 120
bash "$CLUSTER" link "$NAME" 1 down
finish $((DEADLINE + GRACE))
[ "$STATUS" -ne 0 ] || fail "python: the job exited 0"
grep -Eq "iteration [0-9]+: .*heard nothing for [0-9]+ s \(comm_timeout 6 s\); ranks not yet heard from: [01]" "$LOG" ||
  fail "python: no error naming the iteration and the silent rank"
echo "ok: python solver, link down: ended ${ELAPSED} s after it, status $STATUS"
echo "PASS"
