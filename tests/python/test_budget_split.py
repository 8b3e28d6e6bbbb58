"""Tests of tools/budget_split: values sent per blob from -sync_stats CSVs.

Run from anywhere:  python3 -m unittest discover -s tests/python -p 'test_budget_split.py'
"""

import os
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(REPO, "tools", "budget_split")
HEADER = "iteration,blob,elements,sent,threshold,vmr,leader,bytes,density,age_max,age_mean\n"


class BudgetSplitTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def csv(self, name, rows):
        """rows: (iteration, blob, elements, sent)."""
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            f.write(HEADER)
            for iteration, blob, elements, sent in rows:
                f.write("%d,%s,%d,%d,0,0,0,0,0,0,0\n" % (iteration, blob, elements, sent))
            f.write("%d,__total,0,0,0,0,0,0,0,0,0\n" % rows[-1][0])
        return path

    def run_tool(self, *args):
        return subprocess.run([sys.executable, TOOL] + list(args), capture_output=True, text=True)

    def test_shares_densities_and_the_whole_blobs_row(self):
        # Iteration 0 is dense warm-up and is left out by --from 1.
        a = self.csv("a.csv", [(0, "conv[0]", 100, 100), (0, "bn[0]", 4, 4), (0, "fc[0]", 50, 50),
                               (1, "conv[0]", 100, 10), (1, "bn[0]", 4, 4), (1, "fc[0]", 50, 6),
                               (2, "conv[0]", 100, 20), (2, "bn[0]", 4, 4), (2, "fc[0]", 50, 0)])
        b = self.csv("b.csv", [(1, "conv[0]", 100, 2), (1, "bn[0]", 4, 4), (1, "fc[0]", 50, 34),
                               (2, "conv[0]", 100, 2), (2, "bn[0]", 4, 4), (2, "fc[0]", 50, 0)])
        result = self.run_tool("--from", "1", "layer=" + a, "global=" + b)
        self.assertEqual(result.returncode, 0, result.stderr)
        lines = result.stdout.splitlines()
        self.assertIn("layer: share of values sent | layer: density", lines[0])
        # a: 30 + 8 + 6 = 44 sent; b: 4 + 8 + 34 = 46.
        self.assertIn("| conv[0] | 100 | 68.2% | 0.1500 | 8.7% | 0.0200 |", lines)
        self.assertIn("| fc[0] | 50 | 13.6% | 0.0600 | 73.9% | 0.3400 |", lines)
        self.assertIn("| sent whole (1 blobs) | 4 | 18.2% | 1.0000 | 17.4% | 1.0000 |", lines)
        self.assertIn("| values sent per step | | 22 |  | 23 |  |", lines)

    def test_warm_up_counts_without_from(self):
        a = self.csv("a.csv", [(0, "conv[0]", 100, 100), (1, "conv[0]", 100, 10)])
        result = self.run_tool(a)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("| conv[0] | 100 | 100.0% | 0.5500 |", result.stdout)

    def test_to_bounds_the_iterations(self):
        a = self.csv("a.csv", [(0, "conv[0]", 100, 100), (1, "conv[0]", 100, 10),
                               (2, "conv[0]", 100, 30)])
        result = self.run_tool("--from", "1", "--to", "1", a)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("| conv[0] | 100 | 100.0% | 0.1000 |", result.stdout)
        self.assertIn("| values sent per step | | 10 |  |", result.stdout)

    def test_errors_name_the_file(self):
        missing = os.path.join(self.tmp.name, "none.csv")
        result = self.run_tool(missing)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("none.csv: no such file", result.stderr)
        bad = os.path.join(self.tmp.name, "bad.csv")
        with open(bad, "w") as f:
            f.write("iteration,loss\n1,2\n")
        result = self.run_tool(bad)
        self.assertIn("bad.csv: not a -sync_stats CSV", result.stderr)
        a = self.csv("a.csv", [(0, "conv[0]", 100, 100)])
        result = self.run_tool("--from", "5", a)
        self.assertIn("a.csv: no iteration in 5.. (the run's last is 0)", result.stderr)


if __name__ == "__main__":
    unittest.main()
