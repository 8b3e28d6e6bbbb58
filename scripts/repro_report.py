#!/usr/bin/env python3
"""Summarizes the runs of a reproduction script into TABLE.md, README.md and plots.

    repro_report.py --manifest RUNS.csv --out DIR [--title T] [--note TEXT]...

RUNS.csv has one row per finished training run, with the columns
    model,method,label,N,seed,iters,steady_from,log,sync_stats,wall_s
(label tells variants of one method apart, e.g. "IWP (global)"; steady_from is the
first iteration after warm-up and the density ramp). Written by
scripts/reproduce_fashion.sh and scripts/reproduce_imagenet.sh.

Exchange figures are the steady state (iterations >= steady_from) from rank 0's
-sync_stats CSV: nominal ratio = elements / elements sent, wire ratio = bytes of a
dense ring all-reduce, 2 (N-1)/N x 4 bytes x elements, / bytes rank 0 sent, bytes
per step = mean bytes rank 0 sent. Without the CSV, the log's Final line (its
after-warm-up figures where it has them, else those of every step). Top-1 is the last test's accuracy (the Final line), as
mean ± sample standard deviation over the seeds; the difference is to DENSE at the
same model and N, in percentage points. Plots come from tools/plot_training (needs
Debian's python3-matplotlib; skipped with a note when it is missing).
"""

import argparse
import collections
import csv
import importlib.machinery
import importlib.util
import math
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLOT = os.path.join(REPO, "tools", "plot_training")
PLOT_PYTHON = "/usr/bin/python3"


def _load_parse_log():
    path = os.path.join(REPO, "tools", "parse_log")
    loader = importlib.machinery.SourceFileLoader("parse_log", path)
    spec = importlib.util.spec_from_loader("parse_log", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


parse_log = _load_parse_log()


def top1_of(final):
    """The top-1 accuracy among the Final line's test outputs."""
    tests = final.get("test", {})
    names = [n for n in tests if "accuracy" in n and "top5" not in n and "top_5" not in n]
    preferred = [n for n in names if n.startswith("0/")] or names
    return tests[preferred[0]] if preferred else None


def steady_exchange(sync_stats, n, steady_from):
    """(nominal ratio, wire ratio, bytes per step, steps) over iterations >= steady_from."""
    elements = sent = sent_bytes = steps = 0
    with open(sync_stats, newline="") as f:
        for row in csv.DictReader(f):
            if row["blob"] != "__step__" or int(row["iteration"]) < steady_from:
                continue
            elements += int(row["elements"])
            sent += int(row["sent"])
            sent_bytes += int(row["bytes"])
            steps += 1
    if steps == 0:
        return None
    dense = 2.0 * (n - 1) / n * 4.0 * elements if n > 1 else 0.0
    return (elements / sent if sent else math.inf,
            dense / sent_bytes if sent_bytes else math.inf,
            sent_bytes / steps, steps)


def mean_std(values):
    values = [v for v in values if v is not None]
    if not values:
        return None, None
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, None
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def read_runs(manifest):
    runs = []
    with open(manifest, newline="") as f:
        for row in csv.DictReader(f):
            log = parse_log.parse_file(row["log"])
            if log.final is None:
                raise SystemExit("error: %s has no Final line (run did not finish)" % row["log"])
            n = int(row["N"])
            steady = None
            if row.get("sync_stats") and os.path.isfile(row["sync_stats"]):
                steady = steady_exchange(row["sync_stats"], n, int(row.get("steady_from") or 0))
            if steady:
                nominal, wire, per_step, _ = steady
            else:
                # The Final line's after-warm-up figures where the log has them.
                nominal = log.final.get("steady_nominal_ratio", log.final.get("nominal_ratio"))
                wire = log.final.get("steady_wire_ratio", log.final.get("wire_ratio"))
                per_step = log.final.get("steady_bytes_per_step", log.final.get("bytes_per_step"))
            runs.append({
                "model": row["model"], "method": row["method"], "label": row["label"] or row["method"],
                "N": n, "seed": int(row["seed"]), "iters": int(row["iters"]),
                "log": row["log"], "sync_stats": row.get("sync_stats", ""),
                "wall": float(row["wall_s"]), "top1": top1_of(log.final),
                "train_loss": log.final.get("train_loss"),
                "nominal": nominal, "wire": wire, "bytes": per_step, "steady": bool(steady),
                "age_max": log.final.get("age_max"), "age_mean": log.final.get("age_mean"),
            })
    if not runs:
        raise SystemExit("error: %s lists no runs" % manifest)
    return runs


def group(runs):
    groups = collections.OrderedDict()
    for r in runs:
        groups.setdefault((r["model"], r["label"], r["N"]), []).append(r)
    return groups


def _num(value, digits=1, suffix=""):
    if value is None:
        return "n/a"
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    return ("%." + str(digits) + "f%s") % (value, suffix)


def _bytes(value):
    if value is None:
        return "n/a"
    for unit, size in (("MB", 1e6), ("kB", 1e3)):
        if value >= size:
            return "%.1f %s" % (value / size, unit)
    return "%.0f B" % value


def write_table(runs, out_dir, title, notes):
    groups = group(runs)
    dense_top1 = {}
    for (model, label, n), rs in groups.items():
        if rs[0]["method"] == "DENSE":
            dense_top1[(model, n)] = mean_std([r["top1"] for r in rs])[0]
    lines = ["# " + title, ""]
    for note in notes:
        lines += [note, ""]
    lines += [
        "| model | method | N | iterations | seeds | nominal ratio | wire ratio | top-1 (%) "
        "mean ± std | Δ top-1 vs DENSE (pp) | bytes/step (rank 0) | age max / mean (steps) "
        "| wall time (s) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for (model, label, n), rs in groups.items():
        top1, spread = mean_std([r["top1"] for r in rs])
        dense = dense_top1.get((model, n))
        if rs[0]["method"] == "DENSE":
            delta = "0 (baseline)"
        elif dense is None or top1 is None:
            delta = "n/a (no DENSE at N=%d)" % n
        else:
            delta = "%+.2f" % (100 * (top1 - dense))
        top1_text = "n/a" if top1 is None else (
            "%.2f" % (100 * top1) + (" ± %.2f" % (100 * spread) if spread is not None else ""))
        nominal = mean_std([r["nominal"] for r in rs])[0]
        wire = mean_std([r["wire"] for r in rs])[0]
        per_step = mean_std([r["bytes"] for r in rs])[0]
        wall = mean_std([r["wall"] for r in rs])[0]
        age_max = mean_std([r["age_max"] for r in rs])[0]
        age_mean = mean_std([r["age_mean"] for r in rs])[0]
        age = "-" if age_max is None else "%.0f / %.1f" % (age_max, age_mean)
        lines.append("| %s | %s | %d | %d | %d | %s | %s | %s | %s | %s | %s | %s |" % (
            model, label, n, rs[0]["iters"], len(rs), _num(nominal, 1, "x"), _num(wire, 1, "x"),
            top1_text, delta, _bytes(per_step), age, _num(wall, 0)))
    steady = all(r["steady"] for r in runs)
    lines += ["", ("Exchange columns: steady state after warm-up, from rank 0's `-sync_stats` CSV."
                   if steady else
                   "Exchange columns: from the log's Final line where no `-sync_stats` CSV was "
                   "kept (after warm-up where the log says so, else every step)."),
              "Age: after the last step, the most and the mean number of steps since a "
              "coordinate of the sparse blobs was last sent (the Final line; mean over seeds).",
              "Wall time: whole `mpirun` (start-up, training and tests), mean over seeds.", ""]
    path = os.path.join(out_dir, "TABLE.md")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    return path


def write_bytes_csvs(runs, out_dir):
    """Per model: method,N,bytes for the methods that ran at more than one N."""
    written = {}
    by_model = collections.OrderedDict()
    for r in runs:
        by_model.setdefault(r["model"], []).append(r)
    for model, rs in by_model.items():
        ranks = collections.defaultdict(set)
        for r in rs:
            if r["bytes"] is not None:
                ranks[r["label"]].add(r["N"])
        labels = [label for label, ns in ranks.items() if len(ns) > 1]
        if not labels:
            continue
        path = os.path.join(out_dir, "%s_bytes.csv" % model)
        with open(path, "w", newline="") as f:
            writer = csv.writer(f, lineterminator="\n")
            writer.writerow(["method", "N", "bytes"])
            for r in rs:
                if r["label"] in labels and r["bytes"] is not None:
                    writer.writerow([r["label"], r["N"], "%.0f" % r["bytes"]])
        written[model] = path
    return written


def _can_plot():
    if not os.access(PLOT_PYTHON, os.X_OK):
        return False
    result = subprocess.run([PLOT_PYTHON, "-c", "import matplotlib"], capture_output=True)
    return result.returncode == 0


def _plot(args):
    result = subprocess.run([PLOT_PYTHON, PLOT] + args, capture_output=True, text=True)
    if result.returncode != 0:
        print("repro_report: plot_training %s failed:\n%s" % (args[0], result.stderr), file=sys.stderr)
        return False
    return True


def make_plots(runs, out_dir, curve_ranks, bytes_csvs):
    """Returns [(title, png file name)]."""
    images = []
    by_model = collections.OrderedDict()
    for r in runs:
        by_model.setdefault(r["model"], []).append(r)
    for model, rs in by_model.items():
        at_n = [r for r in rs if r["N"] == curve_ranks] or rs
        n = at_n[0]["N"]
        name = "%s_curves_np%d.png" % (model, n)
        if _plot(["curves", os.path.join(out_dir, name), "--title",
                  "%s, %d ranks: train loss and test top-1 (thin: single seeds)" % (model, n)]
                 + ["%s=%s" % (r["label"], r["log"]) for r in at_n if r["N"] == n]):
            images.append(("%s: loss and accuracy per method at %d ranks" % (model, n), name))
        sparse = [r for r in at_n if r["N"] == n and r["method"] == "IWP" and r["sync_stats"]
                  and os.path.isfile(r["sync_stats"])]
        # The layer-wise variant shows the per-layer budget at work.
        sparse.sort(key=lambda r: (r["label"] not in ("IWP (layer-wise)", "IWP"), r["seed"]))
        if sparse:
            r = sparse[0]
            name = "%s_iwp_layers_np%d.png" % (model, n)
            if _plot(["sync", os.path.join(out_dir, name), r["sync_stats"], "--title",
                      "%s, %s, %d ranks, seed %d" % (model, r["label"], n, r["seed"])]):
                images.append(("%s: per-layer density, threshold and age, %s, seed %d"
                               % (model, r["label"], r["seed"]), name))
        if model in bytes_csvs:
            name = "%s_bytes_vs_ranks.png" % model
            if _plot(["bytes", os.path.join(out_dir, name), bytes_csvs[model], "--title",
                      "%s: bytes per rank per step (steady state)" % model]):
                images.append(("%s: bytes per rank per step against N" % model, name))
    return images


def write_readme(out_dir, title, notes, images, commands, plots_skipped):
    lines = ["# " + title, ""]
    for note in notes:
        lines += [note, ""]
    lines += ["Results: [TABLE.md](TABLE.md).", ""]
    if commands:
        lines += ["Reproduce:", "", "```"] + commands + ["```", ""]
    if plots_skipped:
        lines += ["Plots were not made: Debian's python3-matplotlib is missing "
                  "(`apt-get install python3-matplotlib`).", ""]
    for caption, name in images:
        lines += ["## " + caption, "", "![%s](%s)" % (caption, name), ""]
    with open(os.path.join(out_dir, "README.md"), "w") as f:
        f.write("\n".join(lines))


def main(argv):
    parser = argparse.ArgumentParser(description="TABLE.md, README.md and plots of reproduction runs")
    parser.add_argument("--manifest", required=True)
    parser.add_argument("--out", required=True, help="results folder")
    parser.add_argument("--title", default="Reproduction")
    parser.add_argument("--note", action="append", default=[], help="paragraph for both files")
    parser.add_argument("--command", action="append", default=[], help="reproduce command line")
    parser.add_argument("--curve-ranks", type=int, default=4, help="N of the curve plots")
    parser.add_argument("--no-plots", action="store_true")
    args = parser.parse_args(argv)
    runs = read_runs(args.manifest)
    os.makedirs(args.out, exist_ok=True)
    table = write_table(runs, args.out, args.title, args.note)
    bytes_csvs = write_bytes_csvs(runs, args.out)
    plots_skipped = args.no_plots or not _can_plot()
    images = [] if plots_skipped else make_plots(runs, args.out, args.curve_ranks, bytes_csvs)
    write_readme(args.out, args.title, args.note, images, args.command, plots_skipped)
    with open(table) as f:
        print(f.read())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
