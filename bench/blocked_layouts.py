#!/usr/bin/env python3
"""Blocked or plain activations between oneDNN's convolutions: the training step with
the layout plan (Net::PlanChannelBlockedLayouts) off and on, side by side in one run.

    python3 bench/blocked_layouts.py [--nets resnet20,resnet50] [--threads 1,2]
                                     [--rounds 3] [--caffe build/tools/caffe]

Runs `caffe time -stage synthetic` of each net at each thread count with
`-blocked_layouts=false` and `=true` in turn, alternating within every round. Both
compute the same values bit for bit (tests/test_channel_blocked_layout.cpp); the plan
only removes the reorders between the convolutions' blocked layout and plain blobs.
Prints a Markdown table of the median step per cell and plain / blocked (above 1: the
plan is faster).
"""

import argparse
import os
import sys

from caffe_time_runs import REPO, Variant, alternate, check_nets, print_ratio_table


def main(argv):
    parser = argparse.ArgumentParser(description="the layout plan off and on")
    parser.add_argument("--nets", default="resnet20,resnet50")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--caffe", default=os.path.join(REPO, "build", "tools", "caffe"))
    args = parser.parse_args(argv)
    nets = check_nets(args.nets)
    threads = [int(t) for t in args.threads.split(",")]
    variants = [Variant("plain", args=["-blocked_layouts=false"]),
                Variant("blocked", args=["-blocked_layouts=true"])]
    times = alternate(args.caffe, args.rounds, nets, threads, variants)
    print_ratio_table(times, nets, threads, "plain", "blocked",
                      ("plain blobs", "blocked between convolutions", "plain / blocked"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
