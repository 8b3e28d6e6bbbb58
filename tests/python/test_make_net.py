"""Tests of scripts/make_net.py: copies of a net prototxt with fields or layers changed.

Run from anywhere:  python3 -m unittest discover -s tests/python -p 'test_make_net.py'
"""

import os
import re
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "scripts"))

import make_net  # noqa: E402

LENET = os.path.join(REPO, "models", "lenet_fashion", "train_val.prototxt")
MAKE_NET = os.path.join(REPO, "scripts", "make_net.py")


def layer_text(text, name):
    span = make_net.named_layer(text, name)
    return None if span is None else text[span[0]:span[1]]


def layer_names(text):
    return [re.search(r'\bname:\s*"([^"]+)"', text[s:e]).group(1)
            for s, e in make_net.layer_spans(text)]


class BatchNormAfterTest(unittest.TestCase):
    def setUp(self):
        with open(LENET) as f:
            self.base = f.read()

    def test_a_batchnorm_and_a_scale_follow_the_layer_in_place(self):
        text = make_net.make_net(self.base, [], [], [], ["conv2"])
        names = layer_names(text)
        at = names.index("conv2")
        self.assertEqual(names[at + 1:at + 3], ["conv2_bn", "conv2_scale"])
        bn, scale = layer_text(text, "conv2_bn"), layer_text(text, "conv2_scale")
        self.assertIn('type: "BatchNorm"', bn)
        self.assertIn('type: "Scale"', scale)
        for added in (bn, scale):
            self.assertIn('bottom: "conv2"', added)
            self.assertIn('top: "conv2"', added)
        self.assertRegex(scale, r"bias_term:\s*true")
        # Every other layer is as it was.
        self.assertEqual(len(names), len(layer_names(self.base)) + 2)
        self.assertEqual(layer_text(text, "conv1"), layer_text(self.base, "conv1"))

    def test_the_layer_loses_its_bias_and_keeps_its_weights(self):
        text = make_net.make_net(self.base, [], [], [], ["conv1", "ip1"])
        for name in ("conv1", "ip1"):
            layer = layer_text(text, name)
            self.assertRegex(layer, r"bias_term:\s*false")
            self.assertNotIn("bias_filler", layer)
            self.assertEqual(re.findall(r"\bparam\s*\{[^{}]*\}", layer), ["param { lr_mult: 1 }"])
            self.assertIn("weight_filler", layer)
        # The classifier keeps its bias: no BatchNorm follows it.
        self.assertNotRegex(layer_text(text, "ip2"), r"bias_term")

    def test_a_layer_that_states_its_bias_term_keeps_one(self):
        text = make_net.make_net(self.base, [], [], [], ["conv1"])
        twice = make_net.make_net(text.replace("bias_term: false", "bias_term: true"), [], [], [],
                                  ["conv1"])
        self.assertEqual(re.findall(r"bias_term:\s*\w+", layer_text(twice, "conv1")),
                         ["bias_term: false"])

    def test_a_missing_or_unsuitable_layer_is_an_error(self):
        with self.assertRaisesRegex(SystemExit, r'no layer "conv9"'):
            make_net.make_net(self.base, [], [], [], ["conv9"])
        with self.assertRaisesRegex(SystemExit, r'layer "pool1" must be a Convolution'):
            make_net.make_net(self.base, [], [], [], ["pool1"])

    def test_the_command_line_writes_the_net(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "bn.prototxt")
            subprocess.run([sys.executable, MAKE_NET, LENET, out, "--batchnorm-after", "conv1",
                            "--batchnorm-after", "conv2"], check=True)
            with open(out) as f:
                names = layer_names(f.read())
            self.assertIn("conv1_bn", names)
            self.assertIn("conv2_scale", names)
            failed = subprocess.run([sys.executable, MAKE_NET, LENET, out, "--batchnorm-after",
                                     "relu1"], capture_output=True, text=True)
            self.assertNotEqual(failed.returncode, 0)
            self.assertIn('layer "relu1" must be a Convolution', failed.stderr)


if __name__ == "__main__":
    unittest.main()
