#!/usr/bin/env bash
# Builds, on a development machine without a GPU, what scripts/gpu_check.sh runs on a
# lent GPU machine, and packs it into .gpu_bundle/caffe-gpu.tar.xz (git-ignored).
#
#   scripts/gpu_bundle.sh            then, with the device tool:
#   run  command: bash scripts/gpu_check.sh   carry: [".gpu_bundle"]   timeout_s: 540
#
# Why a bundle: the GPU machine has CUDA 13, its driver, cuDNN and NCCL (in PyTorch's
# Python packages) and nothing can be installed there, but none of our Debian
# libraries (protobuf, glog, gflags, LMDB, OpenBLAS). So the binaries are built here
# for sm_90 (plus PTX) and travel with the shared libraries they need that a CUDA
# image lacks; the CUDA, cuBLAS, cuDNN and NCCL libraries are the machine's own, so
# they match its driver. The build leaves out what the check does not use, which
# keeps that set small: OpenCV (USE_OPENCV=OFF, as BVLC Caffe allowed), oneDNN (the
# CPU engine; the CPU reference in the tests is the CAFFE engine) and MPI (one rank
# on one GPU). What travels is limited to 64 MiB; the script checks the size.
#
# Environment: BUILD_DIR (default build-gpu), JOBS (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build-gpu}
jobs=${JOBS:-2}
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[[ -x $nvcc ]] || { echo "error: nvcc not found (install the CUDA toolkit)" >&2; exit 1; }

launchers=()
if command -v ccache >/dev/null; then
  launchers=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
# Portable host code: -march=native here (an AMD EPYC) could use instructions the GPU
# machine's CPU lacks. x86-64-v3 (AVX2 and FMA) runs on any CPU an H200 is paired
# with, and keeps FMA, whose rounding the BatchNorm GPU test matches exactly.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCPU_ONLY=OFF -DCUDA_ARCH=90 \
  -DNATIVE_ARCH=OFF -DCMAKE_CXX_FLAGS=-march=x86-64-v3 \
  -DUSE_OPENCV=OFF -DUSE_DNNL=OFF -DUSE_MPI=OFF -DBUILD_PYTHON=OFF "${launchers[@]}" >/dev/null
targets=(caffe test_gpu_all)
[[ -f bench/gpu_iwp_selection_bench.cpp ]] && targets+=(gpu_iwp_selection_bench)
cmake --build "$build" -j "$jobs" --target "${targets[@]}"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
cp "$build/tools/caffe" "$build/tests/test_gpu_all" "$stage/bin/"
[[ -x $build/bench/gpu_iwp_selection_bench ]] && cp "$build/bench/gpu_iwp_selection_bench" "$stage/bin/"

# The libraries to carry: every one ldd resolves, except glibc's own (the machine has
# a newer glibc; ours would not load) and NVIDIA's (the machine's match its driver).
for binary in "$stage"/bin/*; do
  ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }'
done | sort -u | while read -r name path; do
  case $name in
    linux-vdso*|ld-linux*|libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*) ;;
    libcuda.so*|libcudart*|libcublas*|libcudnn*|libnccl*|libnvrtc*|libnvJitLink*|libcurand*) ;;
    *) cp -L "$path" "$stage/lib/$name" ;;
  esac
done
missing=$(for binary in "$stage"/bin/*; do ldd "$binary" | grep "not found" || true; done |
          grep -v -E "libcuda\.so|libcudnn|libnccl" || true)
[[ -z $missing ]] || { echo "error: unresolved libraries:"; echo "$missing"; exit 1; } >&2

mkdir -p .gpu_bundle
tar -C "$stage" -cJf .gpu_bundle/caffe-gpu.tar.xz bin lib
size=$(stat -c %s .gpu_bundle/caffe-gpu.tar.xz)
tree_size=$(git ls-files -z | xargs -0 du -cb | tail -1 | cut -f1)
echo "gpu_bundle: .gpu_bundle/caffe-gpu.tar.xz $(( size / 1048576 )) MiB" \
     "(+ $(( tree_size / 1048576 )) MiB working tree; the limit is 64 MiB)"
ls "$stage/lib"
(( size + tree_size < 60 * 1048576 )) || { echo "error: bundle too large to carry" >&2; exit 1; }
