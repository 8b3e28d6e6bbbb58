#!/usr/bin/env bash
# Installs dependencies, builds (CPU variant), checks that the C++ lines changed since
# .clang-format arrived follow it (scripts/check_format.sh), runs the whole ctest suite, and, when
# nvcc is present, also compiles the CUDA variant so GPU code can never silently
# stop compiling (its GPU tests skip on machines without a GPU). Then builds the
# libFuzzer targets with clang + ASan/UBSan and runs each for FUZZ_SECONDS (default
# 20; SKIP_FUZZ=1 skips it). The ASan+UBSan run of the whole suite does not fit CI's
# time (about 45 minutes here): scripts/sanitize.sh, last result in fuzz/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"

JOBS="${JOBS:-2}"
BUILD_DIR="${BUILD_DIR:-build}"

bash scripts/setup_deps.sh

cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DCPU_ONLY=ON ${CMAKE_ARGS:-}
cmake --build "$BUILD_DIR" -j "$JOBS"

if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  if [ "${SKIP_CUDA_BUILD:-0}" != "1" ]; then
    echo "test.sh: compiling the CUDA variant in ${BUILD_DIR}-cuda"
    # Library and tools, then the GPU suites alone (test_gpu_all, what the GPU check
    # runs): their CUDA halves compile nowhere else, and a lent GPU machine's few
    # minutes must not be lost to a compile error. The other suites are the same
    # sources as the CPU build; compiling them twice would double CI time.
    # Its Python module stays in its own folder: python/caffe holds the CPU build's,
    # which the pytest suites load.
    cmake -S . -B "${BUILD_DIR}-cuda" -DCMAKE_BUILD_TYPE=Release -DCPU_ONLY=OFF -DBUILD_TESTS=OFF \
      -DPYCAFFE_OUTPUT_DIR="$ROOT/${BUILD_DIR}-cuda/python/caffe" ${CMAKE_ARGS:-}
    cmake --build "${BUILD_DIR}-cuda" -j "$JOBS"
    cmake -S . -B "${BUILD_DIR}-cuda" -DBUILD_TESTS=ON >/dev/null
    cmake --build "${BUILD_DIR}-cuda" -j "$JOBS" --target test_gpu_all
  fi
else
  echo "test.sh: nvcc not found; CUDA variant not compiled"
fi

# New code follows .clang-format (the lines changed since it arrived).
bash scripts/check_format.sh

cd "$BUILD_DIR"
ctest --output-on-failure -j "$JOBS" ${CTEST_ARGS:-}
cd "$ROOT"

if [ "${SKIP_FUZZ:-0}" != "1" ]; then
  echo "test.sh: fuzzing each target for ${FUZZ_SECONDS:-20} s"
  JOBS="$JOBS" bash scripts/fuzz.sh "${FUZZ_SECONDS:-20}"
fi
