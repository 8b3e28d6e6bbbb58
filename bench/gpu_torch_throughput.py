#!/usr/bin/env python3
"""PyTorch's training throughput on the GPU for one of our prototxt nets.

The net is built from the same prototxt file as `caffe time` uses (TRAIN phase,
"synthetic" stage) by bench/cpu_vs_torch.py's translator, so the layer shapes agree
by construction. One step: zero_grad, forward with cross-entropy loss, backward, SGD
with momentum. After warm-up, `--iterations` steps are timed between two
torch.cuda.synchronize() calls. cuDNN autotuning (benchmark mode) is on, as a PyTorch
user would run it; TF32 follows PyTorch's defaults unless --no-tf32.

  python3 bench/gpu_torch_throughput.py PROTOTXT [--iterations 20] [--no-tf32]
Prints one line: "images_per_s <value> ms_per_step <value> batch <n>", and on the GPU
"device_mb_in_use <value> allocator_peak_reserved_mb <value>": the device's memory in
use after the timed steps (total less free, as `caffe train -gpu` logs it: the CUDA
context and every allocation count) and the caching allocator's high-water mark.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_vs_torch import build_torch_net  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("prototxt")
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--no-tf32", action="store_true")
    parser.add_argument("--device", default="cuda",
                        help="cuda (default), or cpu to check the script on a machine without a GPU")
    args = parser.parse_args()

    import torch

    on_gpu = args.device == "cuda"
    if on_gpu and not torch.cuda.is_available():
        print("error: PyTorch sees no CUDA device", file=sys.stderr)
        return 1

    def sync():
        if on_gpu:
            torch.cuda.synchronize()

    torch.backends.cudnn.benchmark = True
    if args.no_tf32:
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(1)
    net = build_torch_net(args.prototxt, torch, device=args.device).to(args.device).train()
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    batch = net.data_batch

    def step():
        opt.zero_grad(set_to_none=True)
        loss = net()
        loss.backward()
        opt.step()

    for _ in range(args.warmup):
        step()
    sync()
    start = time.perf_counter()
    for _ in range(args.iterations):
        step()
    sync()
    ms = (time.perf_counter() - start) * 1e3 / args.iterations
    print("images_per_s %.1f ms_per_step %.3f batch %d" % (batch * 1e3 / ms, ms, batch))
    if on_gpu:
        free, total = torch.cuda.mem_get_info()
        print("device_mb_in_use %.0f allocator_peak_reserved_mb %.0f" % (
            (total - free) / 2**20, torch.cuda.max_memory_reserved() / 2**20))
    return 0


if __name__ == "__main__":
    sys.exit(main())
