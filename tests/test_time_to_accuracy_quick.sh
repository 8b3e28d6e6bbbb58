#!/usr/bin/env bash
# The time-to-accuracy benchmark's whole path in a minute (scripts/time_to_accuracy.sh
# --quick): the reference-regime search, full-length runs at 1 Gbit/s that set the
# target, a run that stops at it at 100 Mbit/s, the table and the plot. Checks that the
# table holds every run and that the reference regime it found puts DENSE fp32's step
# near 16x the compute-only step. Skipped (77) where the emulated cluster cannot be made.
set -euo pipefail
BUILD="$(cd "${1:?usage: test_time_to_accuracy_quick.sh BUILD_DIR}" && pwd)"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
if ! why="$(bash scripts/emulated_cluster.sh check)"; then
  echo "SKIP: $why"
  exit 77
fi
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
TTA_OUT="$OUT" BUILD_DIR="$BUILD" bash scripts/time_to_accuracy.sh --quick --nets lenet_fashion \
  --cells 2x1gbit 2x100mbit --methods "DENSE fp32" IWP
table="$OUT/quick/TABLE.md"
cat "$table"
for cell in 2x1gbit 2x100mbit; do
  for method in "DENSE fp32" IWP; do
    grep -A8 "^### $cell" "$table" | grep -q "^| $method | 1 |" ||
      { echo "FAIL: no $method row in the $cell table"; exit 1; }
  done
done
[ -s "$OUT/quick/lenet_fashion.png" ] || { echo "FAIL: no plot"; exit 1; }
python3 - "$OUT/quick/lenet_fashion/ref/ref.json" <<'PY'
import json, sys
ref = json.load(open(sys.argv[1]))
assert 8 <= ref["ratio"] <= 32, "the reference regime's DENSE fp32 step is %.1fx compute" % ref["ratio"]
PY
# The 100 Mbit/s DENSE fp32 run stopped at the target: its test at that iteration reached it.
grep -q "reached" "$OUT"/quick/lenet_fashion/2x100mbit/dense_fp32_s1.log ||
  { echo "FAIL: the 100 Mbit/s DENSE fp32 run did not stop at the target"; exit 1; }
# A finished run is not run again, also when it was recorded with sync_param's older
# flat form of IWP's settings (the signature compares solvers as caffe reads them).
python3 - "$OUT/quick/lenet_fashion/2x100mbit/iwp_s1.json" <<'PY'
import json, re, sys
meta = json.load(open(sys.argv[1]))
solver = meta["signature"]["solver"]
flat = re.sub(r"iwp_param \{ *([^}]*)\}", r"\1", solver)
assert flat != solver and "iwp_param" not in flat, solver
meta["signature"]["solver"] = flat
json.dump(meta, open(sys.argv[1], "w"))
PY
cp "$OUT/quick/lenet_fashion/ref/ref.json" "$OUT/ref_before.json"
TTA_OUT="$OUT" BUILD_DIR="$BUILD" bash scripts/time_to_accuracy.sh --quick --nets lenet_fashion \
  --cells 2x1gbit 2x100mbit --methods "DENSE fp32" IWP --remeasure-compute > "$OUT/again.log"
# --remeasure-compute measured the compute-only step again and kept the reference rate.
python3 - "$OUT/ref_before.json" "$OUT/quick/lenet_fashion/ref/ref.json" <<'PY'
import json, sys
before, after = (json.load(open(path)) for path in sys.argv[1:])
assert after["earlier_compute_ms"] == [before["compute_ms"]], after
assert after["rate"] == before["rate"] and after["compute_ms"] > 0, (before, after)
PY
grep -q "lenet_fashion 2x100mbit IWP seed 1: done before" "$OUT/again.log" ||
  { cat "$OUT/again.log"; echo "FAIL: the IWP run recorded in the flat form trained again"; exit 1; }
if grep -q "seed [0-9]*: training" "$OUT/again.log"; then
  cat "$OUT/again.log"
  echo "FAIL: a finished run trained again"
  exit 1
fi
echo "PASS"
