#!/usr/bin/env python3
"""One thread pool or two: the training step with OpenBLAS's pthread build against its
OpenMP build, side by side in one run.

    python3 bench/blas_pools.py [--nets lenet,resnet20] [--threads 1,2] [--rounds 3]
                                [--env NAME=VALUE ...] [--caffe build/tools/caffe]

Runs `caffe time -stage synthetic` (forward + backward, the time tool's own average)
of each net at each thread count with each OpenBLAS build in turn, the builds
alternating within every round so that a change in the machine's load hits both.
LD_LIBRARY_PATH names the build's folder (Debian's libopenblas0-pthread and
libopenblas0-openmp), which the loader searches before the binary's RUNPATH. Prints
a Markdown table of the median step per cell and pthread / OpenMP (above 1: the
OpenMP build is faster). oneDNN and the layers' own loops run on OpenMP's threads
either way; only BLAS (InnerProduct, the reference engine's convolutions) moves.
"""

import argparse
import os
import sys

from caffe_time_runs import REPO, Variant, alternate, check_nets, print_ratio_table

LIBDIR = "/usr/lib/x86_64-linux-gnu"
BUILDS = (("pthread", os.path.join(LIBDIR, "openblas-pthread")),
          ("OpenMP", os.path.join(LIBDIR, "openblas-openmp")))


def main(argv):
    parser = argparse.ArgumentParser(description="OpenBLAS pthread build against OpenMP build")
    parser.add_argument("--nets", default="lenet,resnet20")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="set for every run (e.g. OMP_WAIT_POLICY=PASSIVE)")
    parser.add_argument("--caffe", default=os.path.join(REPO, "build", "tools", "caffe"))
    args = parser.parse_args(argv)
    nets = check_nets(args.nets)
    threads = [int(t) for t in args.threads.split(",")]
    extra_env = {}
    for item in args.env:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise SystemExit("error: --env %r: expected NAME=VALUE" % item)
        extra_env[name] = value
    for name, libdir in BUILDS:
        if not os.path.isfile(os.path.join(libdir, "libopenblas.so.0")):
            raise SystemExit("error: %s: no libopenblas.so.0 (install libopenblas0-%s)"
                             % (libdir, name.lower()))
    variants = [Variant(name, libdir=libdir, env=extra_env) for name, libdir in BUILDS]
    times = alternate(args.caffe, args.rounds, nets, threads, variants)
    print_ratio_table(times, nets, threads, "pthread", "OpenMP",
                      ("OpenBLAS pthread build", "OpenBLAS OpenMP build", "pthread / OpenMP"),
                      "; " + " ".join(args.env) if args.env else "")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
