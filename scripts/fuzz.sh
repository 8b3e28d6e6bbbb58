#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer in build-fuzz, then runs each for SECONDS (default 60) on
# a scratch copy of its seed corpus (fuzz/corpus/<target>) plus its saved findings
# (fuzz/regressions/<target>). Exits non-zero if any target finds a crash, leak,
# timeout or out-of-memory, and prints the reproducer's path:
#   build-fuzz/fuzz/<target> <reproducer>      # replays it
# A fixed finding goes into fuzz/regressions/<target>/ so tests/test_fuzz_regressions
# replays it in every normal build.
#
#   scripts/fuzz.sh [SECONDS]
# Env: BUILD_DIR (build-fuzz), JOBS (2), FUZZ_TARGETS (all four), FUZZ_ARGS (extra
# libFuzzer flags).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"

SECONDS_PER_TARGET="${1:-60}"
JOBS="${JOBS:-2}"
BUILD_DIR="${BUILD_DIR:-build-fuzz}"
TARGETS="${FUZZ_TARGETS:-fuzz_net_prototxt fuzz_caffemodel fuzz_datum_transform fuzz_idx}"

# The entry points' own caps (kMax...Bytes in fuzz/fuzz_entry_points.hpp), read from
# there so that the two cannot disagree: longer inputs are skipped by the entry point,
# so generating them would waste runs.
max_len() {
  local constant
  case "$1" in
    fuzz_net_prototxt) constant=kMaxPrototxtBytes ;;
    fuzz_caffemodel) constant=kMaxCaffemodelBytes ;;
    fuzz_datum_transform) constant=kMaxDatumBytes ;;
    fuzz_idx) constant=kMaxIdxBytes ;;
  esac
  local expression
  expression=$(sed -n "s/^constexpr size_t $constant = \(.*\);.*/\1/p" fuzz/fuzz_entry_points.hpp)
  [[ "$expression" =~ ^[0-9\ \*]+$ ]] || { echo "fuzz.sh: no $constant in fuzz/fuzz_entry_points.hpp" >&2; exit 2; }
  echo $((expression))
}

SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi

t0=$(date +%s)
# fuzzer-no-link: coverage instrumentation for the whole library, without libFuzzer's
# main(); only the four targets link the driver. MPI and OpenCV are off: no fuzzed
# path reaches them, and OpenCV's own decoders are not ours to fuzz.
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DCPU_ONLY=ON \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ "${launcher[@]}" \
  -DBUILD_FUZZERS=ON -DBUILD_TESTS=OFF -DUSE_MPI=OFF -DUSE_OPENCV=OFF \
  -DCMAKE_C_FLAGS="$SAN -fsanitize=fuzzer-no-link -g1" \
  -DCMAKE_CXX_FLAGS="$SAN -fsanitize=fuzzer-no-link -g1" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
# shellcheck disable=SC2086
cmake --build "$BUILD_DIR" -j "$JOBS" --target $TARGETS
t1=$(date +%s)
echo "fuzz.sh: build took $((t1 - t0)) s"

export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$ROOT/scripts/sanitizer.supp:print_suppressions=0"

failed=()
for target in $TARGETS; do
  work="$BUILD_DIR/fuzz-run/$target"
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/artifacts"
  cp -r "fuzz/corpus/$target/." "$work/corpus/"
  if [ -d "fuzz/regressions/$target" ]; then cp -r "fuzz/regressions/$target/." "$work/corpus/"; fi
  dict=()
  if [ -f "fuzz/$target.dict" ]; then dict=(-dict="fuzz/$target.dict"); fi
  echo "fuzz.sh: $target for ${SECONDS_PER_TARGET} s"
  ts=$(date +%s)
  status=0
  # -timeout: one input taking 25 s is a hang; -rss_limit_mb: the entry points cap blob
  # memory at 256 MB, so 2.5 GB is a leak or an unguarded allocation.
  # shellcheck disable=SC2086
  "$BUILD_DIR/fuzz/$target" -max_total_time="$SECONDS_PER_TARGET" \
      -max_len="$(max_len "$target")" -timeout=25 -rss_limit_mb=2560 \
      -print_final_stats=1 -artifact_prefix="$work/artifacts/" "${dict[@]}" ${FUZZ_ARGS:-} \
      "$work/corpus" >"$work/log.txt" 2>&1 || status=$?
  te=$(date +%s)
  grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb" "$work/log.txt" | tr '\n' ' ' || true
  echo "($((te - ts)) s, exit $status)"
  if [ "$status" -ne 0 ]; then
    failed+=("$target")
    tail -n 60 "$work/log.txt"
    for artifact in "$work/artifacts"/*; do
      [ -e "$artifact" ] && echo "fuzz.sh: $target reproducer: $ROOT/$artifact"
    done
  fi
done
t2=$(date +%s)
echo "fuzz.sh: runs took $((t2 - t1)) s (total $((t2 - t0)) s)"
if [ "${#failed[@]}" -ne 0 ]; then
  echo "fuzz.sh: findings in: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz.sh: no findings"
