"""Tests of scripts/repro_report.py: the table from a manifest of finished runs, and
--merge, which keeps the rows of a net that this report did not run.

Run from anywhere:  python3 -m unittest discover -s tests/python -p 'test_repro_report.py'
"""

import csv
import os
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REPORT = os.path.join(REPO, "scripts", "repro_report.py")

FINAL = ("I20261203 10:00:00.000000 1 caffe.cpp:173] Final: iteration 100, train loss 0.5, "
         "test 0/accuracy = %s, test 0/loss = 0.3, exchange %s overall: nominal ratio %sx, "
         "wire ratio %sx, bytes/step %s; after warm-up: nominal ratio %sx, wire ratio %sx, "
         "bytes/step %s; age max 40 mean 7.5\n")


class ReproReportTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.out = os.path.join(self.dir, "out")

    def tearDown(self):
        self.tmp.cleanup()

    def log(self, name, accuracy, method, ratio, per_step, sync_lines=()):
        path = os.path.join(self.dir, name + ".log")
        with open(path, "w") as f:
            f.writelines(sync_lines)
            f.write(FINAL % (accuracy, method, ratio, ratio, per_step, ratio, ratio, per_step))
        return path

    def manifest(self, name, runs):
        """runs: (model, method, label, seed, accuracy, ratio, bytes/step)."""
        path = os.path.join(self.dir, name + ".csv")
        with open(path, "w", newline="") as f:
            writer = csv.writer(f, lineterminator="\n")
            writer.writerow(["model", "method", "label", "N", "seed", "iters", "steady_from",
                             "log", "sync_stats", "wall_s"])
            for i, (model, method, label, seed, accuracy, ratio, per_step) in enumerate(runs):
                log = self.log("%s_%d" % (name, i), accuracy, method, ratio, per_step)
                writer.writerow([model, method, label, 4, seed, 100, 10, log, "", 12.5])
        return path

    def report(self, manifest, *extra):
        done = subprocess.run([sys.executable, REPORT, "--manifest", manifest, "--out", self.out,
                               "--no-plots"] + list(extra), capture_output=True, text=True)
        self.assertEqual(done.returncode, 0, done.stderr)
        return self.table_rows()

    def table_rows(self):
        rows = {}
        with open(os.path.join(self.out, "TABLE.md")) as f:
            for line in f:
                cells = [c.strip() for c in line.strip().strip("|").split("|")]
                if len(cells) == 13 and cells[0] not in ("model", "---"):
                    rows[(cells[0], cells[1])] = cells
        return rows

    def test_rows_are_means_over_seeds_with_the_gap_to_dense(self):
        rows = self.report(self.manifest("a", [
            ("net_a", "DENSE", "DENSE", 1, 0.90, 1, 1000), ("net_a", "DENSE", "DENSE", 2, 0.92, 1, 1000),
            ("net_a", "IWP", "IWP", 1, 0.89, 60, 20), ("net_a", "IWP", "IWP", 2, 0.90, 70, 30)]))
        self.assertEqual(rows[("net_a", "DENSE")][4], "1 2")
        self.assertEqual(rows[("net_a", "DENSE")][7], "91.00 ± 1.41")
        self.assertEqual(rows[("net_a", "IWP")][7], "89.50 ± 0.71")
        self.assertEqual(rows[("net_a", "IWP")][8], "-1.50")
        self.assertEqual(rows[("net_a", "IWP")][6], "65.0x")
        self.assertEqual(rows[("net_a", "IWP")][10], "40 / 7.5")

    def test_exchange_compute_is_the_mean_of_the_sync_lines_after_warm_up(self):
        sync = ("I20261203 10:00:00.000000 1 solver.cpp:334] Iteration %d, sync: method IWP, "
                "density 0.025, accumulate %s ms, select %s ms, broadcast 9.00 ms, "
                "allreduce 9.00 ms, scatter %s ms\n")
        lines = [sync % (5, 100, 100, 100),  # before steady_from (10): not counted
                 sync % (20, 1.0, 2.0, 0.5), sync % (30, 1.5, 3.0, 0.5)]
        manifest = os.path.join(self.dir, "m.csv")
        with open(manifest, "w", newline="") as f:
            writer = csv.writer(f, lineterminator="\n")
            writer.writerow(["model", "method", "label", "N", "seed", "iters", "steady_from",
                             "log", "sync_stats", "wall_s"])
            writer.writerow(["net_a", "IWP", "IWP", 4, 1, 100, 10,
                             self.log("s", 0.9, "IWP", 60, 20, lines), "", 1])
            writer.writerow(["net_a", "DENSE", "DENSE", 4, 1, 100, 0,
                             self.log("d", 0.9, "DENSE", 2, 900), "", 1])
        rows = self.report(manifest)
        self.assertEqual(rows[("net_a", "IWP")][11], "4.2")  # (3.5 + 5.0) / 2
        self.assertEqual(rows[("net_a", "DENSE")][11], "-")

    def test_the_baseline_is_plain_dense_when_a_dense_variant_is_beside_it(self):
        rows = self.report(self.manifest("a", [
            ("net_a", "DENSE", "DENSE, FP32 values", 1, 0.95, 1, 2000),
            ("net_a", "DENSE", "DENSE", 1, 0.90, 2, 1000),
            ("net_a", "IWP", "IWP", 1, 0.89, 60, 20)]))
        self.assertEqual(rows[("net_a", "IWP")][8], "-1.00")
        self.assertEqual(rows[("net_a", "DENSE")][8], "0 (baseline)")
        self.assertEqual(rows[("net_a", "DENSE, FP32 values")][8], "+5.00")

    def test_merge_keeps_the_other_nets_rows_and_replaces_this_nets(self):
        settings = "net_a=sync_param { density: 0.025 }"
        self.report(self.manifest("a", [
            ("net_a", "DENSE", "DENSE", 1, 0.90, 1, 1000),
            ("net_a", "IWP", "IWP, density / 2", 1, 0.885, 60, 20),
            ("net_b", "DENSE", "DENSE", 1, 0.50, 1, 5000)]),
            "--merge", "--settings", settings, "--command", "MODELS=net_a,net_b run")
        # A rows.csv from before the compute column still merges.
        path = os.path.join(self.out, "rows.csv")
        with open(path) as f:
            old = [{k: v for k, v in r.items() if k != "compute_ms"} for r in csv.DictReader(f)]
        with open(path, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(old[0]), lineterminator="\n")
            writer.writeheader()
            writer.writerows(old)
        # Only net_b runs again: net_a's rows come back from rows.csv, net_b's are new.
        rows = self.report(self.manifest("b", [
            ("net_b", "DENSE", "DENSE", 1, 0.93, 1, 5000),
            ("net_b", "IWP", "IWP", 1, 0.92, 58, 90)]),
            "--merge", "--command", "MODELS=net_b run")
        self.assertEqual(sorted(rows), [("net_a", "DENSE"), ("net_a", "IWP, density / 2"),
                                        ("net_b", "DENSE"), ("net_b", "IWP")])
        self.assertEqual(rows[("net_a", "IWP, density / 2")][7], "88.50")
        self.assertEqual(rows[("net_a", "IWP, density / 2")][8], "-1.50")
        self.assertEqual(rows[("net_b", "DENSE")][7], "93.00")  # not the first run's 50.00
        self.assertEqual(rows[("net_b", "IWP")][8], "-1.00")
        with open(os.path.join(self.out, "README.md")) as f:
            readme = f.read()
        self.assertIn("MODELS=net_a,net_b run", readme)
        self.assertIn("MODELS=net_b run", readme)
        self.assertIn("net_a settings: sync_param { density: 0.025 }.", readme)

    def test_rows_made_with_other_settings_are_named_in_the_notes(self):
        # net_a's IWP row is remade after its solver changed; the older row stays.
        self.report(self.manifest("a", [
            ("net_a", "DENSE", "DENSE", 1, 0.90, 1, 1000),
            ("net_a", "IWP", "IWP", 1, 0.89, 60, 20),
            ("net_a", "IWP", "IWP, density / 2", 1, 0.88, 120, 10)]),
            "--merge", "--settings", "net_a=sync_param { density: 0.025 }")
        self.report(self.manifest("b", [
            ("net_a", "DENSE", "DENSE", 1, 0.90, 1, 1000),
            ("net_a", "IWP", "IWP", 1, 0.895, 60, 20)]),
            "--merge", "--settings", "net_a=sync_param { density: 0.02 leader: EVERY_RANK }")
        with open(os.path.join(self.out, "TABLE.md")) as f:
            table = f.read()
        self.assertIn("net_a settings of net_a IWP, density / 2 N=4: "
                      "sync_param { density: 0.025 }.", table)
        self.assertIn("net_a settings of the other 2 rows: "
                      "sync_param { density: 0.02 leader: EVERY_RANK }.", table)

    def test_a_batch_suffix_names_the_same_net_and_a_variant_its_own(self):
        sys.path.insert(0, os.path.dirname(REPORT))
        import repro_report
        self.assertEqual(repro_report.net_of("lenet_fashion_b16"), "lenet_fashion")
        self.assertEqual(repro_report.net_of("lenet_fashion"), "lenet_fashion")
        # LeNet with BatchNorm is another net, whose settings get their own note.
        self.assertEqual(repro_report.net_of("lenet_fashion_bn"), "lenet_fashion_bn")
        self.assertEqual(repro_report.net_of("lenet_fashion_bn_b16"), "lenet_fashion_bn")

    def test_merge_replaces_a_remade_row_in_place_and_adds_a_new_part_after_its_net(self):
        self.report(self.manifest("a", [
            ("net_a", "DENSE", "DENSE", 1, 0.90, 1, 1000),
            ("net_a", "IWP", "IWP", 1, 0.89, 60, 20),
            ("net_b", "DENSE", "DENSE", 1, 0.50, 1, 5000)]), "--merge")
        # A second part of net_a: one row made again (the same seed), one new.
        self.report(self.manifest("b", [
            ("net_a", "SCALECOM", "SCALECOM, beta 1", 1, 0.87, 60, 20),
            ("net_a", "IWP", "IWP", 1, 0.91, 60, 20)]), "--merge", "--plot-tag", "methods")
        with open(os.path.join(self.out, "rows.csv")) as f:
            order = [(r["model"], r["label"], r["seeds"]) for r in csv.DictReader(f)]
        self.assertEqual(order, [("net_a", "DENSE", "1"), ("net_a", "IWP", "1"),
                                 ("net_a", "SCALECOM, beta 1", "1"), ("net_b", "DENSE", "1")])
        rows = self.table_rows()
        self.assertEqual(rows[("net_a", "IWP")][8], "+1.00")
        self.assertEqual(rows[("net_a", "SCALECOM, beta 1")][8], "-3.00")

    def test_seeds_run_later_join_the_earlier_seeds_of_their_row(self):
        self.report(self.manifest("a", [
            ("net_a", "DENSE", "DENSE", 1, 0.90, 1, 1000),
            ("net_a", "IWP", "IWP", 1, 0.89, 60, 20)]), "--merge", "--command", "day 1")
        self.report(self.manifest("b", [
            ("net_a", "IWP", "IWP", 2, 0.91, 60, 40),
            ("net_a", "IWP", "IWP", 3, 0.93, 60, 60)]), "--merge", "--command", "day 2")
        with open(os.path.join(self.out, "rows.csv")) as f:
            iwp = [r for r in csv.DictReader(f) if r["label"] == "IWP"]
        self.assertEqual(len(iwp), 1)
        self.assertEqual(iwp[0]["seeds"], "1 2 3")
        self.assertAlmostEqual(float(iwp[0]["top1_mean"]), 0.91)
        self.assertAlmostEqual(float(iwp[0]["top1_std"]), 0.02)
        self.assertAlmostEqual(float(iwp[0]["bytes"]), 40.0)  # (20 + 40 + 60) / 3
        self.assertEqual(iwp[0]["command"], "day 1; then day 2")
        self.assertEqual(self.table_rows()[("net_a", "IWP")][7], "91.00 ± 2.00")
        # Seed 2 run again replaces its earlier result and keeps seeds 1 and 3.
        self.report(self.manifest("c", [("net_a", "IWP", "IWP", 2, 0.96, 60, 40)]),
                    "--merge", "--command", "day 2")
        with open(os.path.join(self.out, "rows.csv")) as f:
            iwp = [r for r in csv.DictReader(f) if r["label"] == "IWP"][0]
        self.assertEqual(iwp["seeds"], "1 2 3")
        self.assertAlmostEqual(float(iwp["top1_mean"]), (0.89 + 0.96 + 0.93) / 3)

    def test_seeds_join_by_their_pooled_spread_where_only_the_mean_was_kept(self):
        self.report(self.manifest("a", [("net_a", "IWP", "IWP", s, a, 60, 20)
                                        for s, a in ((1, 0.90), (2, 0.92))]), "--merge")
        # A rows.csv from before per-seed top-1 was kept.
        path = os.path.join(self.out, "rows.csv")
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
        for row in rows:
            del row["top1_by_seed"]
        with open(path, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
        self.report(self.manifest("b", [("net_a", "IWP", "IWP", 3, 0.94, 60, 20)]), "--merge")
        with open(path) as f:
            iwp = list(csv.DictReader(f))[0]
        self.assertEqual(iwp["seeds"], "1 2 3")
        self.assertAlmostEqual(float(iwp["top1_mean"]), 0.92)
        self.assertAlmostEqual(float(iwp["top1_std"]), 0.02)
        # Seed 2 again: which of the kept mean's seeds it was cannot be undone, so the
        # remade row stands alone.
        self.report(self.manifest("c", [("net_a", "IWP", "IWP", 2, 0.80, 60, 20)]), "--merge")
        with open(path) as f:
            self.assertEqual(list(csv.DictReader(f))[0]["seeds"], "2")

    def test_rows_of_other_settings_are_not_joined(self):
        self.report(self.manifest("a", [("net_a", "IWP", "IWP", 1, 0.90, 60, 20)]), "--merge",
                    "--settings", "net_a=sync_param { density: 0.025 }")
        self.report(self.manifest("b", [("net_a", "IWP", "IWP", 2, 0.80, 60, 20)]), "--merge",
                    "--settings", "net_a=sync_param { density: 0.02 }")
        with open(os.path.join(self.out, "rows.csv")) as f:
            iwp = list(csv.DictReader(f))[0]
        self.assertEqual((iwp["seeds"], float(iwp["top1_mean"])), ("2", 0.80))

    def test_seeds_of_a_row_join_across_the_exchange_seed_in_its_settings(self):
        # The settings come from the report's first IWP run, with its own seed; a rows.csv
        # line written before the seed was left out of them still joins.
        self.report(self.manifest("a", [("net_a", "IWP", "IWP", 1, 0.90, 60, 20)]), "--merge",
                    "--settings", "net_a=sync_param { density: 0.025 }")
        path = os.path.join(self.out, "rows.csv")
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace("density: 0.025 }", "density: 0.025 method: IWP seed: 1 }"))
        self.report(self.manifest("b", [("net_a", "IWP", "IWP", 4, 0.94, 60, 20)]), "--merge",
                    "--settings", "net_a=sync_param { density: 0.025 method: IWP seed: 4 }")
        with open(path) as f:
            iwp = list(csv.DictReader(f))[0]
        self.assertEqual(iwp["seeds"], "1 4")
        self.assertAlmostEqual(float(iwp["top1_mean"]), 0.92)
        self.assertEqual(iwp["settings"], "sync_param { density: 0.025 method: IWP }")
        with open(os.path.join(self.out, "TABLE.md")) as f:
            self.assertIn("net_a settings: sync_param { density: 0.025 method: IWP }.", f.read())

    def test_kept_plots_are_listed_and_a_bad_plot_tag_is_an_error(self):
        os.makedirs(self.out)
        for name in ("net_a_curves_np4.png", "net_a_curves_np4_methods.png"):
            open(os.path.join(self.out, name), "wb").close()
        self.report(self.manifest("a", [("net_a", "DENSE", "DENSE", 1, 0.9, 1, 9)]), "--merge")
        with open(os.path.join(self.out, "README.md")) as f:
            readme = f.read()
        self.assertIn("](net_a_curves_np4.png)", readme)
        self.assertIn("net_a: loss and accuracy per method at 4 ranks (methods) (from an earlier "
                      "report)](net_a_curves_np4_methods.png)", readme)
        done = subprocess.run([sys.executable, REPORT, "--manifest", os.path.join(self.dir, "a.csv"),
                               "--out", self.out, "--no-plots", "--plot-tag", "a b"],
                              capture_output=True, text=True)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("--plot-tag 'a b'", done.stderr)

    def test_without_merge_the_report_holds_only_this_manifest(self):
        self.report(self.manifest("a", [("net_a", "DENSE", "DENSE", 1, 0.90, 1, 1000)]))
        rows = self.report(self.manifest("b", [("net_b", "DENSE", "DENSE", 1, 0.93, 1, 5000)]))
        self.assertEqual(sorted(rows), [("net_b", "DENSE")])

    def test_a_run_whose_last_test_was_not_at_its_end_is_an_error(self):
        path = os.path.join(self.dir, "early.log")
        with open(path, "w") as f:
            f.write("I20261203 10:00:00.000000 1 caffe.cpp:173] Final: iteration 100, train loss "
                    "0.5, last test at iteration 60, test 0/accuracy = 0.9\n")
        manifest = os.path.join(self.dir, "m.csv")
        with open(manifest, "w", newline="") as f:
            writer = csv.writer(f, lineterminator="\n")
            writer.writerow(["model", "method", "label", "N", "seed", "iters", "steady_from",
                             "log", "sync_stats", "wall_s"])
            writer.writerow(["net_a", "DENSE", "DENSE", 4, 1, 100, 0, path, "", 1])
        done = subprocess.run([sys.executable, REPORT, "--manifest", manifest, "--out", self.out,
                               "--no-plots"], capture_output=True, text=True)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("early.log: the last test ran at iteration 60, not at the last (100)",
                      done.stderr)

    def test_a_rows_file_without_a_column_is_a_clear_error(self):
        os.makedirs(self.out)
        with open(os.path.join(self.out, "rows.csv"), "w") as f:
            f.write("model,label\nnet_a,DENSE\n")
        done = subprocess.run([sys.executable, REPORT, "--manifest",
                               self.manifest("a", [("net_b", "DENSE", "DENSE", 1, 0.9, 1, 9)]),
                               "--out", self.out, "--no-plots", "--merge"],
                              capture_output=True, text=True)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("rows.csv: no column", done.stderr)


if __name__ == "__main__":
    unittest.main()
