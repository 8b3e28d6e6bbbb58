#!/usr/bin/env bash
# ctest: scripts/reproduce_imagenet.sh --smoke end to end: generated images ->
# convert_imageset -> compute_image_mean -> 2-rank AlexNet training (DENSE and IWP)
# through a hostfile -> TABLE.md. Checks what the pipeline must get right, not
# accuracies (6 iterations on 64 images mean nothing).
#   tests/test_reproduce_imagenet_smoke.sh [BUILD_DIR]
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-${CAFFE_BUILD:-$repo/build}}
out=$(mktemp -d "${TMPDIR:-/tmp}/imagenet_smoke.XXXXXX")
trap 'rm -rf "$out"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

"$repo/scripts/reproduce_imagenet.sh" --smoke --build "$build" --out "$out/results" \
  > "$out/smoke.log" 2>&1 || { tail -40 "$out/smoke.log" >&2; fail "reproduce_imagenet.sh --smoke exited non-zero"; }

results=$out/results
for f in db/ilsvrc12_train_lmdb/data.mdb db/ilsvrc12_val_lmdb/data.mdb \
         db/imagenet_mean.binaryproto TABLE.md README.md hostfile; do
  [[ -s $results/$f ]] || fail "$f missing or empty"
done
grep -q "convert_imageset" "$results/README.md" || fail "README.md lacks the mode note"

# Every run read the real Data path and finished with a test.
for method in dense iwp; do
  log=$results/runs/alexnet_${method}_np2_s1.log
  grep -q "Data-parallel training on 2 rank(s)" "$log" || fail "$log: not a 2-rank run"
  grep -q "Final: iteration 6, .*test 0/accuracy = " "$log" || fail "$log: no final test"
done

# TABLE.md: one row per method, with the exchange figures IWP must show at 1/64.
python3 - "$results/TABLE.md" <<'EOF' || fail "TABLE.md content (see above)"
import re, sys
rows = {}
for line in open(sys.argv[1]):
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) == 13 and cells[0] == "alexnet":
        rows[cells[1]] = cells
assert set(rows) == {"DENSE", "IWP"}, "rows: %s" % sorted(rows)
for method, cells in rows.items():
    assert cells[2] == "2" and cells[3] == "6", cells
    assert re.fullmatch(r"\d+\.\d\d", cells[7]), "top-1 cell %r" % cells[7]
nominal = float(rows["IWP"][5].rstrip("x"))
wire = float(rows["IWP"][6].rstrip("x"))
assert 50 <= nominal <= 70, "IWP nominal ratio %s, expected about 64" % nominal
assert wire > 10, "IWP wire ratio %s" % wire
assert rows["DENSE"][5] == "1.0x" and rows["DENSE"][6] == "1.0x", rows["DENSE"]
# AlexNet with fc8 of 2 outputs: 56,876,418 parameters; a 2-rank ring sends 4 bytes each.
assert rows["DENSE"][9] == "227.5 MB", rows["DENSE"][9]
print("TABLE.md ok: IWP nominal %.1fx, wire %.1fx" % (nominal, wire))
EOF
echo "PASS: reproduce_imagenet --smoke"
