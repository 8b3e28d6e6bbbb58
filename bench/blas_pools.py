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
import re
import statistics
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIBDIR = "/usr/lib/x86_64-linux-gnu"
BUILDS = (("pthread", os.path.join(LIBDIR, "openblas-pthread")),
          ("OpenMP", os.path.join(LIBDIR, "openblas-openmp")))
NETS = {"lenet": ("models/lenet_fashion/train_val.prototxt", 100),
        "resnet20": ("models/resnet20_fashion/train_val.prototxt", 10)}
AVERAGE = re.compile(r"Average Forward-Backward: ([0-9.]+) ms")


def step_ms(caffe, net, threads, libdir, extra_env):
    model, iterations = NETS[net]
    env = dict(os.environ, LD_LIBRARY_PATH=libdir, **extra_env)
    result = subprocess.run([caffe, "time", "-model", os.path.join(REPO, model), "-stage",
                             "synthetic", "-iterations", str(iterations), "-threads",
                             str(threads)], env=env, capture_output=True, text=True)
    match = AVERAGE.search(result.stderr + result.stdout)
    if result.returncode != 0 or not match:
        raise SystemExit("error: caffe time of %s at %d threads with %s failed (exit %d): %s"
                         % (net, threads, libdir, result.returncode,
                            (result.stderr.strip().splitlines() or ["no output"])[-1]))
    return float(match.group(1))


def main(argv):
    parser = argparse.ArgumentParser(description="OpenBLAS pthread build against OpenMP build")
    parser.add_argument("--nets", default="lenet,resnet20")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="set for every run (e.g. OMP_WAIT_POLICY=PASSIVE)")
    parser.add_argument("--caffe", default=os.path.join(REPO, "build", "tools", "caffe"))
    args = parser.parse_args(argv)
    nets = args.nets.split(",")
    for net in nets:
        if net not in NETS:
            raise SystemExit("error: --nets: unknown net %r (expected %s)" % (net, ", ".join(NETS)))
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
    if not os.access(args.caffe, os.X_OK):
        raise SystemExit("error: %s: not built (cmake --build build)" % args.caffe)
    times = {}
    for round_index in range(args.rounds):
        for net in nets:
            for t in threads:
                for name, libdir in BUILDS:
                    ms = step_ms(args.caffe, net, t, libdir, extra_env)
                    times.setdefault((net, t, name), []).append(ms)
                    print("round %d: %s x%d %s: %.2f ms" % (round_index + 1, net, t, name, ms),
                          file=sys.stderr)
    print("`caffe time -stage synthetic`, median of %d rounds, ms per forward + backward%s"
          % (args.rounds, "; " + " ".join(args.env) if args.env else ""))
    print()
    print("| net | threads | OpenBLAS pthread build | OpenBLAS OpenMP build | pthread / OpenMP |")
    print("|---|---:|---:|---:|---:|")
    for net in nets:
        for t in threads:
            pthread = statistics.median(times[(net, t, "pthread")])
            openmp = statistics.median(times[(net, t, "OpenMP")])
            print("| %s | %d | %.2f | %.2f | **%.2f** |" % (net, t, pthread, openmp, pthread / openmp))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
