"""The Python layer type: a layer written as a Python class, with its own learnable
blob, inside a net from pycaffe (finite-difference gradient check) and inside
`caffe train` (embedded interpreter), and its errors."""
import os
import subprocess

import numpy as np
import pytest

import caffe
from conftest import CAFFE_TOOL, python_env, write

LAYER_MODULE = '''
import numpy as np
import caffe


class ScaledSquare(caffe.Layer):
    """top = w * bottom^2 * k, with w a learnable scalar and k from param_str."""

    def setup(self, bottom, top):
        self.k = float(self.param_str or 1)
        if len(self.blobs) == 0:
            self.blobs.add_blob(1)
            self.blobs[0].data[...] = 0.5
        print("ScaledSquare set up, phase", self.phase, flush=True)

    def reshape(self, bottom, top):
        top[0].reshape(*bottom[0].data.shape)

    def forward(self, bottom, top):
        top[0].data[...] = self.blobs[0].data[0] * self.k * bottom[0].data ** 2

    def backward(self, top, propagate_down, bottom):
        x, g = bottom[0].data, top[0].diff
        self.blobs[0].diff[0] += np.sum(self.k * x ** 2 * g)
        if propagate_down[0]:
            bottom[0].diff[...] = self.blobs[0].data[0] * self.k * 2 * x * g


class FailsInForward(caffe.Layer):
    def reshape(self, bottom, top):
        top[0].reshape(*bottom[0].data.shape)

    def forward(self, bottom, top):
        raise ValueError("forward refuses")
'''

NET = """
force_backward: true
layer { name: "data" type: "Input" top: "data" top: "target"
        input_param { shape { dim: 2 dim: 3 } } }
layer { name: "square" type: "Python" bottom: "data" top: "square"
        python_param { module: "my_layers" layer: "ScaledSquare" param_str: "1.5" } }
layer { name: "loss" type: "EuclideanLoss" bottom: "square" bottom: "target" top: "loss" }
"""


@pytest.fixture
def layer_dir(tmp_path, monkeypatch):
    write(tmp_path, "my_layers.py", LAYER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def loss_of(net):
    return float(net.forward()["loss"])


def test_python_layer_in_a_net_passes_a_gradient_check(layer_dir):
    net = caffe.Net(write(layer_dir, "net.prototxt", NET), caffe.TRAIN)
    assert net.layers[1].type == "Python"
    assert list(net.params) == ["square"]  # the Python layer's own blob is a parameter
    rng = np.random.RandomState(0)
    net.blobs["data"].data[...] = rng.randn(2, 3)
    net.blobs["target"].data[...] = rng.randn(2, 3)
    x = net.blobs["data"].data.copy()
    np.testing.assert_allclose(net.forward(blobs=["square"])["square"], 0.5 * 1.5 * x ** 2,
                               rtol=1e-6)
    net.params["square"][0].diff[...] = 0
    net.backward()
    analytic_x = net.blobs["data"].diff.copy()
    analytic_w = net.params["square"][0].diff[0]
    step = 1e-2
    data = net.blobs["data"].data
    for i in np.ndindex(data.shape):
        data[i] += step
        up = loss_of(net)
        data[i] -= 2 * step
        down = loss_of(net)
        data[i] += step
        assert analytic_x[i] == pytest.approx((up - down) / (2 * step), rel=2e-2, abs=1e-3)
    w = net.params["square"][0].data
    w[0] += step
    up = loss_of(net)
    w[0] -= 2 * step
    down = loss_of(net)
    w[0] += step
    assert analytic_w == pytest.approx((up - down) / (2 * step), rel=2e-2, abs=1e-3)


def test_python_layer_under_caffe_train(tmp_path, layer_dir):
    net = write(tmp_path, "train.prototxt", """
        layer { name: "data" type: "DummyData" top: "data" top: "target"
                dummy_data_param { shape { dim: 4 dim: 3 } data_filler { type: "gaussian" } } }
        layer { name: "square" type: "Python" bottom: "data" top: "square"
                python_param { module: "my_layers" layer: "ScaledSquare" param_str: "2" } }
        layer { name: "loss" type: "EuclideanLoss" bottom: "square" bottom: "target" top: "loss" }""")
    solver = write(tmp_path, "solver.prototxt", f"""
        net: "{net}" base_lr: 0.01 lr_policy: "fixed" max_iter: 5 display: 1
        snapshot_prefix: "{tmp_path}/py" random_seed: 1""")
    run = subprocess.run([CAFFE_TOOL, "train", "-solver", solver], env=python_env(str(layer_dir)),
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "ScaledSquare set up, phase 0" in run.stdout
    # The layer's blob was trained and saved like any other layer's.
    trained = caffe.Net(net, str(tmp_path / "py_iter_5.caffemodel"), caffe.TEST)
    assert trained.params["square"][0].data[0] != 0.5


def test_python_errors_name_the_layer(tmp_path, layer_dir):
    failing = write(tmp_path, "fails.prototxt", NET.replace("ScaledSquare", "FailsInForward"))
    net = caffe.Net(failing, caffe.TEST)
    with pytest.raises(caffe.CaffeError, match=r"layer 'square'.*ValueError: forward refuses"):
        net.forward()
    with pytest.raises(caffe.CaffeError, match=r"cannot import module 'no_such_module'.*PYTHONPATH"):
        caffe.Net(write(tmp_path, "nomod.prototxt", NET.replace("my_layers", "no_such_module")),
                  caffe.TEST)
    with pytest.raises(caffe.CaffeError, match=r"module 'my_layers' has no class 'Nope'"):
        caffe.Net(write(tmp_path, "nocls.prototxt", NET.replace("ScaledSquare", "Nope")),
                  caffe.TEST)
    # The tool: one error line naming the layer and the Python exception, status 1.
    solver = write(tmp_path, "solver.prototxt", f"""
        net: "{failing}" base_lr: 0.01 lr_policy: "fixed" max_iter: 2 snapshot_prefix: "{tmp_path}/f" """)
    run = subprocess.run([CAFFE_TOOL, "train", "-solver", solver], env=python_env(str(layer_dir)),
                         capture_output=True, text=True)
    assert run.returncode == 1
    errors = [line for line in run.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "square" in errors[0] and "forward refuses" in errors[0], run.stderr
