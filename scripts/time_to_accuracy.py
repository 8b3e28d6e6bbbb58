#!/usr/bin/env python3
"""Time to accuracy on an emulated slow network: the benchmark a user buys
compression by. scripts/time_to_accuracy.sh runs it; results/time_to_accuracy/
README.md says what it measures and how to read it.

    time_to_accuracy.py run    [--nets ...] [--cells ...] [--methods ...] [--seeds ...]
                               [--cap-minutes M] [--quick]
    time_to_accuracy.py report [--quick]     TABLE.md, rows.csv and the plots

Every run trains 2 (or 4) ranks of a net from its shipped IWP solver, only the
sync_param method changed (and what that method refuses removed), in an emulated
cluster (scripts/emulated_cluster.sh: a network namespace per rank, each link shaped
to the cell's rate both ways), testing on the whole test set every test_interval
iterations. Training time counts test passes out (the solver's "training time" lines).

A cell is RANKSxRATE: 2x1gbit, 2x100mbit, 2x20mbit, 2xref (the net's reference
regime, below) and 4x100mbit.
  - At 2x1gbit every method trains to the end of its schedule (--full-seeds): its final
    top-1 is that run's last test. The target of the other cells is DENSE fp32's final
    top-1 (mean over those seeds) minus 0.3 pp. Training is deterministic, so a run at
    another rate follows the same curve against iterations; only its clock differs.
  - In the other cells a run stops at the first test that reaches the target
    (-stop_at_test_score); after --cap-minutes of wall time it is stopped, and its time
    to the target is reported as at least its training time then.
  - The reference regime: the rate at which DENSE fp32's step is 16x its compute-only
    step (DENSE on shared memory, no namespaces), as ResNet-50's ~100 MB of gradients on
    1 Gbit/s against a ~0.1 s GPU step were in the reference's cluster. It is found
    from the two measured steps and DENSE fp32's logged bytes per step, then checked by
    a run at that rate (ref.json holds both).
Runs are resumable: a run whose log holds a Final line and whose solver (as caffe
reads it: tools/upgrade_solver_proto_text's form, so comments and the older flat form
of sync_param do not count) and command are unchanged is not run again. The machine must be quiet (step times).
"""

import argparse
import csv
import json
import math
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.environ.get("TTA_OUT", os.path.join(REPO, "results", "time_to_accuracy"))
BUILD = os.environ.get("BUILD_DIR", os.path.join(REPO, "build"))
CLUSTER = os.path.join(REPO, "scripts", "emulated_cluster.sh")
MAKE_SOLVER = os.path.join(REPO, "scripts", "make_solver.py")


# The log parser (tools/parse_log), as the other reports load it.
from repro_report import parse_log  # noqa: E402  (scripts/ is this file's folder)
import claims  # noqa: E402

# Per net: where its solver is, how often to test (a test pass of the 10k images takes
# ~1 s on LeNet and ~10 s on ResNet-20 here, and is not training time), how often to log.
# DENSE's buckets hold an eighth of the net's gradients each (IWP's buckets' size), so
# that they overlap backward; the default 25 MB would hold either net whole.
NETS = {
    "lenet_fashion": {"test_interval": 100, "display": 20, "dense_bucket_mb": 0.2},
    "resnet20_fashion": {"test_interval": 250, "display": 25, "dense_bucket_mb": 0.14},
}
# The methods, as edits of the shipped IWP solver's sync_param ("name: value" sets for
# make_solver.py --sync-set; "name:" removes a field). POWERSGD ignores
# max_relative_step; it is removed so that the file says what runs.
METHODS = {
    "DENSE fp32": ["method: DENSE", "value_encoding: FP32"],
    "DENSE fp16": ["method: DENSE", "value_encoding: FP16"],
    "IWP": [],
    "IWP int8": ["value_encoding: INT8"],
    # DGC's own warm-up: the density ramp from the first step, no dense steps (which
    # cost a dense exchange each on a slow link).
    "IWP sparse warm-up": ["warmup_iter: 0"],
    "IWP int8 sparse warm-up": ["value_encoding: INT8", "warmup_iter: 0"],
    "POWERSGD r2": ["method: POWERSGD", "powersgd_param.rank: 2", "max_relative_step:"],
    "POWERSGD r4": ["method: POWERSGD", "powersgd_param.rank: 4", "max_relative_step:"],
    "TOPK_ALLGATHER": ["method: TOPK_ALLGATHER"],
    "RANDOMK": ["method: RANDOMK"],
}
CELLS = ["2x1gbit", "2x100mbit", "2x20mbit", "2xref", "4x100mbit"]
FULL_CELL = "2x1gbit"
TARGET_MARGIN = 0.003
# --quick: a smoke test of the whole path (CI), minutes not hours.
QUICK = {"max_iter": 60, "test_interval": 20, "test_iter": 5, "display": 10, "warmup": 10}


def slug(text):
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").lower()


def run_dir(net, cell, quick):
    return os.path.join(OUT, "quick" if quick else "runs", net, cell)


def sync_edits(net, method, quick, buckets=True):
    edits = list(METHODS[method])
    if method.startswith("DENSE") and buckets:
        edits.append("bucket_size_mb: %g" % NETS[net]["dense_bucket_mb"])
    if quick:
        # The shipped warm-up and ramp would fill the whole quick run.
        edits += ["warmup_iter: %d" % QUICK["warmup"], "density_schedule:"]
    return edits


def write_solver(net, method, seed, path, quick, extra=(), buckets=True):
    base = os.path.join(REPO, "models", net, "solver_iwp.prototxt")
    settings = NETS[net]
    fields = ["random_seed=%d" % seed, "display=%d" % settings["display"],
              "test_interval=%d" % settings["test_interval"], "test_initialization=false",
              "snapshot=0", "snapshot_after_train=false"]
    if quick:
        fields += ["max_iter=%d" % QUICK["max_iter"], "test_interval=%d" % QUICK["test_interval"],
                   "test_iter=%d" % QUICK["test_iter"], "display=%d" % QUICK["display"],
                   "warmup_iter=%d" % QUICK["warmup"], "stepvalue="]
    fields += list(extra)
    # A later setting of a field replaces an earlier one (make_solver.py would repeat it).
    latest = {}
    for field in fields:
        latest[field.split("=", 1)[0]] = field
    command = [sys.executable, MAKE_SOLVER, base, path] + list(latest.values())
    for edit in sync_edits(net, method, quick, buckets):
        command += ["--sync-set", edit]
    subprocess.run(command, check=True)


def rate_of(cell, ref):
    ranks, rate = cell.split("x", 1)
    if rate == "ref":
        rate = ref
    return int(ranks), rate


def train(log, solver, ranks, rate, cap_seconds, extra_args=()):
    """Trains in an emulated cluster (rate None: plain mpirun, shared memory). Returns
    True when it finished, False when stopped at the cap."""
    caffe = os.path.join(BUILD, "tools", "caffe")
    command = [caffe, "train", "-solver", solver] + list(extra_args)
    if rate is None:
        command = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(ranks)] + command
    else:
        command = ["bash", CLUSTER, "run", str(ranks), rate, "--name", "tta%d" % os.getpid(), "--"] + command
    env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
    with open(log, "w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env,
                                   start_new_session=True, cwd=REPO)
        try:
            status = process.wait(timeout=cap_seconds)
        except subprocess.TimeoutExpired:
            # The cluster script downs its namespaces on TERM; mpirun ends its ranks.
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            return False
    if status != 0:
        with open(log) as f:
            tail = f.readlines()[-15:]
        raise SystemExit("error: %s failed (exit %d); log: %s\n%s" % (solver, status, log, "".join(tail)))
    return True


def canonical_solver(text):
    """The solver text as caffe reads it: upgraded to the current form, comments and
    layout gone (tools/upgrade_solver_proto_text)."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "solver.prototxt")
        with open(path, "w") as f:
            f.write(text)
        subprocess.run([os.path.join(BUILD, "tools", "upgrade_solver_proto_text"), path, path],
                       check=True, capture_output=True)
        with open(path) as f:
            return f.read()


def finished_before(prefix, signature):
    """Whether the run at `prefix` (.log, .json) finished with this signature, its
    solver compared in canonical form."""
    try:
        with open(prefix + ".json") as f:
            meta = json.load(f)
    except (OSError, ValueError):
        return False
    recorded = meta.get("signature")
    if not isinstance(recorded, dict) or "solver" not in recorded:
        return False
    if {k: v for k, v in recorded.items() if k != "solver"} != \
            {k: v for k, v in signature.items() if k != "solver"}:
        return False
    return canonical_solver(recorded["solver"]) == canonical_solver(signature["solver"])


def run_one(net, cell, method, seed, ref, target, cap_seconds, quick):
    ranks, rate = rate_of(cell, ref)
    folder = run_dir(net, cell, quick)
    os.makedirs(folder, exist_ok=True)
    prefix = os.path.join(folder, "%s_s%d" % (slug(method), seed))
    solver = prefix + ".prototxt"
    write_solver(net, method, seed, solver + ".new", quick)
    with open(solver + ".new") as f:
        text = f.read()
    extra = [] if target is None else ["-stop_at_test_score", "accuracy=%.4f" % target]
    signature = {"solver": text, "args": extra, "ranks": ranks, "rate": rate,
                 "cap_seconds": cap_seconds}
    if finished_before(prefix, signature):
        os.remove(solver + ".new")
        print("%s %s %s seed %d: done before" % (net, cell, method, seed), flush=True)
        return
    os.replace(solver + ".new", solver)
    print("%s %s %s seed %d: training%s" % (net, cell, method, seed,
          "" if target is None else " to %.2f%%" % (100 * target)), flush=True)
    start = time.time()
    completed = train(prefix + ".log", solver, ranks, rate, cap_seconds, extra)
    with open(prefix + ".json", "w") as f:
        json.dump({"signature": signature, "completed": completed,
                   "wall_seconds": time.time() - start}, f, indent=1)


def compute_only_step_ms(net, quick):
    """DENSE fp32's steady step on shared memory (no namespaces), 2 ranks, in its best
    form there: one bucket after backward. (Small buckets on a background thread cost
    the rank's core ~1 ms a step on shared memory, where the wire costs nothing to hide;
    on a real link they win: 15-18% at 1 Gbit/s and 100 Mbit/s on LeNet.)"""
    folder = run_dir(net, "ref", quick)
    os.makedirs(folder, exist_ok=True)
    solver = os.path.join(folder, "dense_shm.prototxt")
    iters = 60 if quick else 300
    write_solver(net, "DENSE fp32", 1, solver, quick,
                 ["max_iter=%d" % iters, "test_interval=1000000", "display=%d" % (iters // 6)],
                 buckets=False)
    log = os.path.join(folder, "dense_shm.log")
    train(log, solver, 2, None, 3600)
    return steady_step(parse_log.parse_file(log), 0, 10 ** 9)


def dense_step_at(net, rate, quick):
    folder = run_dir(net, "ref", quick)
    solver = os.path.join(folder, "dense_%s.prototxt" % rate)
    iters = 30 if quick else 60
    write_solver(net, "DENSE fp32", 1, solver, quick,
                 ["max_iter=%d" % iters, "test_interval=1000000", "display=%d" % (iters // 6)])
    log = os.path.join(folder, "dense_%s.log" % rate)
    train(log, solver, 2, rate, 7200)
    parsed = parse_log.parse_file(log)
    return steady_step(parsed, 0, 10 ** 9), parsed.final.get("bytes_per_step", 0)


def reference_regime(net, quick):
    """The rate (mbit) at which DENSE fp32's step is ~16x the compute-only step."""
    path = os.path.join(run_dir(net, "ref", quick), "ref.json")
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    compute = compute_only_step_ms(net, quick)
    # One step at a known rate gives the bytes and the per-byte cost on this wire
    # (headers included); the reference rate is where the wire adds 15 compute steps.
    probe = "100mbit"
    step, sent = dense_step_at(net, probe, quick)
    wire_ms_at_probe = max(step - compute, 1e-3)
    mbit = 100.0 * wire_ms_at_probe / (15 * compute)
    rate = "%.1fmbit" % mbit
    check, _ = dense_step_at(net, rate, quick)
    if abs(check / compute - 16) > 1:
        # The wire's cost is not quite proportional to 1 / rate (TCP's windows, the
        # qdisc's queue): one correction from the measured step.
        mbit *= (check - compute) / (15 * compute)
        rate = "%.1fmbit" % mbit
        check, _ = dense_step_at(net, rate, quick)
    ref = {"compute_ms": compute, "probe_rate": probe, "probe_step_ms": step,
           "dense_bytes_per_step": sent, "rate": rate, "step_ms_at_rate": check,
           "ratio": check / compute}
    with open(path, "w") as f:
        json.dump(ref, f, indent=1)
    return ref


def warmup_end(net, method, quick):
    """The iteration after which a method's exchange is in its steady state."""
    if method.startswith("DENSE"):
        return 0
    if quick:
        return QUICK["warmup"]
    text = open(os.path.join(REPO, "models", net, "solver_iwp.prototxt")).read()
    sync = text[text.index("sync_param"):]
    warm = int(re.search(r"warmup_iter:\s*(\d+)", sync).group(1))
    stages = len(re.findall(r"density_schedule:", sync))
    every = re.search(r"density_schedule_iter:\s*(\d+)", sync)
    return warm + stages * (int(every.group(1)) if every else 100)


def steady_windows(parsed, after, test_interval):
    """The display windows after iteration `after` that hold no test pass."""
    rows = [r for r in parsed.train_rows if "iter_per_s" in r]
    windows = []
    for previous, row in zip(rows, rows[1:]):
        begin, end = previous["NumIters"], row["NumIters"]
        if begin < after:
            continue
        if any(t % test_interval == 0 for t in range(begin + 1, end + 1)):
            continue
        windows.append(row)
    return windows


def steady_step(parsed, after, test_interval):
    windows = steady_windows(parsed, after, test_interval)
    if not windows:
        return math.nan
    return statistics.median(1000.0 / r["iter_per_s"] for r in windows if r["iter_per_s"] > 0)


def step_split(parsed, after, test_interval):
    """Median ms per step of the whole step, the exchange's own work and the wire."""
    windows = steady_windows(parsed, after, test_interval)
    if not windows:
        return {}
    def median(key_fn):
        return statistics.median(key_fn(r) for r in windows)
    work = lambda r: sum(r.get("sync_%s_ms" % k, 0.0) for k in ("accumulate", "select", "gather", "scatter"))
    # The collectives' whole time; where they ran beside backward (a "waited" figure),
    # only the wait after backward, and the stop/snapshot agreement, cost the step.
    on_wire = lambda r: sum(r.get("sync_%s_ms" % k, 0.0) for k in ("broadcast", "allreduce", "allgather"))
    wire = lambda r: (r["sync_waited_ms"] if "sync_waited_ms" in r else on_wire(r)) + r.get("sync_control_ms", 0.0)
    step = median(lambda r: 1000.0 / r["iter_per_s"])
    total, exposed = median(on_wire), median(lambda r: r.get("sync_waited_ms", on_wire(r)))
    return {"step_ms": step, "work_ms": median(work), "wire_ms": median(wire),
            "compute_ms": step - median(work) - median(wire),
            "hidden_share": 1 - exposed / total if total > 0 else 0.0,
            "bytes_per_step": median(lambda r: r.get("sync_bytes_per_step", 0.0))}


def remeasure_compute(net, quick):
    """Measures the compute-only step again and keeps the reference rate: the step
    targets compare a run with the compute of the same machine state (this VM's speed
    drifts by up to a third over a day), so a session that reruns the rows it compares
    remeasures it first. The earlier figures stay in ref.json's "earlier_compute_ms"."""
    path = os.path.join(run_dir(net, "ref", quick), "ref.json")
    ref = reference_regime(net, quick)
    before = ref["compute_ms"]
    ref["earlier_compute_ms"] = ref.get("earlier_compute_ms", []) + [before]
    ref["compute_ms"] = compute_only_step_ms(net, quick)
    with open(path, "w") as f:
        json.dump(ref, f, indent=1)
    print("%s: compute-only step %.1f ms (was %.1f ms)" % (net, ref["compute_ms"], before), flush=True)


def cmd_run(args):
    quick = args.quick
    cap = args.cap_minutes * 60
    for net in args.nets:
        if args.remeasure_compute:
            remeasure_compute(net, quick)
        ref = reference_regime(net, quick)
        print("%s: compute-only step %.1f ms, reference regime %s (DENSE fp32 step %.0f ms, %.1fx)"
              % (net, ref["compute_ms"], ref["rate"], ref["step_ms_at_rate"], ref["ratio"]), flush=True)
        if FULL_CELL in args.cells:
            for seed in args.full_seeds:
                for method in args.methods:
                    run_one(net, FULL_CELL, method, seed, ref["rate"], None, cap, quick)
        target = target_of(net, quick)
        if target is None:
            print("%s: no DENSE fp32 run at %s yet: the other cells wait for the target" % (net, FULL_CELL))
            continue
        for cell in args.cells:
            if cell == FULL_CELL:
                continue
            # --seeds (3 by default) at 2x100mbit, the first of them elsewhere.
            seeds = args.seeds if cell == "2x100mbit" else args.seeds[:1]
            for seed in seeds:
                for method in args.methods:
                    # 4 ranks train another effective batch: its own DENSE fp32 run sets
                    # its target, so that one runs to the end.
                    cell_target = target
                    if cell.startswith("4x"):
                        cell_target = None if method == "DENSE fp32" else target_of(net, quick, cell)
                        if cell_target is None and method != "DENSE fp32":
                            run_one(net, cell, "DENSE fp32", seed, ref["rate"], None, cap, quick)
                            cell_target = target_of(net, quick, cell)
                    run_one(net, cell, method, seed, ref["rate"], cell_target, cap, quick)


def final_top1(prefix):
    parsed = parse_log.parse_file(prefix + ".log")
    tests = [r for r in parsed.test_rows if "accuracy" in r]
    return tests[-1]["accuracy"] if tests else math.nan


def target_of(net, quick, cell=FULL_CELL):
    folder = run_dir(net, cell, quick)
    finals = []
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        if name.startswith("dense_fp32_s") and name.endswith(".json"):
            with open(os.path.join(folder, name)) as f:
                if not json.load(f).get("completed"):
                    continue
            finals.append(final_top1(os.path.join(folder, name[:-5])))
    if not finals:
        return None
    return statistics.mean(finals) - TARGET_MARGIN


def collect(quick):
    rows = []
    base = os.path.join(OUT, "quick" if quick else "runs")
    for net in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        ref_path = os.path.join(base, net, "ref", "ref.json")
        ref = json.load(open(ref_path)) if os.path.exists(ref_path) else {}
        interval = QUICK["test_interval"] if quick else NETS[net]["test_interval"]
        full_target = target_of(net, quick)
        for cell in CELLS:
            folder = os.path.join(base, net, cell)
            if not os.path.isdir(folder):
                continue
            target = full_target if not cell.startswith("4x") else target_of(net, quick, cell)
            for method in METHODS:
                for name in sorted(os.listdir(folder)):
                    m = re.match(r"%s_s(\d+)\.json$" % slug(method), name)
                    if not m:
                        continue
                    prefix = os.path.join(folder, name[:-5])
                    meta = json.load(open(prefix + ".json"))
                    parsed = parse_log.parse_file(prefix + ".log")
                    tests = [r for r in parsed.test_rows if "accuracy" in r and "TrainingSeconds" in r]
                    reach = next((r for r in tests if target is not None and r["accuracy"] >= target), None)
                    split = step_split(parsed, warmup_end(net, method, quick), interval)
                    row = {"net": net, "cell": cell, "rate": rate_of(cell, ref.get("rate", "ref"))[1],
                           "method": method, "seed": int(m.group(1)),
                           "target": target, "reached": reach is not None,
                           "iterations": reach["NumIters"] if reach else (tests[-1]["NumIters"] if tests else 0),
                           "seconds": reach["TrainingSeconds"] if reach else
                                      (parsed.final or {}).get("training_seconds",
                                                               tests[-1]["TrainingSeconds"] if tests else math.nan),
                           "capped": not meta.get("completed", False),
                           "final_top1": tests[-1]["accuracy"] if (cell == FULL_CELL and tests) else math.nan,
                           "compute_only_ms": ref.get("compute_ms", math.nan),
                           "curve": [(r["TrainingSeconds"], r["accuracy"]) for r in tests]}
                    row.update(split)
                    rows.append(row)
    return rows


def fmt_time(row):
    if row["reached"]:
        return "%.0f" % row["seconds"]
    return "≥ %.0f" % row["seconds"] if row["capped"] else "∞"


def cmd_report(args):
    rows = collect(args.quick)
    folder = os.path.join(OUT, "quick") if args.quick else OUT
    os.makedirs(folder, exist_ok=True)
    columns = ["net", "cell", "rate", "method", "seed", "target", "reached", "iterations", "seconds",
               "capped", "final_top1", "step_ms", "compute_ms", "work_ms", "wire_ms", "hidden_share",
               "bytes_per_step", "compute_only_ms"]
    with open(os.path.join(folder, "rows.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, columns, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow(row)
    lines = ["# Time to accuracy on an emulated slow network", "",
             "Written by `scripts/time_to_accuracy.sh report` from the runs under `%s/`; how "
             "they were made: `README.md` beside this file. Time is training time, test passes "
             "excluded; ≥ marks a run stopped at the wall-time cap, ∞ one that ended its "
             "schedule below the target (its gap in the last column)."
             % os.path.relpath(os.path.join(folder, "runs" if not args.quick else ""), OUT).rstrip("/."), ""]
    finals = {}
    for r in rows:
        if r["cell"] == FULL_CELL:
            finals.setdefault((r["net"], r["method"]), []).append(r["final_top1"])
    for net in sorted({r["net"] for r in rows}):
        ref_path = os.path.join(OUT, "quick" if args.quick else "runs", net, "ref", "ref.json")
        if os.path.exists(ref_path):
            ref = json.load(open(ref_path))
            earlier = ref.get("earlier_compute_ms", [])
            lines += ["## %s" % net, "",
                      "Compute-only step (DENSE fp32, 2 ranks, shared memory): %.1f ms%s. Reference "
                      "regime: %s per rank, where DENSE fp32's step measured %.0f ms (%.1fx the "
                      "compute-only step of then, %.1f ms)."
                      % (ref["compute_ms"],
                         " (measured again with the latest rows; earlier %s ms)"
                         % ", ".join("%.1f" % c for c in earlier) if earlier else "",
                         ref["rate"], ref["step_ms_at_rate"], ref["ratio"],
                         earlier[0] if earlier else ref["compute_ms"]), ""]
        else:
            lines += ["## %s" % net, ""]
        for cell in CELLS:
            cell_rows = [r for r in rows if r["net"] == net and r["cell"] == cell]
            if not cell_rows:
                continue
            target = cell_rows[0]["target"]
            lines += ["### %s%s" % (cell, " (4 ranks share 2 cores: every method computes slower alike)"
                                    if cell.startswith("4x") else ""), "",
                      "Target top-1: %s." % ("%.2f%%" % (100 * target) if target is not None else "not yet known"), "",
                      "| method | seeds | time to target (s) | iterations | speed-up vs DENSE fp16 | final top-1 (%s) | step (ms) | compute | exchange work | wire wait | wire hidden | bytes/step |" % FULL_CELL,
                      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
            dense16 = [r for r in cell_rows if r["method"] == "DENSE fp16"]
            for method in METHODS:
                mine = [r for r in cell_rows if r["method"] == method]
                if not mine:
                    continue
                reached = [r for r in mine if r["reached"]]
                if len(reached) == len(mine):
                    times = [r["seconds"] for r in mine]
                    time_text = "%.0f" % statistics.mean(times) + (" ± %.0f" % statistics.stdev(times) if len(times) > 1 else "")
                else:
                    time_text = ", ".join(fmt_time(r) for r in mine)
                speedup = ""
                if dense16 and reached and len(reached) == len(mine):
                    d = dense16[0]
                    mean_time = statistics.mean(r["seconds"] for r in mine)
                    ratio = statistics.mean(r["seconds"] for r in dense16) / mean_time
                    speedup = ("%.1fx" if all(x["reached"] for x in dense16) else "≥ %.1fx") % ratio
                top = finals.get((net, method), [])
                top = [t for t in top if not math.isnan(t)]
                top_text = ("%.2f" % (100 * statistics.mean(top)) + (" ± %.2f" % (100 * statistics.stdev(top)) if len(top) > 1 else "")) if top else ""
                if top and target is not None and not all(r["reached"] for r in mine):
                    top_text += " (%+.2f pp)" % (100 * (statistics.mean(top) - target))
                med = lambda k: statistics.median(r.get(k, math.nan) for r in mine)
                lines.append("| %s | %d | %s | %s | %s | %s | %.1f | %.1f | %.2f | %.2f | %.0f%% | %.0f |" % (
                    method, len(mine), time_text, "/".join(str(r["iterations"]) for r in mine),
                    speedup, top_text, med("step_ms"), med("compute_ms"), med("work_ms"), med("wire_ms"),
                    100 * med("hidden_share"), med("bytes_per_step")))
            lines.append("")
    with open(os.path.join(folder, "TABLE.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    plot(rows, folder)
    if not args.quick and os.path.realpath(OUT) == os.path.join(REPO, "results", "time_to_accuracy"):
        claims.main([])  # results/CLAIMS.md quotes these rows
    print("time_to_accuracy: wrote %s" % os.path.join(folder, "TABLE.md"))


def plot(rows, folder):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("time_to_accuracy: matplotlib missing, no plots")
        return
    for net in sorted({r["net"] for r in rows}):
        cells = [c for c in CELLS if any(r["net"] == net and r["cell"] == c for r in rows)]
        fig, axes = plt.subplots(1, len(cells), figsize=(4.2 * len(cells), 3.6), squeeze=False)
        for ax, cell in zip(axes[0], cells):
            for method in METHODS:
                mine = [r for r in rows if r["net"] == net and r["cell"] == cell and r["method"] == method]
                if not mine:
                    continue
                first = min(mine, key=lambda r: r["seed"])
                if not first["curve"]:
                    continue
                xs, ys = zip(*first["curve"])
                # One colour per method in every panel.
                color = "C%d" % (list(METHODS).index(method) % 10)
                ax.plot([max(x, 0.1) for x in xs], [100 * y for y in ys], label=method, lw=1.2,
                        color=color)
            target = next((r["target"] for r in rows if r["net"] == net and r["cell"] == cell), None)
            if target is not None:
                ax.axhline(100 * target, color="gray", ls=":", lw=1)
            ax.set_xscale("log")
            ax.set_title("%s, %s" % (net, cell), fontsize=9)
            ax.set_xlabel("training seconds (test passes excluded)", fontsize=8)
            ax.set_ylabel("top-1 (%)", fontsize=8)
            tests = [100 * y for r in rows if r["net"] == net for _, y in r["curve"]]
            if tests:
                ax.set_ylim(max(min(tests), 100 * (target or 0.8) - 8), max(tests) + 0.5)
            ax.tick_params(labelsize=7)
            ax.legend(fontsize=6, loc="lower right")
        fig.tight_layout()
        fig.savefig(os.path.join(folder, "%s.png" % net), dpi=110)
        plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run")
    run.add_argument("--nets", nargs="+", default=list(NETS), choices=list(NETS))
    run.add_argument("--cells", nargs="+", default=CELLS, choices=CELLS)
    run.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    run.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3],
                     help="seeds of the 2x100mbit cell (the first one elsewhere)")
    run.add_argument("--full-seeds", nargs="+", type=int, default=[1],
                     help="seeds of the full-length runs at %s (final top-1; DENSE fp32's "
                          "mean sets the target)" % FULL_CELL)
    run.add_argument("--cap-minutes", type=float, default=60)
    run.add_argument("--quick", action="store_true")
    run.add_argument("--remeasure-compute", action="store_true",
                     help="measure the compute-only step again first (keeps the reference rate)")
    report = sub.add_parser("report")
    report.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.command == "run":
        if args.quick:
            args.seeds = args.seeds[:1]
            args.full_seeds = args.full_seeds[:1]
        cmd_run(args)
    else:
        cmd_report(args)


if __name__ == "__main__":
    main()
