#!/usr/bin/env bash
# CPU training steps, caffe-iwp against PyTorch (Debian's python3-torch under
# /usr/bin/python3), side by side; see bench/cpu_vs_torch.py for what is measured.
#   bench/cpu_vs_torch.sh [--quick] [--nets lenet,resnet20,alexnet,resnet50] [--threads 1,2]
# Builds the two drivers it needs (build/bench/cpu_train_step, build/bench/sgemm_gflops)
# in build/ with the project's usual CPU flags, then writes markdown tables to stdout
# and build/cpu_vs_torch.md. The full run takes about 10-15 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  echo "error: PyTorch is not importable by /usr/bin/python3 (apt-get install python3-torch)" >&2
  exit 1
fi
mkdir -p build
(cd build && cmake .. -DCPU_ONLY=ON -DCMAKE_BUILD_TYPE=Release >/dev/null &&
   make -j"$(nproc)" cpu_train_step sgemm_gflops >/dev/null)
exec /usr/bin/python3 bench/cpu_vs_torch.py "$@"
