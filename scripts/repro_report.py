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

Every report also writes DIR/rows.csv, one line per table row at full precision with
the seeds, the settings and the command that made it. With --merge, the rows of nets
that this manifest does not hold (by model, label and N) are read back from there and
kept, so one net or one part can be (re)run without the others' runs on disk: `runs/`
is not committed, rows.csv is. A row made again keeps the seeds of its earlier line that
this manifest lacks (its per-seed top-1 is kept in rows.csv), so seeds 2 and 3 run
today join seed 1 run on another day; a seed run again replaces its earlier result.
--plot-tag names this report's plots apart from the kept ones of the same net.
"""

import argparse
import collections
import csv
import importlib.machinery
import importlib.util
import math
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import claims  # noqa: E402

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


def exchange_compute_ms(log, steady_from):
    """Mean accumulate + select + scatter milliseconds of the log's `sync:` lines from
    iteration steady_from on (rank 0's exchange work besides communication), or None."""
    totals = [sum(row.get(k, 0.0) for k in ("sync_accumulate_ms", "sync_select_ms",
                                              "sync_scatter_ms"))
              for row in log.train_rows
              if row["NumIters"] >= steady_from and "sync_select_ms" in row]
    return sum(totals) / len(totals) if totals else None


def read_runs(manifest):
    runs = []
    with open(manifest, newline="") as f:
        for row in csv.DictReader(f):
            log = parse_log.parse_file(row["log"])
            if log.final is None:
                raise SystemExit("error: %s has no Final line (run did not finish)" % row["log"])
            if "last_test_iteration" in log.final:
                raise SystemExit("error: %s: the last test ran at iteration %d, not at the last "
                                 "(%d); top-1 must come from the trained model"
                                 % (row["log"], log.final["last_test_iteration"],
                                    log.final["iteration"]))
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
                "compute_ms": exchange_compute_ms(log, int(row.get("steady_from") or 0)),
            })
    if not runs:
        raise SystemExit("error: %s lists no runs" % manifest)
    return runs


def row_key(row):
    return (row["model"], row["label"], int(row["N"]))


def group(runs):
    groups = collections.OrderedDict()
    for r in runs:
        groups.setdefault(row_key(r), []).append(r)
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


ROW_FIELDS = ["model", "label", "method", "N", "iters", "seeds", "top1_mean", "top1_std",
              "nominal", "wire", "bytes", "age_max", "age_mean", "wall", "steady", "settings",
              "command", "compute_ms", "top1_by_seed"]
# Columns a rows.csv written before they existed may lack (read back as None).
NEWER_ROW_FIELDS = {"compute_ms", "top1_by_seed"}
# The columns that are means over a row's seeds.
MEAN_FIELDS = ("nominal", "wire", "bytes", "age_max", "age_mean", "wall", "compute_ms")


def summarize(runs, settings, command):
    """One table row per (model, label, N): the means over seeds, as ROW_FIELDS."""
    rows = []
    for (model, label, n), rs in group(runs).items():
        top1, spread = mean_std([r["top1"] for r in rs])
        rows.append({
            "model": model, "label": label, "method": rs[0]["method"], "N": n,
            "iters": rs[0]["iters"], "seeds": " ".join(str(r["seed"]) for r in rs),
            "top1_mean": top1, "top1_std": spread,
            **{key: mean_std([r[key] for r in rs])[0] for key in MEAN_FIELDS},
            "steady": all(r["steady"] for r in rs),
            "settings": settings.get(model, ""), "command": command,
            "top1_by_seed": format_by_seed({r["seed"]: r["top1"] for r in rs}),
        })
    return rows


def format_by_seed(top1s):
    """{seed: top-1} as rows.csv keeps it: "1:0.9325 2:0.9331"."""
    return " ".join("%d:%r" % (seed, top1s[seed]) for seed in sorted(top1s)
                    if top1s[seed] is not None)


def top1_by_seed(row):
    """{seed: top-1} of a row, or None where a row from before the column had several
    seeds (only their mean and spread are known)."""
    if row.get("top1_by_seed"):
        return {int(seed): float(value) for seed, value in
                (item.split(":") for item in row["top1_by_seed"].split())}
    seeds = [int(seed) for seed in row["seeds"].split()]
    if len(seeds) == 1 and row["top1_mean"] is not None:
        return {seeds[0]: row["top1_mean"]}
    return None


def without_seed(settings):
    """A sync_param text without its `seed: N`: the settings are those of a net's first
    IWP run, whose exchange seed is that run's own (each row lists its seeds), so two
    reports of other seeds ran the same settings."""
    return re.sub(r"\s*\bseed:\s*\d+", "", settings or "")


def pooled_mean_std(count_a, mean_a, std_a, count_b, mean_b, std_b):
    """The mean and sample standard deviation of two sets of values known only by their
    counts, means and sample standard deviations (None for a single value)."""
    count = count_a + count_b
    total = count_a * mean_a + count_b * mean_b
    squares = sum((n - 1) * (sd or 0.0) ** 2 + n * m * m
                  for n, m, sd in ((count_a, mean_a, std_a), (count_b, mean_b, std_b)))
    mean = total / count
    return mean, math.sqrt(max(0.0, (squares - count * mean * mean) / (count - 1)))


def with_earlier_seeds(earlier, fresh):
    """A remade row with the seeds of its earlier row that this report did not run
    again, so that seeds run on different days (or machines) add up to one row. A seed
    run again replaces its earlier result. The earlier row is dropped instead where it
    ran other settings, another length, or where its overlapping seeds cannot be told
    apart (a row from before per-seed top-1 was kept)."""
    if (earlier["settings"] and fresh["settings"]
            and without_seed(earlier["settings"]) != without_seed(fresh["settings"])) \
            or earlier["iters"] != fresh["iters"] or earlier["top1_mean"] is None \
            or fresh["top1_mean"] is None:
        return fresh
    fresh_seeds = {int(seed) for seed in fresh["seeds"].split()}
    earlier_seeds = [int(seed) for seed in earlier["seeds"].split()]
    kept = [seed for seed in earlier_seeds if seed not in fresh_seeds]
    if not kept:
        return fresh
    earlier_top1 = top1_by_seed(earlier)
    if earlier_top1 is None and len(kept) < len(earlier_seeds):
        return fresh
    row = dict(fresh)
    seeds = sorted(fresh_seeds | set(kept))
    row["seeds"] = " ".join(str(seed) for seed in seeds)
    fresh_top1 = top1_by_seed(fresh) or {}
    if earlier_top1 is not None:
        top1s = {seed: earlier_top1[seed] for seed in kept}
        top1s.update(fresh_top1)
        row["top1_mean"], row["top1_std"] = mean_std([top1s[seed] for seed in sorted(top1s)])
        row["top1_by_seed"] = format_by_seed(top1s)
    else:
        row["top1_mean"], row["top1_std"] = pooled_mean_std(
            len(kept), earlier["top1_mean"], earlier["top1_std"],
            len(fresh_seeds), fresh["top1_mean"], fresh["top1_std"])
        row["top1_by_seed"] = ""
    for key in MEAN_FIELDS:
        parts = [(n, value) for n, value in ((len(kept), earlier[key]),
                                             (len(fresh_seeds), fresh[key])) if value is not None]
        row[key] = (sum(n * value for n, value in parts) / sum(n for n, _ in parts)
                    if parts else None)
    row["steady"] = earlier["steady"] and fresh["steady"]
    row["settings"] = fresh["settings"] or earlier["settings"]
    if earlier["command"] and earlier["command"] != fresh["command"]:
        row["command"] = "%s; then %s" % (earlier["command"], fresh["command"])
    return row


def _float_or_none(text):
    if text in ("", "None"):
        return None
    return float(text)


def read_rows(path):
    """The rows a previous report kept in rows.csv."""
    rows = []
    with open(path, newline="") as f:
        for line in csv.DictReader(f):
            missing = [k for k in ROW_FIELDS if k not in line and k not in NEWER_ROW_FIELDS]
            if missing:
                raise SystemExit("error: %s: no column %s" % (path, ", ".join(missing)))
            row = dict(line)
            for key in NEWER_ROW_FIELDS:
                row.setdefault(key, "")
            row["N"], row["iters"] = int(row["N"]), int(row["iters"])
            for key in ("top1_mean", "top1_std") + MEAN_FIELDS:
                row[key] = _float_or_none(row[key])
            row["steady"] = row["steady"] == "True"
            rows.append(row)
    return rows


def write_rows(rows, out_dir):
    with open(os.path.join(out_dir, "rows.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=ROW_FIELDS, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: ("" if row[k] is None else repr(row[k]) if isinstance(row[k], float)
                                 else row[k]) for k in ROW_FIELDS})


def net_of(model):
    """The net a model name runs: lenet_fashion_b16 is lenet_fashion at batch 16, and
    lenet_fashion_bn_b16 is lenet_fashion_bn (LeNet with BatchNorm) at batch 16."""
    return re.sub(r"_b\d+$", "", model)


def merged_rows(new_rows, out_dir):
    """rows.csv's rows, each one this report made again replaced where it stood (keeping
    the earlier row's other seeds, with_earlier_seeds), and the new rows after the last
    row of their net (at the end for a net rows.csv lacks)."""
    path = os.path.join(out_dir, "rows.csv")
    if not os.path.isfile(path):
        return new_rows
    fresh = collections.OrderedDict((row_key(r), r) for r in new_rows)
    merged = [with_earlier_seeds(r, fresh.pop(row_key(r))) if row_key(r) in fresh else r
              for r in read_rows(path)]
    for key, row in fresh.items():
        same_net = [i for i, r in enumerate(merged) if net_of(r["model"]) == net_of(row["model"])]
        merged.insert(same_net[-1] + 1 if same_net else len(merged), row)
    return merged


def per_net_notes(rows):
    """Per net: the settings its IWP rows ran with. Where a net's rows ran with different
    settings (its shipped solver changed between reports, and older rows were kept),
    one note per set: the most common set covers "the other rows", and each other set
    names its rows, so no row is read against settings it did not run with."""
    groups = {}  # net -> {settings: [row names]}, both in the order of first appearance
    for row in rows:
        if row["settings"]:
            names = groups.setdefault(net_of(row["model"]), {}).setdefault(
                without_seed(row["settings"]), [])
            names.append("%s %s N=%s" % (row["model"], row["label"], row["N"]))
    notes = []
    for net, by_settings in groups.items():
        if len(by_settings) == 1:
            notes.append("%s settings: %s." % (net, next(iter(by_settings))))
            continue
        most = max(by_settings, key=lambda settings: len(by_settings[settings]))
        for settings, names in by_settings.items():
            if settings == most:
                notes.append("%s settings of the other %d rows: %s." % (net, len(names), settings))
            else:
                notes.append("%s settings of %s: %s." % (net, "; ".join(names), settings))
    return notes


def commands_of(rows):
    commands = []
    for row in rows:
        if row["command"] and row["command"] not in commands:
            commands.append(row["command"])
    return commands


def write_table(rows, out_dir, title, notes):
    # The baseline is the row labelled plain DENSE; another DENSE variant only where
    # there is none (a report may hold DENSE with FP32 and with FP16 values).
    baseline = {}
    for r in sorted((r for r in rows if r["method"] == "DENSE"), key=lambda r: r["label"] != "DENSE"):
        baseline.setdefault((r["model"], r["N"]), r)
    lines = ["# " + title, ""]
    for note in notes:
        lines += [note, ""]
    lines += [
        "| model | method | N | iterations | seeds | nominal ratio | wire ratio | top-1 (%) "
        "mean ± std | Δ top-1 vs DENSE (pp) | bytes/step (rank 0) | age max / mean (steps) "
        "| exchange compute (ms/step) | wall time (s) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        top1, spread, n = row["top1_mean"], row["top1_std"], row["N"]
        base = baseline.get((row["model"], n))
        dense = base["top1_mean"] if base else None
        if row is base:
            delta = "0 (baseline)"
        elif dense is None or top1 is None:
            delta = "n/a (no DENSE at N=%d)" % n
        else:
            delta = "%+.2f" % (100 * (top1 - dense))
        top1_text = "n/a" if top1 is None else (
            "%.2f" % (100 * top1) + (" ± %.2f" % (100 * spread) if spread is not None else ""))
        age = "-" if row["age_max"] is None else "%.0f / %.1f" % (row["age_max"], row["age_mean"])
        compute = "-" if row["compute_ms"] is None else "%.1f" % row["compute_ms"]
        lines.append("| %s | %s | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            row["model"], row["label"], n, row["iters"], row["seeds"],
            _num(row["nominal"], 1, "x"), _num(row["wire"], 1, "x"), top1_text, delta,
            _bytes(row["bytes"]), age, compute, _num(row["wall"], 0)))
    steady = all(r["steady"] for r in rows)
    lines += ["", ("Exchange columns: steady state after warm-up, from rank 0's `-sync_stats` CSV."
                   if steady else
                   "Exchange columns: from the log's Final line where no `-sync_stats` CSV was "
                   "kept (after warm-up where the log says so, else every step)."),
              "Age: after the last step, the most and the mean number of steps since a "
              "coordinate of the sparse blobs was last sent (the Final line; mean over seeds).",
              "Exchange compute: rank 0's accumulate + select + scatter per step after "
              "warm-up (the log's `sync:` lines; communication not included), mean over "
              "seeds; ranks share the cores, so only the order of magnitude holds. "
              "- where the row's log has none (or it was kept from an older report).",
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


def make_plots(runs, out_dir, curve_ranks, bytes_csvs, tag=""):
    """Returns [(title, png file name)]; a tag goes at the end of each name and title."""
    images = []
    suffix, part = ("_" + tag, " (%s)" % tag) if tag else ("", "")
    by_model = collections.OrderedDict()
    for r in runs:
        by_model.setdefault(r["model"], []).append(r)
    for model, rs in by_model.items():
        at_n = [r for r in rs if r["N"] == curve_ranks] or rs
        n = at_n[0]["N"]
        name = "%s_curves_np%d%s.png" % (model, n, suffix)
        if _plot(["curves", os.path.join(out_dir, name), "--title",
                  "%s, %d ranks: train loss and test top-1 (thin: single seeds)" % (model, n)]
                 + ["%s=%s" % (r["label"], r["log"]) for r in at_n if r["N"] == n]):
            images.append(("%s: loss and accuracy per method at %d ranks%s" % (model, n, part), name))
        sparse = [r for r in at_n if r["N"] == n and r["method"] == "IWP" and r["sync_stats"]
                  and os.path.isfile(r["sync_stats"])]
        # The layer-wise variant shows the per-layer budget at work.
        sparse.sort(key=lambda r: (r["label"] not in ("IWP (layer-wise)", "IWP"), r["seed"]))
        if sparse:
            r = sparse[0]
            name = "%s_iwp_layers_np%d%s.png" % (model, n, suffix)
            if _plot(["sync", os.path.join(out_dir, name), r["sync_stats"], "--title",
                      "%s, %s, %d ranks, seed %d" % (model, r["label"], n, r["seed"])]):
                images.append(("%s: per-layer density, threshold and age, %s, seed %d%s"
                               % (model, r["label"], r["seed"], part), name))
        if model in bytes_csvs:
            name = "%s_bytes_vs_ranks%s.png" % (model, suffix)
            if _plot(["bytes", os.path.join(out_dir, name), bytes_csvs[model], "--title",
                      "%s: bytes per rank per step (steady state)" % model]):
                images.append(("%s: bytes per rank per step against N%s" % (model, part), name))
    return images


KEPT_CAPTIONS = [(r"curves_np(\d+)", "loss and accuracy per method at %s ranks"),
                 (r"iwp_layers_np(\d+)", "per-layer density, threshold and age of IWP at %s ranks"),
                 (r"bytes_vs_ranks", "bytes per rank per step against N")]


def kept_images(rows, made, out_dir):
    """[(caption, png)] already in out_dir for the nets of rows, other than those made."""
    models = list(collections.OrderedDict((r["model"], None) for r in rows))
    images = []
    for name in sorted(os.listdir(out_dir)):
        owners = [m for m in models if name.startswith(m + "_") and name.endswith(".png")]
        if not owners or name in made:
            continue
        model = max(owners, key=len)  # lenet_fashion_b16_*.png is not lenet_fashion's
        what = name[len(model) + 1:-len(".png")]
        for pattern, caption in KEPT_CAPTIONS:
            match = re.fullmatch(pattern + r"(?:_([\w-]+))?", what)
            if match:
                *numbers, tag = match.groups()
                text = caption % tuple(numbers) if numbers else caption
                images.append(("%s: %s%s (from an earlier report)"
                               % (model, text, " (%s)" % tag if tag else ""), name))
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
    parser.add_argument("--settings", action="append", default=[], metavar="MODEL=TEXT",
                        help="what a net's runs were set to, kept with its rows")
    parser.add_argument("--merge", action="store_true",
                        help="keep the rows this manifest does not remake from OUT/rows.csv")
    parser.add_argument("--plot-tag", default="", metavar="TAG",
                        help="end each plot's file name with _TAG (letters, digits, - and _)")
    args = parser.parse_args(argv)
    if not re.fullmatch(r"[\w-]*", args.plot_tag):
        raise SystemExit("error: --plot-tag %r: expected letters, digits, - and _" % args.plot_tag)
    settings = {}
    for item in args.settings:
        model, sep, text = item.partition("=")
        if not sep:
            raise SystemExit("error: --settings %r: expected MODEL=TEXT" % item)
        settings[model] = without_seed(text)
    runs = read_runs(args.manifest)
    os.makedirs(args.out, exist_ok=True)
    rows = summarize(runs, settings, " ".join(args.command))
    if args.merge:
        rows = merged_rows(rows, args.out)
    write_rows(rows, args.out)
    notes = args.note + per_net_notes(rows)
    commands = commands_of(rows) if args.merge else args.command
    table = write_table(rows, args.out, args.title, notes)
    bytes_csvs = write_bytes_csvs(runs, args.out)
    plots_skipped = args.no_plots or not _can_plot()
    images = ([] if plots_skipped
              else make_plots(runs, args.out, args.curve_ranks, bytes_csvs, args.plot_tag))
    if args.merge:
        images = kept_images(rows, {name for _, name in images}, args.out) + images
    write_readme(args.out, args.title, notes, images, commands, plots_skipped)
    # A table under results/ feeds results/CLAIMS.md (scripts/claims.py).
    if os.path.realpath(args.out).startswith(os.path.join(REPO, "results") + os.sep):
        claims.main([])
    with open(table) as f:
        print(f.read())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
