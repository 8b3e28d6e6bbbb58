"""Tests of tools/parse_log on BVLC Caffe's log format and on this project's.

Run from anywhere:  python3 -m unittest discover -s tests/python -p 'test_parse_log.py'
"""

import csv
import importlib.machinery
import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(REPO, "tools", "parse_log")
FIXTURES = os.path.join(REPO, "tests", "fixtures")


def load_tool():
    loader = importlib.machinery.SourceFileLoader("parse_log", TOOL)
    spec = importlib.util.spec_from_loader("parse_log", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


parse_log = load_tool()


def read_csv(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def run_tool(*args):
    return subprocess.run([sys.executable, TOOL] + list(args), capture_output=True, text=True)


class BvlcFormat(unittest.TestCase):
    def test_writes_train_and_test_csv_with_bvlc_columns(self):
        log = os.path.join(FIXTURES, "bvlc_lenet_sample.log")
        with tempfile.TemporaryDirectory() as out:
            result = run_tool(log, out)
            self.assertEqual(result.returncode, 0, result.stderr)
            header, rows = read_csv(os.path.join(out, "bvlc_lenet_sample.log.train.csv"))
            self.assertEqual(header, ["NumIters", "Seconds", "LearningRate", "loss", "iter_per_s"])
            self.assertEqual([r[0] for r in rows], ["0", "100", "200", "300", "400"])
            # 2.65 s after the first stamp, across the turn of the year.
            self.assertEqual(rows[0][:4], ["0", "2.65", "0.01", "2.34432"])
            self.assertEqual(rows[1][:5], ["100", "4.65", "0.00992565", "0.262151", "50.0"])
            self.assertEqual(rows[3][3], "nan")  # "-nan" in the log
            # The closing "Iteration 400, loss = " line has no train output lines.
            self.assertEqual(rows[4][:4], ["400", "11.71", "0.00978075", "0.0913"])

            header, rows = read_csv(os.path.join(out, "bvlc_lenet_sample.log.test.csv"))
            self.assertEqual(header, ["NumIters", "Seconds", "LearningRate", "accuracy", "loss"])
            self.assertEqual(rows, [
                ["0", "2.6", "0.01", "0.0958", "2.35179"],
                ["200", "7.6", "0.00985258", "0.9632", "0.118467"],
                # No lr line at 400: the latest earlier one.
                ["400", "12.71", "0.00978075", "0.9741", "0.0811"],
            ])

    def test_old_format_without_rates(self):
        log = parse_log.parse_file(os.path.join(FIXTURES, "bvlc_old_format_sample.log"))
        self.assertEqual(log.train_columns, ["NumIters", "Seconds", "LearningRate", "loss"])
        self.assertEqual([(r["NumIters"], r["Seconds"], r["loss"]) for r in log.train_rows],
                         [(0, 31.0, 6.91), (20, 91.0, 6.89)])
        self.assertEqual(log.test_rows[0]["accuracy"], 0.001)
        self.assertIsNone(log.final)


class ProjectFormat(unittest.TestCase):
    def setUp(self):
        self.log = parse_log.parse_file(os.path.join(FIXTURES, "iwp_lenet_sample.log"))

    def test_sync_columns_follow_the_outputs(self):
        self.assertEqual(self.log.train_columns[:4], ["NumIters", "Seconds", "LearningRate", "loss"])
        for column in ("iter_per_s", "sync_density", "sync_nominal_ratio", "sync_wire_ratio",
                       "sync_bytes_per_step", "sync_select_ms", "sync_broadcast_ms",
                       "sync_allreduce_ms", "sync_scatter_ms"):
            self.assertIn(column, self.log.train_columns)
        sparse = [r for r in self.log.train_rows if r.get("sync_density", 1) < 1]
        self.assertTrue(sparse, "the fixture has sparse steps")
        self.assertGreater(sparse[-1]["sync_nominal_ratio"], 1)

    def test_test_rows_and_final_line(self):
        self.assertIn("accuracy", self.log.test_columns)
        # Stamps with the year ("I20261129 13:13:23.607173") count from the first line.
        self.assertEqual([(r["NumIters"], r["Seconds"]) for r in self.log.test_rows],
                         [(30, 2.035103), (60, 3.945981)])
        self.assertTrue(all(0 <= r["accuracy"] <= 1 for r in self.log.test_rows))
        final = self.log.final
        self.assertIsNotNone(final)
        self.assertEqual(final["method"], "IWP")
        self.assertEqual(final["iteration"], self.log.train_rows[-1]["NumIters"])
        self.assertIn("0/accuracy", final["test"])
        self.assertGreater(final["wire_ratio"], 1)

    def test_final_option_prints_json(self):
        result = run_tool("--final", os.path.join(FIXTURES, "iwp_lenet_sample.log"))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(json.loads(result.stdout)["method"], "IWP")


class FinalLineShapes(unittest.TestCase):
    def test_overall_and_after_warmup_figures(self):
        line = ("I20261129 13:13:25.518152 26087 caffe.cpp:180] Final: iteration 60, train loss "
                "1.3264, test 0/accuracy = 0.608, test 0/loss = 1.12865, exchange TOPK_ALLGATHER "
                "overall: nominal ratio 5.56519x, wire ratio 5.2x, bytes/step 328693; after "
                "warm-up: nominal ratio 64x, wire ratio 34.8x, bytes/step 49568\n")
        final = parse_log.parse_lines([line]).final
        self.assertEqual(final["method"], "TOPK_ALLGATHER")
        self.assertEqual((final["nominal_ratio"], final["wire_ratio"], final["bytes_per_step"]),
                         (5.56519, 5.2, 328693.0))
        self.assertEqual((final["steady_nominal_ratio"], final["steady_wire_ratio"],
                          final["steady_bytes_per_step"]), (64.0, 34.8, 49568.0))
        self.assertEqual(final["test"], {"0/accuracy": 0.608, "0/loss": 1.12865})

    def test_dense_run_without_exchange_figures(self):
        line = "I0101 00:00:01.000000 1 caffe.cpp:1] Final: iteration 5, train loss 0.5\n"
        final = parse_log.parse_lines([line]).final
        self.assertEqual(final, {"iteration": 5, "test": {}, "train_loss": 0.5})

    def test_scores_of_an_earlier_test(self):
        line = ("I0101 00:00:01.000000 1 caffe.cpp:1] Final: iteration 20, train loss 0.5, "
                "last test at iteration 15, test 0/loss = 0.25\n")
        final = parse_log.parse_lines([line]).final
        self.assertEqual(final, {"iteration": 20, "test": {"0/loss": 0.25}, "train_loss": 0.5,
                                 "last_test_iteration": 15})

    def test_training_time_before_each_test(self):
        lines = [
            "I0101 00:00:01.000000 1 solver.cpp:1] Iteration 100, training time 2.07 s (test passes excluded)\n",
            "I0101 00:00:01.500000 1 solver.cpp:1] Iteration 100, Testing net (#0)\n",
            "I0101 00:00:02.000000 1 solver.cpp:1]     Test net output #0: accuracy = 0.5059\n",
        ]
        log = parse_log.parse_lines(lines)
        self.assertEqual(len(log.test_rows), 1)
        self.assertEqual(log.test_rows[0]["TrainingSeconds"], 2.07)
        self.assertEqual(log.test_rows[0]["accuracy"], 0.5059)

    def test_training_time_at_the_end(self):
        line = ("I0101 00:00:01.000000 1 caffe.cpp:1] Final: iteration 300, train loss 0.4, "
                "test 0/accuracy = 0.8126, exchange IWP overall: nominal ratio 46.1x, wire ratio "
                "73.3x, bytes/step 23524; training time 6.06493 s (test passes excluded)\n")
        final = parse_log.parse_lines([line]).final
        self.assertEqual(final["training_seconds"], 6.06493)
        self.assertEqual(final["test"], {"0/accuracy": 0.8126})
        self.assertEqual(final["bytes_per_step"], 23524.0)


class EdgeCases(unittest.TestCase):
    def test_mpirun_tags_and_second_test_net(self):
        lines = [
            "[1,0]<stderr>:I0101 00:00:01.000000 1 solver.cpp:1] Iteration 10, Testing net (#0)\n",
            "[1,0]<stderr>:I0101 00:00:02.000000 1 solver.cpp:1]     Test net output #0: accuracy = 0.5\n",
            "[1,0]<stderr>:I0101 00:00:02.500000 1 solver.cpp:1] Iteration 10, Testing net (#1)\n",
            "[1,0]<stderr>:I0101 00:00:03.000000 1 solver.cpp:1]     Test net output #0: accuracy = 0.25\n",
        ]
        log = parse_log.parse_lines(lines)
        self.assertEqual(log.test_columns, ["NumIters", "Seconds", "LearningRate", "accuracy",
                                            "net1/accuracy"])
        self.assertEqual(log.test_rows[0]["accuracy"], 0.5)
        self.assertEqual(log.test_rows[0]["net1/accuracy"], 0.25)
        self.assertEqual(log.test_rows[0]["Seconds"], 1.0)
        self.assertTrue(math.isnan(log.test_rows[0]["LearningRate"]))

    def test_missing_log_is_an_error(self):
        result = run_tool(os.path.join(FIXTURES, "no_such.log"), tempfile.gettempdir())
        self.assertEqual(result.returncode, 1)
        self.assertIn("no such log file", result.stderr)

    def test_final_option_without_final_line(self):
        result = run_tool("--final", os.path.join(FIXTURES, "bvlc_old_format_sample.log"))
        self.assertEqual(result.returncode, 1)
        self.assertIn("Final", result.stderr)


if __name__ == "__main__":
    unittest.main()
