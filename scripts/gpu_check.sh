#!/usr/bin/env bash
# The GPU check, run ON a lent GPU machine (one H200, CUDA 13, no internet) from the
# repository root, after scripts/gpu_bundle.sh made .gpu_bundle/ here (see that
# script for the device tool call). Fits in about 8 minutes. It
#   1. unpacks the bundle and finds the machine's CUDA, cuBLAS, cuDNN and NCCL
#      libraries (the CUDA toolkit's lib64, and PyTorch's nvidia-* Python packages);
#   2. prints device_query and runs every GPU test suite, one process each (test_gpu_all: each GPU
#      layer against its CPU reference, GPU gradient checks, device IWP selection
#      against the CPU's);
#   3. times training steps with `caffe time -gpu 0` (forward + backward, per layer)
#      for AlexNet at batch 256 and ResNet-50 at batch 64 (their "synthetic" stage,
#      DummyData, with the batch raised), measures the device IWP selection per step
#      on the same nets' parameter sizes, and, where PyTorch sees the GPU, the same
#      nets' training throughput in PyTorch (bench/gpu_torch_throughput.py), and
#      the device memory in use after `caffe train` steps and after PyTorch's;
#   4. prints one table and writes it to $OUT (or /tmp/gpu_check) as gpu_check.md,
#      with every log packed in gpu_check_logs.tar.gz beside it;
#   5. reruns up to three failing suites under compute-sanitizer memcheck, time allowing.
# Copy the table and the date into bench/README.md ("GPU check").
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
# The device tool brings back at most 8 files from $OUT, so the logs are written to a
# folder of their own and packed into one archive beside the table when the script ends.
results=${OUT:-/tmp/gpu_check}
out=$(mktemp -d /tmp/gpu_check_logs.XXXX)
mkdir -p "$results"
pack_logs() {
  [[ -f $out/gpu_check.md ]] && cp "$out/gpu_check.md" "$results/"
  tar -C "$out" -czf "$results/gpu_check_logs.tar.gz" .
}
trap pack_logs EXIT
iters=${GPU_CHECK_ITERATIONS:-20}
bundle=.gpu_bundle/caffe-gpu.tar.xz
[[ -f $bundle ]] || { echo "error: $bundle missing: run scripts/gpu_bundle.sh on the development machine and carry .gpu_bundle" >&2; exit 1; }
work=$(mktemp -d /tmp/caffe-gpu.XXXX)
tar -C "$work" -xJf "$bundle"

# NVIDIA's libraries as this machine has them.
libdirs=$work/lib
for dir in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [[ -d $dir ]] && libdirs+=":$dir"
done
python_libs=$(python3 - <<'PY' 2>/dev/null
import glob, os, site
roots = site.getsitepackages() + [site.getusersitepackages()]
dirs = set()
for root in roots:
    for lib in glob.glob(os.path.join(root, "nvidia", "*", "lib")):
        dirs.add(lib)
print(":".join(sorted(dirs)))
PY
)
[[ -n $python_libs ]] && libdirs+=":$python_libs"
export LD_LIBRARY_PATH=$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
caffe=$work/bin/caffe

echo "== device"
nvidia-smi -L 2>&1 | head -4
"$caffe" device_query -gpu 0 2>&1 | tee "$out/device_query.txt"
ldd "$caffe" | grep -E "not found" && { echo "error: libraries missing (above)"; exit 1; }

echo "== GPU tests"
# One process per test suite: none of this code had run on a GPU before, and one bad
# kernel leaves a sticky CUDA error that fails every later test in the same process,
# which would hide which suites really work. A suite that crashes or hangs is listed
# by name; the whole step stops starting suites after GPU_TEST_BUDGET_S seconds.
test_log=$out/test_gpu_all.log
: > "$test_log"
tests_passed=0 tests_failed=0 tests_skipped=0 tests_rc=0
crashed_suites="" unrun_suites="" bad_suites=""
budget=${GPU_TEST_BUDGET_S:-300}
started=$SECONDS
suites=$("$work/bin/test_gpu_all" --gtest_list_tests 2>>"$test_log" | sed -n 's/^\([A-Za-z0-9_/]*\)\.$/\1/p')
[[ -n $suites ]] || { echo "error: test_gpu_all lists no tests (see $test_log)"; tests_rc=1; }
for suite in $suites; do
  if (( SECONDS - started > budget )); then unrun_suites+=" $suite"; tests_rc=1; continue; fi
  suite_log=$(mktemp)
  timeout 90 "$work/bin/test_gpu_all" --gtest_brief=1 --gtest_filter="$suite.*" > "$suite_log" 2>&1
  rc=$?
  { echo "=== $suite (exit $rc)"; cat "$suite_log"; } >> "$test_log"
  passed=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$suite_log")
  skipped=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$suite_log")
  failed=$(grep -c "^\[  FAILED  \] [A-Za-z]" "$suite_log")
  tests_passed=$((tests_passed + ${passed:-0}))
  tests_skipped=$((tests_skipped + ${skipped:-0}))
  tests_failed=$((tests_failed + failed))
  # gtest exits 1 when tests fail; anything else (a signal, 124 from timeout) is a crash.
  if (( rc != 0 )); then
    tests_rc=1
    bad_suites+=" $suite"
    (( rc != 1 )) && crashed_suites+=" $suite(exit $rc)"
  fi
  rm -f "$suite_log"
done
grep -E "^\[  FAILED  \] [A-Za-z]" "$test_log" | sort -u | head -40
echo "passed $tests_passed, failed $tests_failed, skipped $tests_skipped; crashed:${crashed_suites:- none}; not run (time):${unrun_suites:- none}"

# with_batch PROTOTXT BATCH OUT: the synthetic stage's DummyData batch set to BATCH.
with_batch() {
  python3 - "$1" "$2" "$3" <<'PY'
import re, sys
src, batch, dst = sys.argv[1], sys.argv[2], sys.argv[3]
text = open(src).read()
# The DummyData shapes are the only "shape { dim: N ..." blocks in these files.
text = re.sub(r"shape \{ dim: \d+", "shape { dim: " + batch, text)
open(dst, "w").write(text)
PY
}

declare -A ms images layers_top sel_ms torch_ips torch_tf32_ips train_ips pcie device_mb torch_device_mb
for net in alexnet:256 resnet50:64; do
  name=${net%%:*} batch=${net##*:}
  model=$out/${name}_b$batch.prototxt
  with_batch "models/$name/train_val.prototxt" "$batch" "$model"
  echo "== caffe time $name batch $batch"
  timeout 240 "$caffe" time -model "$model" -stage synthetic -gpu 0 -iterations "$iters" \
    > "$out/time_$name.log" 2>&1 || { tail -5 "$out/time_$name.log"; }
  ms[$name]=$(sed -n 's/.*Average Forward-Backward: \([0-9.]*\) ms.*/\1/p' "$out/time_$name.log")
  if [[ -n ${ms[$name]} ]]; then
    images[$name]=$(awk -v b="$batch" -v t="${ms[$name]}" 'BEGIN { printf "%.0f", b * 1000 / t }')
    # The five layers that took longest (forward + backward).
    layers_top[$name]=$(awk '/forward: / { f[$(NF-3)] += $(NF-1) } /backward: / { f[$(NF-3)] += $(NF-1) }
      END { for (l in f) printf "%s %.2f\n", l, f[l] }' "$out/time_$name.log" |
      sort -k2 -g -r | head -5 | awk '{ printf "%s%s %s ms", (NR > 1 ? ", " : ""), $1, $2 }')
  fi
  # Whole training steps through `caffe train` (forward, backward, the solver's update):
  # images/s from the last display line, and the PCIe bytes per step it logs.
  cat > "$out/solver_$name.prototxt" <<SOLVER
net: "$model"
train_state { stage: "synthetic" }
base_lr: 0.001
lr_policy: "fixed"
momentum: 0.9
weight_decay: 0.0005
max_iter: $((3 * iters))
display: $iters
snapshot_after_train: false
solver_mode: GPU
SOLVER
  timeout 240 "$caffe" train -solver "$out/solver_$name.prototxt" -gpu 0 \
    > "$out/train_$name.log" 2>&1 || { tail -5 "$out/train_$name.log"; }
  rate=$(sed -n 's/.*Iteration [0-9]* (\([0-9.]*\) iter\/s.*/\1/p' "$out/train_$name.log" | tail -1)
  [[ -n $rate ]] && train_ips[$name]=$(awk -v b="$batch" -v r="$rate" 'BEGIN { printf "%.0f", b * r }')
  pcie[$name]=$(sed -n 's/.*PCIe per step: host to device \([0-9]*\) bytes, device to host \([0-9]*\) bytes.*/\1 up, \2 down/p' \
    "$out/train_$name.log" | tail -1)
  device_mb[$name]=$(sed -n 's/.*device memory in use: \([0-9]*\) MB.*/\1/p' "$out/train_$name.log" | tail -1)
  if [[ -x $work/bin/gpu_iwp_selection_bench ]]; then
    timeout 120 "$work/bin/gpu_iwp_selection_bench" -model "$model" -stage synthetic \
      > "$out/iwp_$name.log" 2>&1
    sel_ms[$name]=$(sed -n 's/^device selection_ms_per_step \([0-9.]*\).*/\1/p' "$out/iwp_$name.log")
  fi
  if python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
    # --no-tf32: our cuDNN convolutions keep FP32 math (no TF32), so PyTorch does too.
    timeout 180 python3 bench/gpu_torch_throughput.py "$model" --iterations "$iters" --no-tf32 \
      > "$out/torch_$name.log" 2>&1
    torch_ips[$name]=$(sed -n 's/.*images_per_s \([0-9.]*\).*/\1/p' "$out/torch_$name.log")
    torch_device_mb[$name]=$(sed -n 's/.*device_mb_in_use \([0-9]*\) allocator_peak_reserved_mb \([0-9]*\).*/\1 (allocator peak \2)/p' \
      "$out/torch_$name.log")
    timeout 180 python3 bench/gpu_torch_throughput.py "$model" --iterations "$iters" \
      > "$out/torch_tf32_$name.log" 2>&1
    torch_tf32_ips[$name]=$(sed -n 's/.*images_per_s \([0-9.]*\).*/\1/p' "$out/torch_tf32_$name.log")
  fi
done

{
  echo "# GPU check, $(date -u +%Y-%m-%d)"
  echo
  echo "Machine: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)."
  echo "GPU tests (test_gpu_all, one process per suite): $tests_passed passed, $tests_failed failed, $tests_skipped skipped; crashed or timed out:${crashed_suites:- none}; not run for time:${unrun_suites:- none}."
  echo
  echo "| net | batch | caffe-iwp ms/step | images/s | PyTorch images/s | PyTorch / ours | IWP selection ms/step | selection / step | slowest layers (fwd+bwd) |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---|"
  for net in alexnet:256 resnet50:64; do
    name=${net%%:*} batch=${net##*:}
    ratio=""; frac=""
    [[ -n ${torch_ips[$name]:-} && -n ${images[$name]:-} ]] &&
      ratio=$(awk -v a="${torch_ips[$name]}" -v b="${images[$name]}" 'BEGIN { printf "%.2f", a / b }')
    [[ -n ${sel_ms[$name]:-} && -n ${ms[$name]:-} ]] &&
      frac=$(awk -v a="${sel_ms[$name]}" -v b="${ms[$name]}" 'BEGIN { printf "%.1f%%", 100 * a / b }')
    echo "| $name | $batch | ${ms[$name]:-failed} | ${images[$name]:-} | ${torch_ips[$name]:-n/a} | $ratio | ${sel_ms[$name]:-n/a} | $frac | ${layers_top[$name]:-} |"
  done
  echo
  echo "caffe time: $iters timed iterations after one warm-up, the device synchronised around each layer; PyTorch: bench/gpu_torch_throughput.py, $iters steps after 5 warm-up, cudnn.benchmark on, TF32 off on both sides (our cuDNN convolutions choose FP32-math algorithms only)."
  echo
  echo "| net | batch | caffe train images/s (whole step, last $iters iterations) | PCIe bytes per step (parameters must not cross) | PyTorch images/s, TF32 off | ours / PyTorch | PyTorch images/s, TF32 allowed | device MB in use, ours | PyTorch's, TF32 off |"
  echo "|---|---:|---:|---|---:|---:|---:|---:|---|"
  for net in alexnet:256 resnet50:64; do
    name=${net%%:*} batch=${net##*:}
    ratio=""
    [[ -n ${torch_ips[$name]:-} && -n ${train_ips[$name]:-} ]] &&
      ratio=$(awk -v a="${train_ips[$name]}" -v b="${torch_ips[$name]}" 'BEGIN { printf "%.2f", a / b }')
    echo "| $name | $batch | ${train_ips[$name]:-failed} | ${pcie[$name]:-n/a} | ${torch_ips[$name]:-n/a} | $ratio | ${torch_tf32_ips[$name]:-n/a} | ${device_mb[$name]:-n/a} | ${torch_device_mb[$name]:-n/a} |"
  done
  echo
  echo "caffe train: SGD with momentum and weight decay on the synthetic stage's DummyData, $((3 * iters)) iterations, the rate of the last display window; our side keeps FP32 math in both PyTorch columns. Device MB in use: total less free (cudaMemGetInfo) after the steps, the CUDA context included, on both sides (issue 21); PyTorch's caching allocator's own high-water mark in brackets."
} | tee "$out/gpu_check.md"

# The first failing suites once more under compute-sanitizer's memcheck, which names
# the kernel and the out-of-bounds or misaligned access; only while time is left
# (GPU_CHECK_DEADLINE_S after the start, 450 by default).
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [[ -n $bad_suites && -x $sanitizer ]]; then
  echo "== compute-sanitizer memcheck on failing suites"
  for suite in $(echo $bad_suites | tr ' ' '\n' | head -3); do
    (( SECONDS > ${GPU_CHECK_DEADLINE_S:-450} )) && break
    timeout 60 "$sanitizer" --tool memcheck --print-limit 10 "$work/bin/test_gpu_all" \
      --gtest_brief=1 --gtest_filter="$suite.*" > "$out/sanitizer_${suite//\//_}.log" 2>&1
    echo "$suite: $(grep -m1 "ERROR SUMMARY" "$out/sanitizer_${suite//\//_}.log" || echo "no summary (timed out, or the sanitizer could not start; see the log)")"
  done
fi
rm -rf "$work"
[[ $tests_rc == 0 ]]
