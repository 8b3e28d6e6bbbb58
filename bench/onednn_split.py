#!/usr/bin/python3
"""Where a CPU training step's time goes inside oneDNN, caffe-iwp against PyTorch.

Both sides use oneDNN for their convolutions (Debian's PyTorch is built on the same
oneDNN as we link), so the time a step spends in oneDNN's convolution kernels is
common ground; what differs is the layout conversions (reorders) between the
convolutions' blocked layout and the plain NCHW blobs, and everything outside oneDNN.
This runs the two workers of bench/cpu_vs_torch.py (build/bench/cpu_train_step -serve
and cpu_vs_torch.py --worker) with ONEDNN_VERBOSE=1, one after the other, and sums
the executed primitives' times over the timed steps:

  convolution kernels (forward, backward data, backward weights)
  reorders of activations (a leading dimension equal to the batch) and of weights
  other oneDNN primitives (eltwise, batch normalization, pooling, ...)
  outside oneDNN: the median step time minus the step's oneDNN time

Times per step, in ms. The verbose logging itself costs a little on both sides, so
the step times here run slightly above cpu_vs_torch.py's; use that for the ratio.

  /usr/bin/python3 bench/onednn_split.py [--net resnet20] [--threads 1] [--steps 10]
"""

import argparse
import collections
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu_vs_torch  # noqa: E402  (NETS, the workers)


def run_worker(argv, env, warm, steps):
    """Warm-up, then `steps` timed steps; returns (step times, verbose exec lines)."""
    worker = cpu_vs_torch.Worker(argv, env)

    def ask(command, answer):
        # Worker.ask reads one line; oneDNN's verbose lines come in between here.
        worker.proc.stdin.write(command + "\n")
        worker.proc.stdin.flush()
        verbose, text = [], ""
        for line in worker.proc.stdout:
            # oneDNN prints whole lines, but they can land inside a line the worker is
            # still writing (ours prints "times" and then each step's time as it ends).
            start = max(line.find("onednn_verbose,"), line.find("dnnl_verbose,"))
            if start >= 0:
                if ",exec," in line:
                    verbose.append(line[start:].strip())
                text += line[:start]
                continue
            text += line
            words = text.split()
            text = ""
            if words[:1] == [answer]:
                return words[1:], verbose
        raise RuntimeError("worker %s ended before answering %r" % (argv[0], command))

    ask("warm %d" % warm, "ok")
    times, verbose = ask("run %d" % steps, "times")
    worker.quit()
    return [float(t) for t in times], verbose


def classify(line, batch):
    """The row a verbose exec line counts in, and its milliseconds."""
    fields = line.split(",")
    # onednn_verbose,exec,cpu,KIND,IMPL,PROP,MEMORY DESCS,ATTRS,AUX,PROBLEM,MS
    kind, prop, problem, ms = fields[3], fields[5], fields[-2], float(fields[-1])
    if kind == "convolution":
        name = {"forward_training": "forward", "forward_inference": "forward"}.get(prop, prop)
        return "convolution " + name.replace("_", " "), ms
    if kind == "reorder":
        dims = problem.split("x")
        what = "activations" if dims and dims[0] == str(batch) and len(dims) >= 4 else "weights"
        return "reorders of " + what, ms
    return "other oneDNN (%s)" % kind, ms


def split(times, verbose, steps, batch):
    rows = collections.OrderedDict()
    for line in verbose:
        name, ms = classify(line, batch)
        rows[name] = rows.get(name, 0.0) + ms / steps
    step = statistics.median(times)
    inside = sum(rows.values())
    rows["outside oneDNN"] = step - inside
    return step, rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--net", default="resnet20", choices=sorted(cpu_vs_torch.NETS))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--warm", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()

    label, model, shape = cpu_vs_torch.NETS[args.net]
    batch = int(shape.split("x")[0])
    env = cpu_vs_torch.worker_env(args.threads, ONEDNN_VERBOSE="1", DNNL_VERBOSE="1")
    workers = dict(zip(("ours", "PyTorch"), cpu_vs_torch.worker_argvs(model, args.threads)))
    results = {}
    for who, argv in workers.items():
        results[who] = split(*run_worker(argv, env, args.warm, args.steps), args.steps, batch)

    order = ["convolution forward", "convolution backward data",
             "convolution backward weights", "reorders of activations", "reorders of weights"]
    names = [n for n in order if any(n in rows for _, rows in results.values())]
    for _, rows in results.values():
        names += [n for n in rows if n not in names and n != "outside oneDNN"]
    names.append("outside oneDNN")
    print("%s, batch %s, %d thread(s), %d timed steps each (ONEDNN_VERBOSE=1 on both)"
          % (label, shape, args.threads, args.steps))
    print()
    print("| ms per step | ours | PyTorch |")
    print("|---|---:|---:|")
    for name in names:
        print("| %s | %s | %s |" % (name, *("%.1f" % results[w][1][name] if name in results[w][1]
                                           else "-" for w in ("ours", "PyTorch"))))
    print("| **step (median)** | **%.1f** | **%.1f** |"
          % (results["ours"][0], results["PyTorch"][0]))


if __name__ == "__main__":
    main()
