#!/usr/bin/env bash
# Rank failure (issue 10): kill one rank of a 4-rank `caffe train` under mpirun and
# check that the whole job ends within 60 s, with a non-zero status and a message
# naming the lost rank, and that no rank is left running. Done once with SIGKILL
# (rank 2) and once with SIGTERM (rank 1).
#   test_rank_failure.sh BUILD_DIR
set -u
BUILD=${1:?usage: test_rank_failure.sh BUILD_DIR}
CAFFE=$BUILD/tools/caffe
WORK=$(mktemp -d "${TMPDIR:-/tmp}/rank_failure.XXXXXX")
MPIRUN_PID=""
trap '[ -n "$MPIRUN_PID" ] && kill -9 "$MPIRUN_PID" 2>/dev/null; rm -rf "$WORK"' EXIT

fail() { echo "FAIL: $*"; [ -f "$WORK/log" ] && tail -n 40 "$WORK/log"; exit 1; }

# LeNet's shape on DummyData: ~430 k weights, so every iteration exchanges gradients.
cat > "$WORK/net.prototxt" <<'EOF'
name: 'lenet_dummy'
layer { name: 'data' type: 'DummyData' top: 'data' top: 'label'
        dummy_data_param { shape { dim: 8 dim: 1 dim: 28 dim: 28 } shape { dim: 8 }
                           data_filler { type: 'gaussian' std: 1 } data_filler { type: 'constant' value: 3 } } }
layer { name: 'conv1' type: 'Convolution' bottom: 'data' top: 'conv1'
        convolution_param { num_output: 20 kernel_size: 5 weight_filler { type: 'xavier' } } }
layer { name: 'pool1' type: 'Pooling' bottom: 'conv1' top: 'pool1' pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layer { name: 'conv2' type: 'Convolution' bottom: 'pool1' top: 'conv2'
        convolution_param { num_output: 50 kernel_size: 5 weight_filler { type: 'xavier' } } }
layer { name: 'pool2' type: 'Pooling' bottom: 'conv2' top: 'pool2' pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layer { name: 'ip1' type: 'InnerProduct' bottom: 'pool2' top: 'ip1'
        inner_product_param { num_output: 500 weight_filler { type: 'xavier' } } }
layer { name: 'relu1' type: 'ReLU' bottom: 'ip1' top: 'ip1' }
layer { name: 'ip2' type: 'InnerProduct' bottom: 'ip1' top: 'ip2'
        inner_product_param { num_output: 10 weight_filler { type: 'xavier' } } }
layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip2' bottom: 'label' top: 'loss' }
EOF
cat > "$WORK/solver.prototxt" <<EOF
net: '$WORK/net.prototxt'
base_lr: 0.01
momentum: 0.9
lr_policy: 'fixed'
max_iter: 1000000
display: 5
snapshot_after_train: false
random_seed: 1
solver_mode: CPU
EOF

# rank_pid RANK: the pid of that rank among mpirun's children (read from their
# environment, never found by process name).
rank_pid() {
  local child
  for child in $(pgrep -P "$MPIRUN_PID"); do
    if tr '\0' '\n' < "/proc/$child/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1"; then
      echo "$child"
      return 0
    fi
  done
  return 1
}

run_case() {
  local signal=$1 victim=$2
  echo "== $signal to rank $victim"
  : > "$WORK/log"  # the previous run's log must not count as this one's start
  mpirun --allow-run-as-root --oversubscribe -np 4 "$CAFFE" train \
    -solver "$WORK/solver.prototxt" -threads 1 > "$WORK/log" 2>&1 &
  MPIRUN_PID=$!
  local started=0
  for _ in $(seq 1 600); do
    if grep -q "Iteration 10," "$WORK/log"; then started=1; break; fi
    kill -0 "$MPIRUN_PID" 2>/dev/null || fail "mpirun ended before training started"
    sleep 0.1
  done
  [ "$started" = 1 ] || fail "training did not reach iteration 10 within 60 s"
  local ranks=() r pid
  for r in 0 1 2 3; do
    pid=$(rank_pid "$r") || fail "no process found for rank $r"
    ranks+=("$pid")
  done
  local victim_pid=${ranks[$victim]}
  kill "-$signal" "$victim_pid"
  local killed_at=$SECONDS status=""
  while [ $((SECONDS - killed_at)) -lt 60 ]; do
    if ! kill -0 "$MPIRUN_PID" 2>/dev/null; then
      wait "$MPIRUN_PID"
      status=$?
      break
    fi
    sleep 0.2
  done
  if [ -z "$status" ]; then
    kill -9 "$MPIRUN_PID" 2>/dev/null
    for pid in "${ranks[@]}"; do kill -9 "$pid" 2>/dev/null; done
    fail "mpirun still running 60 s after $signal to rank $victim"
  fi
  MPIRUN_PID=""
  echo "mpirun exited with status $status after $((SECONDS - killed_at)) s"
  if [ "$signal" = TERM ]; then
    # SIGTERM asks for a stop: every rank stops at the same iteration (exit 0, as
    # for SIGINT) and the rank that got it says so.
    grep -q "rank $victim of 4 received a stop request" "$WORK/log" ||
      fail "no message names rank $victim as the one that got SIGTERM"
    grep -q "Optimization stopped early" "$WORK/log" || fail "the stop was not clean"
  else
    [ "$status" -ne 0 ] || fail "mpirun exited with status 0 after losing rank $victim"
  fi
  for pid in "${ranks[@]}"; do
    if kill -0 "$pid" 2>/dev/null && [ "$(ps -o stat= -p "$pid" | cut -c1)" != Z ]; then
      kill -9 "$pid" 2>/dev/null
      fail "rank process $pid still running after mpirun exited"
    fi
  done
  if [ "$signal" = KILL ]; then
    grep -q "process rank $victim .*exited on signal 9" "$WORK/log" ||
      fail "no message names the lost rank $victim"
  fi
  grep -E "rank $victim" "$WORK/log" | head -n 2
}

# An error on one rank only (its own state file is missing) while the others wait for
# it in a collective: the tool aborts the job instead of finalizing.
error_case() {
  echo "== error on rank 2 only"
  sed -e 's/max_iter: 1000000/max_iter: 2/' -e "s|^display: 5|snapshot: 2\nsnapshot_prefix: '$WORK/snap/l'|" \
    "$WORK/solver.prototxt" > "$WORK/short.prototxt"
  mpirun --allow-run-as-root --oversubscribe -np 4 "$CAFFE" train \
    -solver "$WORK/short.prototxt" -threads 1 > "$WORK/log" 2>&1 || fail "the short run failed"
  rm -f "$WORK/snap/l_iter_2.rank2.solverstate"
  local started=$SECONDS status
  timeout -s KILL 90 mpirun --allow-run-as-root --oversubscribe -np 4 "$CAFFE" train \
    -solver "$WORK/solver.prototxt" -threads 1 -snapshot "$WORK/snap/l_iter_2.solverstate" \
    > "$WORK/log" 2>&1
  status=$?
  echo "mpirun exited with status $status after $((SECONDS - started)) s"
  [ "$status" -ne 137 ] || fail "the job hung (killed after 90 s)"
  [ $((SECONDS - started)) -le 60 ] || fail "the job took more than 60 s to end"
  [ "$status" -ne 0 ] || fail "mpirun exited with status 0"
  grep -q "^error: rank 2 of 4: .*l_iter_2.rank2.solverstate: cannot open file" "$WORK/log" ||
    fail "no error line naming rank 2 and its state file"
  grep "^error:" "$WORK/log"
}

run_case KILL 2
run_case TERM 1
error_case
echo "PASS"
