#!/usr/bin/env bash
# ctest: scripts/reproduce_fashion.sh --quick end to end (LeNet, every exchange
# method at 4 ranks, IWP and TOPK_ALLGATHER at 2, 30 iterations) into a temporary
# folder, then checks TABLE.md: one row per run group, and the exchange figures each
# method must show at density 1/64 in the steady state. Accuracies after 30
# iterations mean nothing and are only checked to be numbers.
#   tests/test_reproduce_fashion_quick.sh [BUILD_DIR]
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-${CAFFE_BUILD:-$repo/build}}
out=$(mktemp -d "${TMPDIR:-/tmp}/fashion_quick.XXXXXX")
trap 'rm -rf "$out"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# A misspelt part of the full protocol is an error before anything runs.
if PARTS="main int 8" CAFFE_BUILD=$build "$repo/scripts/reproduce_fashion.sh" --iwp-full \
     --out "$out/bad_parts" > "$out/bad_parts.log" 2>&1; then
  fail "reproduce_fashion.sh --iwp-full accepted PARTS=\"main int 8\""
fi
grep -q "PARTS: unknown part 'int'" "$out/bad_parts.log" || { cat "$out/bad_parts.log" >&2; fail "no clear error for a bad part"; }
[[ ! -e $out/bad_parts/runs ]] || fail "a bad PARTS started runs"

# FINISHED_ONLY=1 trains nothing: with no finished run it names each run it leaves
# out, then stops with an error, and no run has started.
if FINISHED_ONLY=1 PARTS=ablation MODELS=resnet20_fashion CAFFE_BUILD=$build \
     "$repo/scripts/reproduce_fashion.sh" --iwp-full --out "$out/finished_only" \
     > "$out/finished_only.log" 2>&1; then
  fail "FINISHED_ONLY=1 with no finished runs exited zero"
fi
# One run per ablation row at one seed; the rows are counted in the script itself
# so that a new row does not need a second edit here.
ablation_rows=$(awk '/^if part ablation /{on=1; next} on && /^fi/{on=0} on && /iwp_run resnet20_fashion/' \
  "$repo/scripts/reproduce_iwp_full.sh" | wc -l)
(( ablation_rows >= 10 )) || fail "found only $ablation_rows ablation rows in reproduce_iwp_full.sh"
[[ $(grep -c "not finished, left out (FINISHED_ONLY=1)" "$out/finished_only.log") == "$ablation_rows" ]] \
  || { cat "$out/finished_only.log" >&2; fail "FINISHED_ONLY=1 did not leave out the $ablation_rows ablation runs"; }
grep -q "lists no runs" "$out/finished_only.log" || fail "no clear error for an empty table"
! ls "$out/finished_only/runs/"*.log > /dev/null 2>&1 || fail "FINISHED_ONLY=1 started a run"
# ONLY_LABEL keeps the rows whose label contains it: one ablation row, two seeds.
if ONLY_LABEL="no rate limit" ABLATION_SEEDS="2 3" FINISHED_ONLY=1 PARTS=ablation \
     MODELS=resnet20_fashion CAFFE_BUILD=$build "$repo/scripts/reproduce_fashion.sh" --iwp-full \
     --out "$out/only_label" > "$out/only_label.log" 2>&1; then
  fail "FINISHED_ONLY=1 ONLY_LABEL with no finished runs exited zero"
fi
[[ $(grep -c "not finished, left out" "$out/only_label.log") == 2 &&
   $(grep -c "no_rate_limit_np4_s[23]: not finished" "$out/only_label.log") == 2 ]] \
  || { cat "$out/only_label.log" >&2; fail "ONLY_LABEL did not keep just the 'no rate limit' row's two seeds"; }
# A malformed ROBUST_CELLS is an error that names it, before anything runs.
if ROBUST_CELLS="16 2,16" PARTS=robustness MODELS=resnet20_fashion CAFFE_BUILD=$build \
     "$repo/scripts/reproduce_fashion.sh" --iwp-full --out "$out/bad_cells" > "$out/bad_cells.log" 2>&1; then
  fail "reproduce_fashion.sh --iwp-full accepted ROBUST_CELLS=\"16 2,16\""
fi
grep -q "ROBUST_CELLS: cell '16' is not" "$out/bad_cells.log" || { cat "$out/bad_cells.log" >&2; fail "no clear error for a bad cell"; }
[[ ! -e $out/bad_cells/runs ]] || fail "a bad ROBUST_CELLS started runs"
# ROBUST_CELLS picks ResNet-20's robustness cells: one cell, DENSE and IWP.
if ROBUST_CELLS="16 2" FINISHED_ONLY=1 PARTS=robustness MODELS=resnet20_fashion \
     CAFFE_BUILD=$build "$repo/scripts/reproduce_fashion.sh" --iwp-full \
     --out "$out/robust_cells" > "$out/robust_cells.log" 2>&1; then
  fail "FINISHED_ONLY=1 ROBUST_CELLS with no finished runs exited zero"
fi
[[ $(grep -c "not finished, left out" "$out/robust_cells.log") == 2 &&
   $(grep -c "_b16_[a-z]*_np2_s1: not finished" "$out/robust_cells.log") == 2 ]] \
  || { cat "$out/robust_cells.log" >&2; fail "ROBUST_CELLS=\"16 2\" did not keep just that cell's two runs"; }

CAFFE_BUILD=$build "$repo/scripts/reproduce_fashion.sh" --quick --out "$out" > "$out/quick.log" 2>&1 \
  || { tail -40 "$out/quick.log" >&2; fail "reproduce_fashion.sh --quick exited non-zero"; }
[[ -s $out/TABLE.md && -s $out/README.md ]] || fail "TABLE.md or README.md missing"

python3 - "$out/TABLE.md" <<'EOF' || fail "TABLE.md content (see above)"
import re, sys
rows = {}
for line in open(sys.argv[1]):
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) == 13 and cells[0] == "lenet_fashion":
        rows[(cells[1], int(cells[2]))] = cells
expected = {(m, 4) for m in ("DENSE", "FIXED_THRESHOLD", "IWP (global)", "IWP (layer-wise)",
                             "TOPK_ALLGATHER", "RANDOMK", "SCALECOM", "POWERSGD rank 2")}
expected |= {("IWP (layer-wise)", 2), ("TOPK_ALLGATHER", 2)}
expected |= {("IWP (layer-wise) vmr_exponent 1", 4)}  # the vmr_exponent sweep's path
assert set(rows) == expected, "rows: %s" % sorted(rows)
ratio = lambda cells, i: float(cells[i].rstrip("x"))
for key, cells in rows.items():
    assert re.fullmatch(r"\d+\.\d\d", cells[7]), "%s top-1 %r" % (key, cells[7])
    assert cells[3] == ("30" if key[1] == 4 else "60"), "%s iterations %s" % (key, cells[3])
assert ratio(rows[("DENSE", 4)], 5) == 1.0 and ratio(rows[("DENSE", 4)], 6) == 1.0
# LeNet: 431,080 parameters; a 4-rank ring sends 2 x 3/4 x 4 bytes each.
assert rows[("DENSE", 4)][9] == "2.6 MB", rows[("DENSE", 4)][9]
for key in [("IWP (global)", 4), ("IWP (layer-wise)", 4), ("TOPK_ALLGATHER", 4), ("RANDOMK", 4),
            ("SCALECOM", 4),
            ("IWP (layer-wise)", 2), ("TOPK_ALLGATHER", 2), ("IWP (layer-wise) vmr_exponent 1", 4)]:
    nominal = ratio(rows[key], 5)
    assert 55 <= nominal <= 70, "%s nominal ratio %s, expected about 64" % (key, nominal)
# PowerSGD at rank 2 on LeNet: 5,390 of 431,080 values per step (80.0x) after warm-up.
assert 75 <= ratio(rows[("POWERSGD rank 2", 4)], 5) <= 85, rows[("POWERSGD rank 2", 4)]
# IWP's traffic stays k-sparse; top-k's all-gather grows with N.
assert ratio(rows[("IWP (layer-wise)", 4)], 6) > 2 * ratio(rows[("TOPK_ALLGATHER", 4)], 6)
assert ratio(rows[("TOPK_ALLGATHER", 2)], 6) > ratio(rows[("TOPK_ALLGATHER", 4)], 6)
print("TABLE.md ok: %d rows" % len(rows))
EOF

# A finished run is reused while its solver's settings are unchanged: a comment added
# to the solver (as when a shipped solver's comments are reworded) keeps it, and so
# does a run recorded with sync_param's older flat form of IWP's settings.
first=$(ls "$out/runs/"*.prototxt | head -1)
name=$(basename "$first" .prototxt)
echo "# a comment written after the run" >> "$first"
flat=$(grep -l "iwp_param {" "$out/runs/"*.prototxt | head -1)
[ -n "$flat" ] || fail "no run's solver has an iwp_param block"
flat_name=$(basename "$flat" .prototxt)
sed -i -E 's/iwp_param \{ *([^}]*)\}/\1/' "$flat"
grep -q "iwp_param" "$flat" && fail "could not write $flat in the flat form"
CAFFE_BUILD=$build "$repo/scripts/reproduce_fashion.sh" --quick --out "$out" > "$out/again.log" 2>&1 \
  || { tail -40 "$out/again.log" >&2; fail "reproduce_fashion.sh --quick, run again, exited non-zero"; }
grep -q "^$name: done before" "$out/again.log" \
  || { cat "$out/again.log" >&2; fail "$name trained again after a comment changed in its solver"; }
grep -q "^$flat_name: done before" "$out/again.log" \
  || { cat "$out/again.log" >&2; fail "$flat_name trained again: its solver in the flat form was taken for other settings"; }
echo "PASS: reproduce_fashion --quick"
