#!/usr/bin/env bash
# The emulated cluster's links (scripts/emulated_cluster.sh) carry what their rate
# allows, and keep carrying it when the rate changes under load. One TCP stream from
# rank 1 to rank 0 of a 2-rank cluster at 1 Gbit/s; after 2 s rank 1's link is cut to
# 10 Mbit/s, which must then deliver between 50% and 150% of 10 Mbit/s over the next
# 4 s. (The cut used to stall the link for good: frames queued under the large bucket
# of 1 Gbit/s were bigger than the new bucket and could never leave it.)
# Skipped (exit 77) where the cluster cannot be made: not root, no namespaces, no tc.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CLUSTER="$ROOT/scripts/emulated_cluster.sh"

if ! why="$(bash "$CLUSTER" check)"; then
  echo "SKIP: $why"
  exit 77
fi

NAME="ec$$"
WORK="$(mktemp -d)"
cleanup() {
  bash "$CLUSTER" down "$NAME" || true
  rm -rf "$WORK"
}
trap cleanup EXIT
bash "$CLUSTER" up "$NAME" 2 1gbit

# The receiver writes "SECONDS BYTES" (since its first byte) every 0.1 s.
ip netns exec "$NAME-r0" python3 - "$WORK/received" <<'PY' &
import socket, sys, time
server = socket.create_server(("198.18.0.1", 5001))
connection, _ = server.accept()
total, start, last, out = 0, None, 0.0, open(sys.argv[1], "w", buffering=1)
while True:
    data = connection.recv(1 << 20)
    if not data:
        break
    start = start or time.monotonic()
    total += len(data)
    if time.monotonic() - last >= 0.1:
        last = time.monotonic()
        out.write("%.3f %d\n" % (last - start, total))
PY
receiver=$!
sleep 0.5
ip netns exec "$NAME-r1" python3 - <<'PY' &
import socket, time
connection = socket.create_connection(("198.18.0.1", 5001), timeout=30)
block, start = b"x" * (1 << 20), time.monotonic()
while time.monotonic() - start < 7:
    connection.sendall(block)
PY
sender=$!
sleep 2
bash "$CLUSTER" rate "$NAME" 1 10mbit
sleep 6
wait "$sender" || true
kill "$receiver" 2>/dev/null || true

python3 - "$WORK/received" <<'PY'
import sys
rows = [tuple(map(float, line.split())) for line in open(sys.argv[1]) if line.strip()]
def received_by(t):
    return max((b for s, b in rows if s <= t), default=0)
if received_by(1.5) < 50e6:
    sys.exit("FAIL: 1 Gbit/s carried only %d bytes in its first 1.5 s" % received_by(1.5))
# From 1 s after the cut (the queue of 1 Gbit/s drains first) to 4 s later.
cut = 2.0
carried = received_by(cut + 5) - received_by(cut + 1)
expected = 10e6 / 8 * 4
if not 0.5 * expected <= carried <= 1.5 * expected:
    sys.exit("FAIL: after the cut to 10 Mbit/s the link carried %d bytes in 4 s, "
             "not within 50-150%% of %d" % (carried, expected))
print("ok: cut from 1 Gbit/s to 10 Mbit/s under load, the link carried %.2f Mbit/s" % (carried * 8 / 4 / 1e6))
PY
echo PASS
