#!/usr/bin/python3
"""Training steps on the CPU, caffe-iwp against PyTorch, side by side.

For each net and thread count, two long-lived worker processes are started: ours
(build/bench/cpu_train_step -serve) and PyTorch's (this file with --worker). After
warm-up the driver alternates them, one round of K steps at a time (the order flips
every round), so load from elsewhere on a shared machine hits both alike and only
one of them runs at any moment. Reported: median time per step over all timed
steps, the ratio torch / ours (above 1: ours is faster), each process's peak
resident memory (VmHWM), and each of our convolutions' achieved GFLOP/s
against OpenBLAS' own sgemm GFLOP/s measured in the same run.

The PyTorch nets are built from the same prototxt files (train phase, "synthetic"
stage) by a small translator, so shapes agree by construction:
  Convolution -> Conv2d (groups, stride, pad, dilation, bias as given)
  Pooling     -> MaxPool2d / AvgPool2d with ceil_mode (Caffe's rounding), global
                 average pooling -> adaptive_avg_pool2d
  BatchNorm + Scale(bias_term) on the same blob -> one BatchNorm2d(affine=True)
  LRN         -> LocalResponseNorm(size, alpha, beta, k) (Caffe's alpha/size rule)
  InnerProduct -> Linear on the flattened input, ReLU / Dropout in place where the
                 prototxt is in place, Eltwise SUM -> +, SoftmaxWithLoss ->
                 cross_entropy. Weights are filled with the prototxt's fillers.
Both sides: SGD, lr 0.01, momentum 0.9, weight decay 5e-4, float32.
Threads: ours -threads T; torch.set_num_threads(T); OMP_NUM_THREADS=T for both.
OMP_WAIT_POLICY=PASSIVE for both (the machine is shared; spinning OpenMP threads
would steal the other jobs' cores).

  /usr/bin/python3 bench/cpu_vs_torch.py [--quick] [--nets a,b] [--threads 1,2]
  (bench/cpu_vs_torch.sh is the entry point; it builds what is needed first.)
"""

import argparse
import datetime
import math
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

NETS = {
    "lenet": ("LeNet", "models/lenet_fashion/train_val.prototxt", "64x1x28x28"),
    "resnet20": ("ResNet-20", "models/resnet20_fashion/train_val.prototxt", "64x1x28x28"),
    "alexnet": ("AlexNet", "models/alexnet/train_val.prototxt", "16x3x227x227"),
    "resnet50": ("ResNet-50", "models/resnet50/train_val.prototxt", "8x3x224x224"),
}

# (warm-up steps, rounds, steps per round, layer-timing passes) per net; --quick
# shortens them.
SCHEDULE = {
    "lenet": (5, 5, 20, 10),
    "resnet20": (2, 5, 4, 2),
    "alexnet": (1, 4, 2, 1),
    "resnet50": (1, 4, 2, 1),
}
QUICK_SCHEDULE = {"lenet": (2, 3, 5, 3), "resnet20": (1, 3, 2, 2)}


def peak_rss_kb():
    """This process's peak resident memory in KB: VmHWM, which belongs to this process's
    own address space. ru_maxrss, the fallback, survives exec on Linux, so a worker
    started by this driver (PyTorch imported) would report at least the driver's peak."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


# ---------------------------------------------------------------- prototxt reading
def parse_prototxt(text):
    """Protobuf text format into nested dicts; every field maps to a list of values."""
    tokens = re.findall(r'"(?:[^"\\]|\\.)*"|[{}:]|[^\s{}:"]+', re.sub(r"#[^\n]*", "", text))
    pos = 0

    def value(tok):
        if tok.startswith('"'):
            return tok[1:-1]
        try:
            return int(tok)
        except ValueError:
            pass
        try:
            return float(tok)
        except ValueError:
            return tok  # enum names, true/false

    def message():
        nonlocal pos
        fields = {}
        while pos < len(tokens) and tokens[pos] != "}":
            name = tokens[pos]
            pos += 1
            if tokens[pos] == ":":
                pos += 1
            if tokens[pos] == "{":
                pos += 1
                item = message()
                pos += 1  # the closing brace
            else:
                item = value(tokens[pos])
                pos += 1
            fields.setdefault(name, []).append(item)
        return fields

    return message()


def one(msg, name, default=None):
    values = msg.get(name)
    return values[0] if values else default


def included(layer, phase, stages):
    def rule_matches(rule):
        if one(rule, "phase") not in (None, phase):
            return False
        if any(s not in stages for s in rule.get("stage", [])):
            return False
        if any(s in stages for s in rule.get("not_stage", [])):
            return False
        return True

    if "include" in layer:
        return any(rule_matches(r) for r in layer["include"])
    return not any(rule_matches(r) for r in layer.get("exclude", []))


# ---------------------------------------------------------------- the PyTorch side
def build_torch_net(prototxt_path, torch, device="cpu"):
    """The prototxt's TRAIN/synthetic net as a torch module; its DummyData tensors are
    made on `device` (bench/gpu_torch_throughput.py passes "cuda")."""
    nn = torch.nn
    F = torch.nn.functional
    with open(prototxt_path) as f:
        net = parse_prototxt(f.read())
    layers = [l for l in net.get("layer", []) if included(l, "TRAIN", {"synthetic"})]

    def spatial(p, name, default):
        if name + "_h" in p:
            return (one(p, name + "_h"), one(p, name + "_w"))
        values = p.get(name + ("_size" if name == "kernel" else ""), [])
        if not values:
            return (default, default)
        return (values[0], values[-1])

    def fill(tensor, filler, fan_in, fan_out):
        kind = one(filler, "type", "constant") if filler else "constant"
        with torch.no_grad():
            if kind == "constant":
                tensor.fill_(one(filler, "value", 0.0) if filler else 0.0)
            elif kind == "gaussian":
                tensor.normal_(0.0, one(filler, "std", 1.0))
            elif kind == "uniform":
                tensor.uniform_(one(filler, "min", 0.0), one(filler, "max", 1.0))
            elif kind == "xavier":
                bound = math.sqrt(3.0 / fan_in)
                tensor.uniform_(-bound, bound)
            elif kind == "msra":
                tensor.normal_(0.0, math.sqrt(2.0 / fan_in))
            else:
                raise ValueError("filler %s not supported" % kind)

    shapes = {}
    modules = nn.ModuleDict()
    steps = []  # (kind, module name or None, bottoms, tops, extra)
    data = {}
    skip = set()
    for i, layer in enumerate(layers):
        name, kind = one(layer, "name"), one(layer, "type")
        bottoms, tops = layer.get("bottom", []), layer.get("top", [])
        key = "l%d" % i
        if i in skip:
            continue
        if kind == "DummyData":
            p = one(layer, "dummy_data_param")
            for top, shape, filler in zip(tops, p["shape"], p["data_filler"]):
                dims = [int(d) for d in shape["dim"]]
                t = torch.empty(dims)
                fill(t, filler, 1, 1)
                data[top] = (t.long() if top == "label" else t).to(device)
                shapes[top] = dims
            continue
        if kind == "Convolution":
            p = one(layer, "convolution_param")
            cin = shapes[bottoms[0]][1]
            cout = one(p, "num_output")
            k = spatial(p, "kernel", 1)
            s = spatial(p, "stride", 1)
            pad = spatial(p, "pad", 0)
            dil = tuple(p.get("dilation", [1])) * (2 if len(p.get("dilation", [1])) == 1 else 1)
            groups = one(p, "group", 1)
            bias = one(p, "bias_term", "true") != "false"
            m = nn.Conv2d(cin, cout, k, s, pad, dil, groups, bias)
            fan_in = cin // groups * k[0] * k[1]
            fill(m.weight, one(p, "weight_filler"), fan_in, cout * k[0] * k[1])
            if bias:
                fill(m.bias, one(p, "bias_filler"), 1, 1)
            h, w = shapes[bottoms[0]][2:]
            oh = (h + 2 * pad[0] - (dil[0] * (k[0] - 1) + 1)) // s[0] + 1
            ow = (w + 2 * pad[1] - (dil[1] * (k[1] - 1) + 1)) // s[1] + 1
            shapes[tops[0]] = [shapes[bottoms[0]][0], cout, oh, ow]
            modules[key] = m
            steps.append(("module", key, bottoms, tops))
        elif kind == "Pooling":
            p = one(layer, "pooling_param")
            n, c, h, w = shapes[bottoms[0]]
            pool = one(p, "pool", "MAX")
            if one(p, "global_pooling", "false") == "true":
                if pool != "AVE":
                    raise ValueError("global MAX pooling not translated")
                steps.append(("global_ave", None, bottoms, tops))
                shapes[tops[0]] = [n, c, 1, 1]
                continue
            k = spatial(p, "kernel", 1)
            s = spatial(p, "stride", 1)
            pad = spatial(p, "pad", 0)
            if pool == "MAX":
                m = nn.MaxPool2d(k, s, pad, ceil_mode=True)
            else:
                m = nn.AvgPool2d(k, s, pad, ceil_mode=True, count_include_pad=True)
            oh = -(-(h + 2 * pad[0] - k[0]) // s[0]) + 1
            ow = -(-(w + 2 * pad[1] - k[1]) // s[1]) + 1
            if pad[0] and (oh - 1) * s[0] >= h + pad[0]:
                oh -= 1
            if pad[1] and (ow - 1) * s[1] >= w + pad[1]:
                ow -= 1
            shapes[tops[0]] = [n, c, oh, ow]
            modules[key] = m
            steps.append(("module", key, bottoms, tops))
        elif kind == "BatchNorm":
            p = one(layer, "batch_norm_param", {})
            c = shapes[bottoms[0]][1]
            nxt = layers[i + 1] if i + 1 < len(layers) else None
            affine = (nxt is not None and one(nxt, "type") == "Scale" and
                      nxt.get("bottom") == tops and
                      one(one(nxt, "scale_param", {}), "bias_term", "false") == "true")
            fraction = one(p, "moving_average_fraction", 0.999)
            m = nn.BatchNorm2d(c, eps=one(p, "eps", 1e-5), momentum=1.0 - fraction,
                               affine=affine)
            if affine:
                skip.add(i + 1)
                tops = nxt["top"]
            shapes[tops[0]] = list(shapes[bottoms[0]])
            modules[key] = m
            steps.append(("module", key, bottoms, tops))
        elif kind == "Scale":
            raise ValueError("Scale without a preceding BatchNorm is not translated")
        elif kind == "ReLU":
            inplace = bottoms == tops
            modules[key] = nn.ReLU(inplace=inplace)
            shapes[tops[0]] = list(shapes[bottoms[0]])
            steps.append(("module", key, bottoms, tops))
        elif kind == "Dropout":
            p = one(layer, "dropout_param", {})
            # Not in place: the ReLU before it keeps its output for its own backward.
            modules[key] = nn.Dropout(one(p, "dropout_ratio", 0.5))
            shapes[tops[0]] = list(shapes[bottoms[0]])
            steps.append(("module", key, bottoms, tops))
        elif kind == "LRN":
            p = one(layer, "lrn_param", {})
            if one(p, "norm_region", "ACROSS_CHANNELS") != "ACROSS_CHANNELS":
                raise ValueError("WITHIN_CHANNEL LRN not translated")
            modules[key] = nn.LocalResponseNorm(one(p, "local_size", 5), one(p, "alpha", 1.0),
                                                one(p, "beta", 0.75), one(p, "k", 1.0))
            shapes[tops[0]] = list(shapes[bottoms[0]])
            steps.append(("module", key, bottoms, tops))
        elif kind == "InnerProduct":
            p = one(layer, "inner_product_param")
            fan_in = 1
            for d in shapes[bottoms[0]][1:]:
                fan_in *= d
            cout = one(p, "num_output")
            bias = one(p, "bias_term", "true") != "false"
            m = nn.Linear(fan_in, cout, bias)
            fill(m.weight, one(p, "weight_filler"), fan_in, cout)
            if bias:
                fill(m.bias, one(p, "bias_filler"), 1, 1)
            shapes[tops[0]] = [shapes[bottoms[0]][0], cout]
            modules[key] = m
            steps.append(("linear", key, bottoms, tops))
        elif kind == "Eltwise":
            p = one(layer, "eltwise_param", {})
            if one(p, "operation", "SUM") != "SUM" or "coeff" in p:
                raise ValueError("only plain Eltwise SUM is translated")
            shapes[tops[0]] = list(shapes[bottoms[0]])
            steps.append(("sum", None, bottoms, tops))
        elif kind == "SoftmaxWithLoss":
            steps.append(("loss", None, bottoms, tops))
        elif kind in ("Accuracy", "Silence"):
            continue
        else:
            raise ValueError("layer type %s not translated" % kind)

    class CaffeNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = modules

        def forward(self):
            blobs = dict(data)
            loss = None
            for kind, key, bottoms, tops in steps:
                if kind == "module":
                    blobs[tops[0]] = self.layers[key](blobs[bottoms[0]])
                elif kind == "linear":
                    x = blobs[bottoms[0]]
                    blobs[tops[0]] = self.layers[key](x.reshape(x.shape[0], -1))
                elif kind == "global_ave":
                    blobs[tops[0]] = F.adaptive_avg_pool2d(blobs[bottoms[0]], 1)
                elif kind == "sum":
                    out = blobs[bottoms[0]]
                    for b in bottoms[1:]:
                        out = out + blobs[b]
                    blobs[tops[0]] = out
                elif kind == "loss":
                    loss = F.cross_entropy(blobs[bottoms[0]], blobs[bottoms[1]])
            return loss

    torch_net = CaffeNet()
    torch_net.data_batch = shapes["data"][0] if "data" in shapes else 0
    return torch_net


def torch_worker(model, threads):
    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(1)
    net = build_torch_net(os.path.join(ROOT, model), torch)
    net.train()
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = net()
        loss.backward()
        opt.step()

    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        count = int(words[1]) if len(words) > 1 else 1
        if words[0] == "warm":
            for _ in range(max(count, 1)):
                step()
            print("ok", flush=True)
        elif words[0] == "run":
            times = []
            for _ in range(max(count, 1)):
                start = time.perf_counter()
                step()
                times.append((time.perf_counter() - start) * 1e3)
            print("times " + " ".join("%.4f" % t for t in times), flush=True)
        elif words[0] == "params":
            print("params %d" % sum(p.numel() for p in net.parameters()), flush=True)
        elif words[0] == "quit":
            print("maxrss_kb %d" % peak_rss_kb(), flush=True)
            return
        else:
            print("error unknown command %r" % line, flush=True)


# ---------------------------------------------------------------- the driver
class Worker:
    def __init__(self, argv, env):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     env=env, text=True, cwd=ROOT)

    def ask(self, command):
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("worker %s died on %r" % (self.proc.args[0], command))
        return line.split()

    def ask_lines(self, command, until):
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        lines = []
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("worker died on %r" % command)
            if line.strip() == until:
                return lines
            lines.append(line.split())

    def quit(self):
        rss = int(self.ask("quit")[1])
        self.proc.wait()
        return rss


def sgemm_gflops(threads, env):
    out = subprocess.run([os.path.join(ROOT, "build/bench/sgemm_gflops"), str(threads),
                          "1024,2048", "5"], env=env, capture_output=True, text=True,
                         check=True).stdout
    return {int(m.group(1)): float(m.group(2))
            for m in re.finditer(r"n=(\d+) threads=\d+ gflops=([\d.]+)", out)}


def load():
    return "%.2f %.2f %.2f" % os.getloadavg()


def worker_env(threads, **extra):
    """The environment both workers run in (see the file comment)."""
    return dict(os.environ, OMP_NUM_THREADS=str(threads), OMP_WAIT_POLICY="PASSIVE",
                GLOG_minloglevel="1", **extra)


def worker_argvs(model, threads):
    """Command lines of our worker and PyTorch's, in that order."""
    return ([os.path.join(ROOT, "build/bench/cpu_train_step"), "-model", model,
             "-threads", str(threads), "-serve"],
            [sys.executable, os.path.abspath(__file__), "--worker", model,
             "--threads", str(threads)])


def run_pair(net_key, threads, schedule, log):
    label, model, shape = NETS[net_key]
    warm, rounds, steps, layer_passes = schedule
    env = worker_env(threads)
    load_before = load()
    ours_argv, torch_argv = worker_argvs(model, threads)
    ours = Worker(ours_argv, env)
    torch = Worker(torch_argv, env)
    params = (int(ours.ask("params")[1]), int(torch.ask("params")[1]))
    if params[0] != params[1]:
        log("WARNING %s: learnable elements differ, ours %d, torch %d" %
            (label, params[0], params[1]))
    ours.ask("warm %d" % warm)
    torch.ask("warm %d" % warm)
    times = {"ours": [], "torch": []}
    for r in range(rounds):
        order = [("ours", ours), ("torch", torch)]
        if r % 2:
            order.reverse()
        for who, worker in order:
            reply = worker.ask("run %d" % steps)
            times[who] += [float(t) for t in reply[1:]]
    layers = ours.ask_lines("layers %d" % layer_passes, "end")
    rss = {"ours": ours.quit(), "torch": torch.quit()}
    med = {k: statistics.median(v) for k, v in times.items()}
    return {
        "net": label, "shape": shape, "threads": threads, "params": params[0],
        "ours_ms": med["ours"], "torch_ms": med["torch"], "ratio": med["torch"] / med["ours"],
        "ours_rss_mb": rss["ours"] / 1024.0, "torch_rss_mb": rss["torch"] / 1024.0,
        "steps": len(times["ours"]), "load": load_before + " / " + load(),
        "layers": [(w[1], float(w[3]), float(w[4]), float(w[5]), float(w[6])) for w in layers
                   if w and w[0] == "layer"],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="LeNet and ResNet-20, few steps")
    parser.add_argument("--nets", default="", help="comma list of " + ",".join(NETS))
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--out", default=os.path.join(ROOT, "build/cpu_vs_torch.md"))
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        torch_worker(args.worker, int(args.threads))
        return

    nets = [n for n in args.nets.split(",") if n] or (
        ["lenet", "resnet20"] if args.quick else list(NETS))
    thread_counts = [int(t) for t in args.threads.split(",")]
    lines = []

    def log(text=""):
        print(text, flush=True)
        lines.append(text)

    import torch  # only for its version in the header
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = re.search(r"model name\s*:\s*(.*)", f.read()).group(1).strip()
    except (OSError, AttributeError):
        pass
    log("# CPU training step: caffe-iwp against PyTorch")
    log()
    log("%s UTC, %s, nproc %d, PyTorch %s, %s" % (
        datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"), cpu, os.cpu_count(),
        torch.__version__, "quick" if args.quick else "full"))
    log("OMP_WAIT_POLICY=PASSIVE for both; OMP_NUM_THREADS=threads for both.")
    log()
    gemm = {}
    for t in thread_counts:
        env = dict(os.environ, OMP_NUM_THREADS=str(t), OMP_WAIT_POLICY="PASSIVE")
        gemm[t] = sgemm_gflops(t, env)
    results = []
    for net_key in nets:
        schedule = (QUICK_SCHEDULE if args.quick else SCHEDULE).get(net_key, SCHEDULE[net_key])
        for t in thread_counts:
            started = time.time()
            res = run_pair(net_key, t, schedule, log)
            results.append(res)
            print("  %s x%d: ours %.2f ms, torch %.2f ms, ratio %.2f (%.0f s)" % (
                res["net"], t, res["ours_ms"], res["torch_ms"], res["ratio"],
                time.time() - started), file=sys.stderr, flush=True)

    log("## Median time per training step (forward + backward + SGD update)")
    log()
    log("| net | batch x input | threads | ours ms | PyTorch ms | PyTorch / ours | "
        "ours peak RSS MB | PyTorch peak RSS MB | steps each | load before / after |")
    log("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        log("| %s | %s | %d | %.2f | %.2f | **%.2f** | %.0f | %.0f | %d | %s |" % (
            r["net"], r["shape"], r["threads"], r["ours_ms"], r["torch_ms"], r["ratio"],
            r["ours_rss_mb"], r["torch_rss_mb"], r["steps"], r["load"]))
    log()
    log("## OpenBLAS sgemm (square, median of 5)")
    log()
    log("| threads | n=1024 GFLOP/s | n=2048 GFLOP/s |")
    log("|---|---|---|")
    for t in thread_counts:
        log("| %d | %.1f | %.1f |" % (t, gemm[t].get(1024, 0), gemm[t].get(2048, 0)))
    log()
    log("## Our convolutions: achieved GFLOP/s (forward, backward) and share of sgemm(2048)")
    for r in results:
        peak = gemm[r["threads"]].get(2048, 0) or 1.0
        log()
        log("### %s, %d thread%s" % (r["net"], r["threads"], "s" if r["threads"] > 1 else ""))
        log()
        log("| layer | fwd ms | fwd GFLOP/s | fwd % sgemm | bwd ms | bwd GFLOP/s | "
            "bwd % sgemm |")
        log("|---|---|---|---|---|---|---|")
        tot = [0.0, 0.0, 0.0, 0.0]
        for name, fwd_ms, bwd_ms, fwd_flops, bwd_flops in r["layers"]:
            fg = fwd_flops / fwd_ms * 1e-6 if fwd_ms > 0 else 0
            bg = bwd_flops / bwd_ms * 1e-6 if bwd_ms > 0 else 0
            tot = [tot[0] + fwd_ms, tot[1] + fwd_flops, tot[2] + bwd_ms, tot[3] + bwd_flops]
            log("| %s | %.3f | %.1f | %.0f%% | %.3f | %.1f | %.0f%% |" % (
                name, fwd_ms, fg, 100 * fg / peak, bwd_ms, bg, 100 * bg / peak))
        if tot[0] > 0 and tot[2] > 0:
            fg, bg = tot[1] / tot[0] * 1e-6, tot[3] / tot[2] * 1e-6
            log("| **all** | %.3f | %.1f | %.0f%% | %.3f | %.1f | %.0f%% |" % (
                tot[0], fg, 100 * fg / peak, tot[2], bg, 100 * bg / peak))
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("written to %s" % args.out, file=sys.stderr)


if __name__ == "__main__":
    main()
