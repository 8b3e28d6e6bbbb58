"""What the side-by-side `caffe time` benchmarks share (blas_pools.py,
blocked_layouts.py): the nets, one timed run, the rounds that alternate two variants
of the run so that a change in the machine's load hits both, and the table of medians
and their ratio."""

import os
import re
import statistics
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NETS = {"lenet": ("models/lenet_fashion/train_val.prototxt", 100),
        "resnet20": ("models/resnet20_fashion/train_val.prototxt", 10),
        "resnet50": ("models/resnet50/train_val.prototxt", 4)}
AVERAGE = re.compile(r"Average Forward-Backward: ([0-9.]+) ms")


class Variant:
    """One way to run `caffe time`: OpenBLAS from `libdir` (None: the one the binary
    links), extra environment and extra flags."""

    def __init__(self, name, libdir=None, env=None, args=()):
        self.name, self.libdir, self.env, self.args = name, libdir, dict(env or {}), list(args)


def step_ms(caffe, net, threads, variant):
    """`caffe time -stage synthetic`'s average forward + backward of `net`, in ms."""
    model, iterations = NETS[net]
    env = dict(os.environ, **variant.env)
    if variant.libdir:
        env["LD_LIBRARY_PATH"] = variant.libdir
    result = subprocess.run([caffe, "time", "-model", os.path.join(REPO, model), "-stage",
                             "synthetic", "-iterations", str(iterations), "-threads",
                             str(threads)] + variant.args,
                            env=env, capture_output=True, text=True)
    match = AVERAGE.search(result.stderr + result.stdout)
    if result.returncode != 0 or not match:
        raise SystemExit("error: caffe time of %s at %d threads (%s) failed (exit %d): %s"
                         % (net, threads, variant.name, result.returncode,
                            (result.stderr.strip().splitlines() or ["no output"])[-1]))
    return float(match.group(1))


def check_nets(text):
    nets = text.split(",")
    for net in nets:
        if net not in NETS:
            raise SystemExit("error: --nets: unknown net %r (expected %s)" % (net, ", ".join(NETS)))
    return nets


def alternate(caffe, rounds, nets, threads, variants):
    """Times every (net, threads) cell with each variant in turn, `rounds` times; returns
    {(net, threads, variant name): [ms, ...]}. Progress goes to stderr."""
    if not os.access(caffe, os.X_OK):
        raise SystemExit("error: %s: not built (cmake --build build)" % caffe)
    times = {}
    for round_index in range(rounds):
        for net in nets:
            for t in threads:
                for variant in variants:
                    ms = step_ms(caffe, net, t, variant)
                    times.setdefault((net, t, variant.name), []).append(ms)
                    print("round %d: %s x%d %s: %.2f ms" % (round_index + 1, net, t, variant.name, ms),
                          file=sys.stderr)
    return times


def print_ratio_table(times, nets, threads, first, second, columns, note=""):
    """A Markdown table of the median per cell of variants `first` and `second` (names)
    and first / second; `columns` names the three value columns."""
    rounds = len(next(iter(times.values())))
    print("`caffe time -stage synthetic`, median of %d rounds, ms per forward + backward%s"
          % (rounds, note))
    print()
    print("| net | threads | %s | %s | %s |" % columns)
    print("|---|---:|---:|---:|---:|")
    for net in nets:
        for t in threads:
            a = statistics.median(times[(net, t, first)])
            b = statistics.median(times[(net, t, second)])
            print("| %s | %d | %.2f | %.2f | **%.2f** |" % (net, t, a, b, a / b))
