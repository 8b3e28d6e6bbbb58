#!/usr/bin/env bash
# Builds the CPU variant with AddressSanitizer + UndefinedBehaviorSanitizer (g++) in
# build-asan and runs the whole ctest suite under it. Any memory error, undefined
# behaviour or leak in our code fails the run; known third-party leaks are suppressed
# in scripts/sanitizer.supp (each entry says why).
#
#   scripts/sanitize.sh            # build + run every suite
#   CTEST_ARGS="-R test_blob" scripts/sanitize.sh
#
# Env: BUILD_DIR (build-asan), JOBS (2), CTEST_ARGS (extra ctest flags).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"

JOBS="${JOBS:-2}"
BUILD_DIR="${BUILD_DIR:-build-asan}"
SAN_FLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"

launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi

t0=$(date +%s)
# -g1: line tables for readable reports at a fraction of full debug info's compile
# time. Release keeps -O2, so the suites run at a tolerable speed under ASan.
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DCPU_ONLY=ON \
  -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ "${launcher[@]}" \
  -DCMAKE_C_FLAGS="$SAN_FLAGS -g1" -DCMAKE_CXX_FLAGS="$SAN_FLAGS -g1" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" ${CMAKE_ARGS:-} >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS"
t1=$(date +%s)
echo "sanitize.sh: build took $((t1 - t0)) s"

# Leaks are checked: a leak in a layer or the solver would grow a long training run.
# Third-party libraries that keep process-lifetime allocations are suppressed.
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:detect_stack_use_after_return=0"
export LSAN_OPTIONS="suppressions=$ROOT/scripts/sanitizer.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# Open MPI: keep the MPI suites on the ob1 point-to-point layer with the self and
# shared-memory (vader) transports. UCX installs its own malloc/mmap hooks (ucm),
# which clash with ASan's allocator interceptors; single-node runs do not need it.
export OMPI_MCA_pml=ob1
export OMPI_MCA_btl=self,vader
export OMPI_MCA_osc="^ucx"
export OMPI_MCA_btl_vader_single_copy_mechanism=none

# Two passes. The MPI suites (and the scripts that train under mpirun) need the slow
# unwinder for leak reports: Open MPI's leaks are allocated inside its libraries, and
# the fast frame-pointer unwinder stops in their frame-pointer-less code, so the
# suppressions cannot see libmpi/libopen-rte in the stack. Everything else keeps
# the fast unwinder.
MPI_SUITES='^test_mpi_|^test_reproduce_'
status=0
(cd "$BUILD_DIR" && ctest --output-on-failure -j "$JOBS" -E "$MPI_SUITES" ${CTEST_ARGS:-}) || status=$?
(cd "$BUILD_DIR" && ASAN_OPTIONS="$ASAN_OPTIONS:fast_unwind_on_malloc=0" \
   ctest --output-on-failure -j "$JOBS" -R "$MPI_SUITES" ${CTEST_ARGS:-}) || status=$?
t2=$(date +%s)
echo "sanitize.sh: ctest took $((t2 - t1)) s (total $((t2 - t0)) s), exit $status"
exit "$status"
