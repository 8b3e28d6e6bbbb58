"""Tests of scripts/make_solver.py: a solver with top-level fields and sync_param
entries changed, sub-messages (iwp_param { ... }) included.

Run from anywhere:  python3 -m unittest discover -s tests/python -p 'test_make_solver.py'
"""

import os
import sys
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "scripts"))

import make_solver  # noqa: E402

BASE = """net: "models/lenet_fashion/train_val.prototxt"
base_lr: 0.01   # a comment
stepvalue: 100
stepvalue: 200
sync_param {
  method: IWP
  density: 0.02  # with a comment { and a brace
  density_schedule: 0.25
  density_schedule: 0.0625
  iwp_param {
    leader: EVERY_RANK
    stochastic_fraction: 0.1
  }
  value_encoding: FP16
}
"""


def sync_block(text):
    return make_solver.split_block(text.splitlines(), "sync_param")[1]


class EditSyncTest(unittest.TestCase):
    def entries(self, text):
        return make_solver.parse_entries(text)

    def test_parses_sub_messages_and_comments_go(self):
        self.assertEqual(self.entries(sync_block(BASE)), [
            ("method", "IWP"), ("density", "0.02"), ("density_schedule", "0.25"),
            ("density_schedule", "0.0625"),
            ("iwp_param", [("leader", "EVERY_RANK"), ("stochastic_fraction", "0.1")]),
            ("value_encoding", "FP16")])

    def test_top_level_set_replace_and_remove(self):
        out = make_solver.edit_sync(sync_block(BASE), ["method: POWERSGD", "density_schedule:",
                                                       "powersgd_param.rank: 2"])
        self.assertEqual(self.entries(out), [
            ("density", "0.02"),
            ("iwp_param", [("leader", "EVERY_RANK"), ("stochastic_fraction", "0.1")]),
            ("value_encoding", "FP16"), ("method", "POWERSGD"),
            ("powersgd_param", [("rank", "2")])])

    def test_dotted_set_edits_inside_the_sub_message(self):
        out = make_solver.edit_sync(sync_block(BASE), ["iwp_param.leader: PER_STEP",
                                                       "iwp_param.score: MAGNITUDE"])
        self.assertEqual(dict(self.entries(out))["iwp_param"], [
            ("stochastic_fraction", "0.1"), ("leader", "PER_STEP"), ("score", "MAGNITUDE")])

    def test_removing_every_field_of_a_sub_message_removes_it(self):
        out = make_solver.edit_sync(sync_block(BASE), ["iwp_param.leader:",
                                                       "iwp_param.stochastic_fraction:"])
        self.assertNotIn("iwp_param", out)

    def test_quoted_values_keep_their_text(self):
        out = make_solver.edit_sync('a: "x { y: z }" b: 1', ["b: 2"])
        self.assertEqual(out, 'a: "x { y: z }" b: 2')

    def test_whole_solver(self):
        out = make_solver.make_solver(BASE, {"base_lr": ["0.1"]}, None, ["iwp_param.leader: PER_LAYER"])
        self.assertIn("base_lr: 0.1\n", out)
        self.assertIn("stepvalue: 100\nstepvalue: 200\n", out)
        self.assertEqual(out.count("sync_param"), 1)
        self.assertEqual(dict(self.entries(sync_block(out)))["iwp_param"],
                         [("stochastic_fraction", "0.1"), ("leader", "PER_LAYER")])

if __name__ == "__main__":
    unittest.main()
