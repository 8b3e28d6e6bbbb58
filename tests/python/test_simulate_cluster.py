"""Tests of tools/simulate_cluster's cost formulas and input parsing.

Run from anywhere:  python3 -m unittest discover -s tests/python -p 'test_simulate_cluster.py'
"""

import importlib.machinery
import importlib.util
import os
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(REPO, "tools", "simulate_cluster")


def load_tool():
    loader = importlib.machinery.SourceFileLoader("simulate_cluster", TOOL)
    spec = importlib.util.spec_from_loader("simulate_cluster", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


sim = load_tool()
ALPHA, BETA = 10e-6, 1e9


class Formulas(unittest.TestCase):
    def test_ring_allreduce(self):
        # 2 (N-1)/N B/beta + 2 (N-1) alpha, by hand for N=4, B=1 MB.
        self.assertAlmostEqual(sim.ring_allreduce(1e6, 4, ALPHA, BETA), 1.5e-3 + 60e-6)
        self.assertEqual(sim.ring_allreduce(1e6, 1, ALPHA, BETA), 0.0)

    def test_allgather(self):
        # (N-1)/N N b/beta + (N-1) alpha for N=8, b=1 MB: 7 ms + 70 us.
        self.assertAlmostEqual(sim.allgather(1e6, 8, ALPHA, BETA), 7e-3 + 70e-6)

    def test_chain_broadcast(self):
        # N=2: one message.
        self.assertAlmostEqual(sim.chain_broadcast(1e6, 2, ALPHA, BETA), ALPHA + 1e-3)
        # Pipelining beats sending the whole message down the chain, and with the best
        # chunk count it matches the continuous optimum (sqrt(B/beta) + sqrt((N-2) alpha))^2.
        whole = (8 - 1) * (ALPHA + 1e-3)
        piped = sim.chain_broadcast(1e6, 8, ALPHA, BETA)
        self.assertLess(piped, whole / 4)
        optimum = (1e-3 ** 0.5 + (6 * ALPHA) ** 0.5) ** 2
        self.assertAlmostEqual(piped / optimum, 1.0, delta=0.01)

    def test_dense_uses_buckets(self):
        elements = 30 * 1024 * 1024  # 120 MiB of gradients: 5 buckets of 25 MiB
        t = sim.step_exchange_seconds("DENSE", 4, ALPHA, BETA, elements)
        volume = 1.5 * 4 * elements / BETA
        buckets = -(-4 * elements // sim.DENSE_BUCKET_BYTES)
        self.assertAlmostEqual(t, volume + buckets * 6 * ALPHA + sim.ring_allreduce(8, 4, ALPHA, BETA))

    def test_allgather_overtakes_dense_near_its_volume_break_even(self):
        # Top-k sends 8 bytes per kept element per rank; dense 2 (N-1)/N x 4 bytes per
        # element: with k = P/64, all-gather volume (N-1) P/8 passes dense's ~8P at N ~ 65.
        profile = sim.Profile()
        profile.elements = 64 * 1000000
        profile.sparse_sent = profile.elements / 64
        profile.sent = profile.sparse_sent
        profiles = {"IWP": profile, "TOPK_ALLGATHER": profile}
        model = {"params": profile.elements}
        n = sim.exchange_crossover(model, 0.0, BETA, profiles)
        self.assertEqual(n, 64)  # (N-1)/8 > 2 (N-1)/N * 4  <=>  N > 64

    def test_powersgd_is_three_allreduces_and_scalecom_is_iwp(self):
        profile = sim.Profile()
        profile.elements = 1000000
        profile.dense_elements = 1000
        profile.sparse_sent = 20000
        profile.sent = profile.sparse_sent + profile.dense_elements
        profile.index_bytes = 5000
        control = sim.ring_allreduce(8, 8, ALPHA, BETA)
        t = sim.step_exchange_seconds("POWERSGD", 8, ALPHA, BETA, profile.elements, profile)
        self.assertAlmostEqual(t, control + sim.ring_allreduce(4000, 8, ALPHA, BETA)
                               + 2 * sim.ring_allreduce(40000, 8, ALPHA, BETA))
        # Bytes per rank flat in N: the time grows only by latency and 2 (N-1)/N.
        t96 = sim.step_exchange_seconds("POWERSGD", 96, 0.0, BETA, profile.elements, profile)
        self.assertLess(t96, 4.0 * (4000 + 2 * 40000 + 8) / BETA)
        self.assertEqual(sim.step_exchange_seconds("SCALECOM", 8, ALPHA, BETA, profile.elements, profile),
                         sim.step_exchange_seconds("IWP", 8, ALPHA, BETA, profile.elements, profile))


class Inputs(unittest.TestCase):
    def test_read_profile_uses_sparse_steps_only(self):
        text = "\n".join([
            "iteration,blob,elements,sent,threshold,vmr,leader,bytes,density",
            "0,w,1000,1000,0,0,-1,0,1",        # warm-up: dense
            "0,b,10,10,0,0,-1,0,1",
            "0,__step__,1010,1010,0,0,-1,4040,1",
            "1,w,1000,16,2.5,3,0,20,0.015625",
            "1,b,10,10,0,0,-1,0,0.015625",
            "1,__step__,1010,26,0,0,-1,160,0.015625",
            "2,w,1000,18,2.5,3,1,22,0.015625",
            "2,b,10,10,0,0,-1,0,0.015625",
            "2,__step__,1010,28,0,0,-1,170,0.015625",
        ]) + "\n"
        with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
            f.write(text)
        try:
            profile = sim.read_profile(f.name)
        finally:
            os.unlink(f.name)
        self.assertEqual(profile.steps, 2)
        self.assertEqual(profile.elements, 1010)
        self.assertEqual(profile.dense_elements, 10)
        self.assertAlmostEqual(profile.sent, 27.0)
        self.assertAlmostEqual(profile.sparse_sent, 17.0)
        self.assertAlmostEqual(profile.index_bytes, 21.0)

    def test_committed_inputs_load(self):
        inputs = os.path.join(REPO, "results", "cluster", "inputs")
        if not os.path.isdir(inputs):
            self.skipTest("no measured inputs")
        data = sim.load_inputs(inputs)
        self.assertEqual(data["alexnet"]["profiles"]["IWP"].elements, 60965224)
        for key in data:
            iwp = data[key]["profiles"]["IWP"]
            self.assertAlmostEqual(iwp.sent / iwp.elements, 1 / 64, delta=0.002)


class EmulatedCalibration(unittest.TestCase):
    """--emulated fits the link model to one cell's rows and predicts the others: on
    steps made by the model itself it recovers the parameters and predicts exactly, and
    the table then reads the fit."""

    def write_rows(self, folder, efficiency, hide, latency):
        os.makedirs(os.path.join(folder, "runs", "net", "ref"))
        with open(os.path.join(folder, "runs", "net", "ref", "ref.json"), "w") as f:
            f.write('{"compute_ms": 20.0}')
        header = ("net,cell,rate,method,seed,target,reached,iterations,seconds,capped,"
                  "final_top1,step_ms,compute_ms,work_ms,wire_ms,hidden_share,bytes_per_step\n")
        lines = [header]
        for cell, rate in (("2x1gbit", "1gbit"), ("2x100mbit", "100mbit"), ("2x20mbit", "20mbit")):
            for method, work, nbytes in (("DENSE fp16", 0.0, 862160.0), ("IWP", 2.0, 23000.0),
                                         ("POWERSGD r2", 0.8, 10800.0)):
                row = {"rate": sim._rate_bits(rate), "family": method.split()[0], "bytes": nbytes,
                       "work": work, "compute": 20.0}
                step = sim.emulated_step_ms(row, efficiency, hide, latency)
                lines.append("net,%s,%s,%s,1,0.9,True,100,1.0,False,0.9,%r,0,%r,0,0,%r\n"
                             % (cell, rate, method, step, work, nbytes))
        lines.append("net,4x100mbit,100mbit,IWP,1,0.9,True,100,1.0,False,0.9,99.0,0,2.0,0,0,23000.0\n")
        lines.append("net,2x100mbit,100mbit,RANDOMK,1,0.9,False,100,1.0,False,0.9,,,,,,\n")
        path = os.path.join(folder, "rows.csv")
        with open(path, "w") as f:
            f.writelines(lines)
        return path

    def test_recovers_the_link_and_predicts_the_other_cells(self):
        with tempfile.TemporaryDirectory() as folder:
            rows = self.write_rows(folder, 0.75, 0.5, 1.0)
            inputs = os.path.join(folder, "inputs")
            os.makedirs(inputs)
            out = os.path.join(folder, "EMULATED.md")
            self.assertEqual(sim.main(["--emulated", "--rows", rows, "--inputs", inputs,
                                       "--out", out]), 0)
            link = sim.load_link(inputs)
            self.assertAlmostEqual(link["efficiency"], 0.75)
            self.assertAlmostEqual(link["hide"], 0.5)
            with open(out) as f:
                report = f.read()
            # 6 predicted rows (two cells of three methods); the 4-rank and the
            # unmeasured rows are left out.
            self.assertIn("Predicted cells: 6 of 6 steps within", report)
            self.assertNotIn("4x100mbit", report)
            self.assertNotIn("RANDOMK", report)

    def test_the_fit_changes_what_the_table_predicts(self):
        link = {"efficiency": 0.5, "hide": 1.0, "source": "test"}
        model = {"params": 1000000}
        profiles = {}
        plain = sim.predict(model, "DENSE", 8, ALPHA, BETA, 0.1, profiles, {})
        slower = sim.predict(model, "DENSE", 8, ALPHA, BETA, 0.0, profiles, {},
                             link=dict(link, hide=0.0))
        self.assertGreater(slower, plain - 0.1)  # half the rate: a longer exchange
        hidden = sim.predict(model, "DENSE", 8, ALPHA, BETA, 0.1, profiles, {}, link=link)
        self.assertAlmostEqual(hidden, 0.1)  # all of it behind a 100 ms step


if __name__ == "__main__":
    unittest.main()
