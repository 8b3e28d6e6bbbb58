"""Tests of scripts/claims.py: each target's rule on rows made up here, and that the
committed results/CLAIMS.md is what the committed rows.csv files give.

Run from anywhere:  python3 -m unittest discover -s tests/python -p 'test_claims.py'
"""

import os
import sys
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "scripts"))

import claims  # noqa: E402


def full_row(model, label, n, top1, wire, seeds="1 2 3", method=None):
    return {"model": model, "label": label, "N": str(n), "top1_mean": str(top1), "top1_std": "0.001",
            "wire": str(wire), "seeds": seeds, "method": method or label.split(",")[0]}


def time_row(cell, method, seconds, reached=True, capped=False, seed=1, step=20.0, work=1.0,
             compute_only=18.0):
    return {"net": "lenet_fashion", "cell": cell, "method": method, "seed": str(seed),
            "seconds": str(seconds), "reached": str(reached), "capped": str(capped),
            "step_ms": str(step), "work_ms": str(work), "compute_only_ms": str(compute_only)}


class CompressionTargets(unittest.TestCase):
    def test_the_main_target_needs_both_the_ratio_and_the_accuracy(self):
        rows = [full_row("lenet_fashion", "DENSE", 4, 0.9100, 2.0),
                full_row("lenet_fashion", "IWP", 4, 0.9075, 67.5)]
        self.assertEqual(claims.main_target(rows, "lenet_fashion", 64), "met: 67.5x, -0.25 pp (3 seeds)")
        self.assertTrue(claims.main_target(rows, "lenet_fashion", 70).startswith("not met"))
        rows[1]["top1_mean"] = "0.9065"  # 0.35 pp under DENSE
        self.assertTrue(claims.main_target(rows, "lenet_fashion", 64).startswith("not met"))
        self.assertEqual(claims.main_target(rows, "resnet20_fashion", 64), "not run")

    def test_the_stretch_target_takes_the_best_row_past_128x(self):
        rows = [full_row("lenet_fashion", "DENSE", 4, 0.9100, 2.0),
                full_row("lenet_fashion", "IWP, density / 2", 4, 0.9040, 134.0),
                full_row("lenet_fashion", "IWP, INT8 values", 4, 0.9070, 139.0),
                full_row("lenet_fashion", "IWP", 4, 0.9090, 67.0)]
        self.assertTrue(claims.stretch_target(rows, "lenet_fashion").startswith(
            "met: IWP, INT8 values, 139.0x, -0.30 pp"))

    def test_traffic_flat_in_n_reads_the_wire_ratio(self):
        rows = [full_row("lenet_fashion", "IWP", n, 0.9, w) for n, w in ((2, 68.0), (4, 67.0), (8, 66.0))]
        self.assertTrue(claims.flat_bytes_target(rows, "lenet_fashion").startswith("met"))
        rows[2]["wire"] = "50.0"
        self.assertTrue(claims.flat_bytes_target(rows, "lenet_fashion").startswith("not met"))


class TimeTargets(unittest.TestCase):
    def test_speedup_is_a_lower_bound_against_a_capped_dense_run(self):
        rows = [time_row("2xref", "DENSE fp16", 480, reached=False, capped=True),
                time_row("2xref", "IWP", 80)]
        self.assertEqual(claims.speedup_target(rows, "lenet_fashion"),
                         "met: IWP ≥ 6.0x (80 s against ≥ 480 s)")
        # With DENSE fp32's iterations to the target (at 1 Gbit/s), the capped run's
        # step gives an estimate: 1000 iterations x 400 ms = 400 s, 5.0x.
        rows[0].update(seconds="200", step_ms="400")
        rows.append(dict(time_row("2x1gbit", "DENSE fp32", 30), iterations="1000"))
        self.assertEqual(claims.speedup_target(rows, "lenet_fashion"),
                         "met by the estimate: IWP ≥ 2.5x (80 s against ≥ 200 s), about 5.0x against an "
                         "estimated 400 s")
        rows[0].update(seconds="300", reached="True", capped="False")
        self.assertEqual(claims.speedup_target(rows, "lenet_fashion"),
                         "not met: IWP 3.8x (80 s against 300 s)")

    def test_step_and_own_work_against_the_compute_only_step(self):
        rows = [time_row("2xref", "IWP", 80, step=19.0, work=0.8, compute_only=18.0)]
        self.assertTrue(claims.step_target(rows, "lenet_fashion").startswith("met: 19.0 ms"))
        self.assertTrue(claims.own_work_target(rows, "lenet_fashion").startswith("met: 0.8 ms"))
        rows = [time_row("2xref", "IWP", 80, step=24.0, work=2.5, compute_only=18.0)]
        self.assertTrue(claims.step_target(rows, "lenet_fashion").startswith("not met"))
        self.assertTrue(claims.own_work_target(rows, "lenet_fashion").startswith("not met"))

    def test_a_method_that_never_arrives_is_slower_at_a_gigabit(self):
        rows = [time_row("2x1gbit", "DENSE fp16", 66), time_row("2x1gbit", "IWP", 60),
                time_row("2x1gbit", "RANDOMK", 66.3, reached=False)]
        self.assertEqual(claims.gigabit_target(rows, "lenet_fashion"),
                         "not met: RANDOMK ∞ (DENSE fp16 66 s)")
        self.assertTrue(claims.gigabit_target(rows[:2], "lenet_fashion").startswith("met"))


class CommittedClaims(unittest.TestCase):
    def test_results_claims_md_is_up_to_date_with_the_rows(self):
        self.assertEqual(claims.main(["--check"]), 0,
                         "results/CLAIMS.md is stale: run scripts/claims.py and commit it")


if __name__ == "__main__":
    unittest.main()
