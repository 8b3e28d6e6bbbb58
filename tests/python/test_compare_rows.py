"""Tests of scripts/compare_rows.py: the paired t-test of two rows of rows.csv.

Run from anywhere:  python3 -m unittest discover -s tests/python -p 'test_compare_rows.py'
"""

import csv
import os
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "scripts"))

import compare_rows  # noqa: E402
from repro_report import ROW_FIELDS  # noqa: E402

COMPARE = os.path.join(REPO, "scripts", "compare_rows.py")


class StudentTTest(unittest.TestCase):
    def test_two_sided_p_matches_tabulated_values(self):
        # Two-sided critical values of Student's t: p = 0.05 at t = 2.571 (5 df),
        # 4.303 (2 df) and 12.706 (1 df); p = 0.01 at t = 3.169 (10 df).
        for t, df, p in ((2.571, 5, 0.05), (4.303, 2, 0.05), (12.706, 1, 0.05),
                         (3.169, 10, 0.01)):
            self.assertAlmostEqual(compare_rows.two_sided_p(t, df), p, delta=p * 0.002)
        self.assertAlmostEqual(compare_rows.two_sided_p(0.0, 4), 1.0, places=12)
        # With 1 df, t is Cauchy: p = 1 - 2 atan(t) / pi exactly.
        self.assertAlmostEqual(compare_rows.two_sided_p(1.0, 1), 0.5, places=12)
        self.assertEqual(compare_rows.two_sided_p(float("inf"), 3), 0.0)

    def test_critical_t_inverts_the_p(self):
        for df, t in ((1, 12.706), (2, 4.303), (5, 2.571), (10, 2.228)):
            self.assertAlmostEqual(compare_rows.critical_t(df), t, delta=0.001)

    def test_what_the_pairs_resolve(self):
        # 3 pairs with sd 0.18 resolve 4.303 * 0.18 / sqrt(3) = 0.447 pp.
        self.assertAlmostEqual(compare_rows.resolvable_difference(0.18, 3), 0.447, delta=0.001)
        # Mean 0.17, sd 0.17: t = sqrt(k); 6 pairs give 2.449 < 2.571, 7 give 2.646 > 2.447.
        self.assertEqual(compare_rows.pairs_needed(0.17, 0.17), 7)
        self.assertEqual(compare_rows.pairs_needed(-0.17, 0.17), 7)
        self.assertIsNone(compare_rows.pairs_needed(0.0, 0.1))
        self.assertIsNone(compare_rows.pairs_needed(0.001, 0.5))

    def test_paired_uses_only_common_seeds_and_signs_other_minus_base(self):
        base = {1: 0.9300, 2: 0.9320, 3: 0.9310, 7: 0.5}
        other = {1: 0.9310, 2: 0.9340, 3: 0.9340, 9: 0.1}
        pairs, mean, sd, t, p = compare_rows.paired(base, other)
        self.assertEqual([seed for seed, _, _ in pairs], [1, 2, 3])
        self.assertAlmostEqual(mean, 0.2, places=9)   # +0.1, +0.2, +0.3 pp
        self.assertAlmostEqual(sd, 0.1, places=9)
        self.assertAlmostEqual(t, 0.2 / (0.1 / 3 ** 0.5), places=6)
        self.assertAlmostEqual(p, compare_rows.two_sided_p(t, 2), places=12)

    def test_one_pair_has_no_spread(self):
        pairs, mean, sd, t, p = compare_rows.paired({1: 0.90}, {1: 0.91})
        self.assertEqual(len(pairs), 1)
        self.assertAlmostEqual(mean, 1.0, places=9)
        self.assertIsNone(sd)
        self.assertIsNone(p)


class CommandLineTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.rows = os.path.join(self.tmp.name, "rows.csv")
        with open(self.rows, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=ROW_FIELDS, lineterminator="\n")
            writer.writeheader()
            for label, seeds, by_seed in (("IWP", "1 2 3", "1:0.93 2:0.932 3:0.931"),
                                          ("IWP, global", "1 2 3", "1:0.931 2:0.934 3:0.934"),
                                          ("OLD", "1 2", "")):
                row = {k: "" for k in ROW_FIELDS}
                row.update(model="net", label=label, method="IWP", N="4", iters="100",
                           seeds=seeds, top1_mean="0.93", top1_std="0.001", steady="True",
                           top1_by_seed=by_seed)
                writer.writerow(row)

    def tearDown(self):
        self.tmp.cleanup()

    def run_tool(self, *args):
        return subprocess.run([sys.executable, COMPARE, "--rows", self.rows, "--model", "net"]
                              + list(args), capture_output=True, text=True)

    def test_prints_pairs_and_the_test(self):
        result = self.run_tool("--base", "IWP", "--other", "IWP, global")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("seed 2: 93.20 -> 93.40 (+0.20 pp)", result.stdout)
        self.assertIn("mean difference +0.20 pp, sd 0.10, t = 3.46 over 3 pairs", result.stdout)
        # 4.303 * 0.1 / sqrt(3) = 0.248; at mean 0.2 and sd 0.1, 4 pairs reach 3.182 * 0.05.
        self.assertIn("these 3 pairs tell apart a mean difference of 0.25 pp or more; "
                      "this one would need about 4 pairs at its mean and sd", result.stdout)

    def test_unknown_label_names_the_rows_there(self):
        result = self.run_tool("--base", "IWP", "--other", "RANDOMK")
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("no row 'RANDOMK' for model net at N=4", result.stderr)
        self.assertIn("IWP; IWP, global", result.stderr)

    def test_row_without_per_seed_values_is_an_error(self):
        result = self.run_tool("--base", "IWP", "--other", "OLD")
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("keeps no per-seed top-1", result.stderr)


if __name__ == "__main__":
    unittest.main()
