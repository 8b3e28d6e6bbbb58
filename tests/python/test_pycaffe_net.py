"""caffe.Net and caffe.Blob as BVLC pycaffe users use them: construction forms, the
blob and parameter dictionaries, numpy views that share memory, forward/backward by
layer name, whole-data-set passes, MemoryData, saving and loading weights."""
import os

import numpy as np
import pytest

import caffe
from caffe.proto import caffe_pb2
from conftest import write

NET = """
name: "tiny"
layer { name: "data" type: "Input" top: "data" top: "label"
        input_param { shape { dim: 2 dim: 1 dim: 5 dim: 5 } shape { dim: 2 } } }
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
        convolution_param { num_output: 2 kernel_size: 3
          weight_filler { type: "gaussian" std: 0.5 } bias_filler { type: "constant" value: 0.1 } } }
layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" }
layer { name: "ip" type: "InnerProduct" bottom: "conv" top: "ip"
        inner_product_param { num_output: 3 weight_filler { type: "xavier" }
          bias_filler { type: "constant" value: -0.2 } } }
layer { name: "extra" type: "Power" bottom: "ip" top: "extra" include { stage: "extra" } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
"""


@pytest.fixture
def model(tmp_path):
    return write(tmp_path, "tiny.prototxt", NET)


@pytest.fixture
def net(model):
    caffe.set_mode_cpu()
    caffe.set_random_seed(5)
    n = caffe.Net(model, caffe.TEST)
    rng = np.random.RandomState(0)
    n.blobs["data"].data[...] = rng.randn(2, 1, 5, 5)
    n.blobs["label"].data[...] = [2, 0]
    return n


def numpy_forward(net):
    """The tiny net computed in numpy from its own weights and inputs."""
    x = net.blobs["data"].data
    w, b = net.params["conv"][0].data, net.params["conv"][1].data
    conv = np.zeros((2, 2, 3, 3), np.float64)
    for i in range(3):
        for j in range(3):
            patch = x[:, :, i:i + 3, j:j + 3]
            conv[:, :, i, j] = np.tensordot(patch, w, axes=([1, 2, 3], [1, 2, 3])) + b
    conv = np.maximum(conv, 0)
    ip = conv.reshape(2, -1) @ net.params["ip"][0].data.T + net.params["ip"][1].data
    prob = np.exp(ip - ip.max(1, keepdims=True))
    prob /= prob.sum(1, keepdims=True)
    labels = net.blobs["label"].data.astype(int)
    loss = -np.mean(np.log(prob[np.arange(2), labels]))
    return conv, ip, prob, loss


def test_names_and_dictionaries(net):
    assert list(net.blobs) == ["data", "label", "conv", "ip", "loss"]
    assert list(net.params) == ["conv", "ip"]
    assert [b.shape for b in net.params["conv"]] == [(2, 1, 3, 3), (2,)]
    assert net._layer_names == ["data", "conv", "relu", "ip", "loss"]
    assert [l.type for l in net.layers] == ["Input", "Convolution", "ReLU", "InnerProduct",
                                           "SoftmaxWithLoss"]
    assert list(net.layer_dict) == net._layer_names
    assert len(net.layer_dict["ip"].blobs) == 2
    assert net.inputs == ["data", "label"]  # an Input layer's tops are the net's inputs
    assert net.outputs == ["loss"]
    assert net.top_names["relu"] == ["conv"] and net.bottom_names["loss"] == ["ip", "label"]
    assert net._blob_names == list(net.blobs)
    blob = net.blobs["data"]
    assert (blob.num, blob.channels, blob.height, blob.width, blob.count) == (2, 1, 5, 5, 50)
    net.class_names = ["a", "b", "c"]  # scripts keep their own things on a net
    assert net.class_names == ["a", "b", "c"]


def test_construction_forms(model, tmp_path):
    caffe.set_random_seed(1)
    first = caffe.Net(model, caffe.TEST)
    weights = str(tmp_path / "tiny.caffemodel")
    first.save(weights)
    for made in (caffe.Net(model, weights, caffe.TEST),
                 caffe.Net(model, caffe.TEST, weights=weights),
                 caffe.Net(model, weights=weights, phase=caffe.TEST),
                 caffe.Net(network_file=model, phase=caffe.TRAIN, weights=weights)):
        for name in first.params:
            for mine, theirs in zip(made.params[name], first.params[name]):
                np.testing.assert_array_equal(mine.data, theirs.data)
    assert caffe.Net(model, caffe.TRAIN).phase == caffe.TRAIN
    staged = caffe.Net(model, caffe.TEST, stages=["extra"])
    assert "extra" in staged._layer_names and "extra" not in first._layer_names
    assert caffe.Net(model, caffe.TEST, level=0, stages=[])._layer_names == first._layer_names


def test_views_share_memory_both_ways(net):
    data = net.blobs["data"].data
    data[0, 0, 0, 0] = 42.0                       # numpy -> blob
    assert net.blobs["data"].data[0, 0, 0, 0] == 42.0
    ip_view = net.blobs["ip"].data                # a view taken before forward ...
    out = net.forward()
    np.testing.assert_array_equal(ip_view, net.blobs["ip"].data)  # ... sees C++'s writes
    assert ip_view.dtype == np.float32 and not ip_view.flags["OWNDATA"]
    net.params["ip"][1].data[...] = 7.0           # parameters too
    assert np.all(net.layer_dict["ip"].blobs[1].data == 7.0)
    diff = net.blobs["ip"].diff
    diff[...] = 3.0
    assert np.all(net.blobs["ip"].diff == 3.0)
    assert set(out) == {"loss"}


def test_forward_and_backward_match_numpy(net):
    conv, ip, prob, loss = numpy_forward(net)
    out = net.forward()
    np.testing.assert_allclose(out["loss"], loss, rtol=1e-5)
    np.testing.assert_allclose(net.blobs["conv"].data, conv, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(net.blobs["ip"].data, ip, rtol=1e-5, atol=1e-6)
    net.backward()
    # d loss / d ip = (softmax - onehot) / N; the ip weight gradient is its outer product
    # with the ReLU output.
    labels = net.blobs["label"].data.astype(int)
    dip = prob.copy()
    dip[np.arange(2), labels] -= 1
    dip /= 2
    np.testing.assert_allclose(net.blobs["ip"].diff, dip, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(net.params["ip"][0].diff, dip.T @ conv.reshape(2, -1),
                               rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(net.params["ip"][1].diff, dip.sum(0), rtol=1e-5, atol=1e-7)


def test_clear_param_diffs(net):
    net.forward()
    net.backward()
    assert np.any(net.params["ip"][0].diff != 0)
    activation_diff = net.blobs["ip"].diff.copy()
    net.clear_param_diffs()
    for name, blobs in net.params.items():
        for blob in blobs:
            assert np.all(blob.diff == 0), name
    # Only the parameters' diffs: the activations' stay.
    np.testing.assert_array_equal(net.blobs["ip"].diff, activation_diff)
    for blobs in net.params.values():
        for blob in blobs:
            blob.diff[...] = 1.5
    net.clear_param_diffs()
    assert all(np.all(b.diff == 0) for blobs in net.params.values() for b in blobs)


def test_forward_start_end(net):
    net.forward()
    ip_before = net.blobs["ip"].data.copy()
    out = net.forward(end="conv")
    assert set(out) == {"conv"}
    np.testing.assert_array_equal(net.blobs["ip"].data, ip_before)
    # From ip on, with conv's values changed by hand: only the later layers rerun.
    net.blobs["conv"].data[...] = 1.0
    out = net.forward(start="ip", end="ip", blobs=["conv"])
    expected = np.ones((2, 18)) @ net.params["ip"][0].data.T + net.params["ip"][1].data
    np.testing.assert_allclose(out["ip"], expected, rtol=1e-5)
    np.testing.assert_array_equal(out["conv"], 1.0)
    with pytest.raises(KeyError, match="no layer 'nope'"):
        net.forward(start="nope")
    with pytest.raises(ValueError, match="comes after"):
        net.forward(start="ip", end="conv")


def test_backward_start_end(net):
    net.forward()
    net.blobs["ip"].diff[...] = 0
    net.params["conv"][0].diff[...] = 0
    # Backward of ip alone, from a hand-set top diff: conv's diff is ip's weights
    # applied to it, and conv's own parameters are left alone.
    net.blobs["ip"].diff[...] = np.arange(6, dtype=np.float32).reshape(2, 3)
    grads = net.backward(start="ip", end="ip")
    assert set(grads) == {"conv"}
    expected = net.blobs["ip"].diff @ net.params["ip"][0].data
    np.testing.assert_allclose(grads["conv"].reshape(2, -1), expected, rtol=1e-5)
    assert np.all(net.params["conv"][0].diff == 0)


def test_inputs_by_keyword_and_forward_all(tmp_path):
    model = write(tmp_path, "deploy.prototxt", """
        force_backward: true
        input: "data" input_shape { dim: 3 dim: 4 }
        layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
                inner_product_param { num_output: 2 weight_filler { type: "gaussian" std: 1 } } }
        layer { name: "prob" type: "Softmax" bottom: "ip" top: "prob" }""")
    net = caffe.Net(model, caffe.TEST)
    assert net.inputs == ["data"] and net.outputs == ["prob"]
    x = np.random.RandomState(1).randn(7, 4).astype(np.float32)
    logits = x @ net.params["ip"][0].data.T + net.params["ip"][1].data
    expected = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    out = net.forward(data=x[:3])
    np.testing.assert_allclose(out["prob"], expected[:3], rtol=1e-5)
    # 7 rows through a batch of 3: three passes, the last padded, 7 rows back.
    everything = net.forward_all(data=x, blobs=["ip"])
    assert everything["prob"].shape == (7, 2) and everything["ip"].shape == (7, 2)
    np.testing.assert_allclose(everything["prob"], expected, rtol=1e-5)
    top_diff = np.random.RandomState(2).randn(7, 2).astype(np.float32)
    outs, diffs = net.forward_backward_all(data=x, prob=top_diff)
    assert outs["prob"].shape == (7, 2) and diffs["data"].shape == (7, 4)
    # Softmax backward, then the InnerProduct's: d data = (p * (g - <g, p>)) W.
    dlogits = expected * (top_diff - (top_diff * expected).sum(1, keepdims=True))
    np.testing.assert_allclose(diffs["data"], dlogits @ net.params["ip"][0].data,
                               rtol=1e-4, atol=1e-6)
    with pytest.raises(ValueError, match=r"shape \(3, 4\)"):
        net.forward(data=np.zeros((3, 5)))
    with pytest.raises(KeyError, match="not inputs"):
        net.forward(label=np.zeros(3))


def test_reshape(net):
    net.blobs["data"].reshape(4, 1, 5, 5)
    net.blobs["label"].reshape(4)
    net.blobs["label"].data[...] = 0
    net.reshape()
    net.forward()
    assert net.blobs["ip"].data.shape == (4, 3)


def test_save_copy_from_share_with(model, tmp_path, net):
    path = str(tmp_path / "w.caffemodel")
    net.save(path)
    other = caffe.Net(model, caffe.TEST)
    other.copy_from(path)
    for name in net.params:
        for mine, theirs in zip(other.params[name], net.params[name]):
            np.testing.assert_array_equal(mine.data, theirs.data)
    saved = caffe_pb2.NetParameter()
    with open(path, "rb") as f:
        saved.ParseFromString(f.read())
    conv = [l for l in saved.layer if l.name == "conv"][0]
    np.testing.assert_array_equal(caffe.io.blobproto_to_array(conv.blobs[0]),
                                  net.params["conv"][0].data)
    sharer = caffe.Net(model, caffe.TEST)
    sharer.share_with(net)
    net.params["ip"][0].data[...] = 0.5
    assert np.all(sharer.params["ip"][0].data == 0.5)
    with pytest.raises(caffe.CaffeError, match="missing.caffemodel"):
        other.copy_from(str(tmp_path / "missing.caffemodel"))


def test_memory_data_from_numpy(tmp_path):
    model = write(tmp_path, "memory.prototxt", """
        layer { name: "data" type: "MemoryData" top: "data" top: "label"
                memory_data_param { batch_size: 2 channels: 1 height: 2 width: 2 } }
        layer { name: "flat" type: "Flatten" bottom: "data" top: "flat" }""")
    net = caffe.Net(model, caffe.TEST)
    data = np.arange(6 * 4, dtype=np.float64).reshape(6, 1, 2, 2)  # converted to float32
    labels = np.arange(6) + 10
    net.set_input_arrays(data, labels)
    for batch in (0, 1, 2, 0):
        net.forward()
        np.testing.assert_array_equal(net.blobs["data"].data, data[2 * batch:2 * batch + 2])
        np.testing.assert_array_equal(net.blobs["label"].data, labels[2 * batch:2 * batch + 2])
    with pytest.raises(caffe.CaffeError, match=r"expects data of shape \(N, 1, 2, 2\)"):
        net.set_input_arrays(np.zeros((2, 1, 3, 2)), np.zeros(2))
    with pytest.raises(caffe.CaffeError, match="multiple of the batch size 2"):
        net.set_input_arrays(np.zeros((3, 1, 2, 2)), np.zeros(3))
    plain = caffe.Net(write(tmp_path, "plain.prototxt", NET), caffe.TEST)
    with pytest.raises(caffe.CaffeError, match="first layer to be MemoryData"):
        plain.set_input_arrays(np.zeros((2, 1, 2, 2)), np.zeros(2))


def test_blob_standalone():
    blob = caffe.Blob(2, 3)
    assert blob.shape == (2, 3) and blob.count == 6
    blob.data[...] = 1.5
    blob.reshape(6)
    assert blob.shape == (6,) and np.all(blob.data == 1.5)


# The layer types BVLC Caffe's registry holds (its layers/ folder, built with the Python
# layer): a net written for BVLC Caffe names only these.
BVLC_LAYER_TYPES = """
AbsVal Accuracy ArgMax BNLL BatchNorm BatchReindex Bias Clip Concat ContrastiveLoss
Convolution Crop Data Deconvolution Dropout DummyData ELU Eltwise Embed EuclideanLoss Exp
Filter Flatten HDF5Data HDF5Output HingeLoss Im2col ImageData InfogainLoss InnerProduct
Input LRN LSTM LSTMUnit Log MVN MemoryData MultinomialLogisticLoss PReLU Parameter Pooling
Power Python RNN ReLU Reduction Reshape SPP Scale Sigmoid SigmoidCrossEntropyLoss Silence
Slice Softmax SoftmaxWithLoss Split Swish TanH Threshold Tile WindowData
""".split()


def test_every_bvlc_layer_type_is_registered():
    missing = sorted(set(BVLC_LAYER_TYPES) - set(caffe.layer_type_list()))
    assert missing == []


def test_module_functions_and_errors(tmp_path, model):
    types = caffe.layer_type_list()
    for expected in ("Convolution", "Python", "MemoryData", "Input"):
        assert expected in types
    assert caffe.solver_count() == 1 and caffe.solver_rank() == 0
    assert (caffe.TRAIN, caffe.TEST) == (caffe_pb2.TRAIN, caffe_pb2.TEST)
    caffe.set_mode_cpu()
    bad = write(tmp_path, "bad.prototxt", 'layer { name: "x" type: "Nope" top: "x" }')
    with pytest.raises(caffe.CaffeError, match="bad.prototxt.*Nope"):
        caffe.Net(bad, caffe.TEST)
    with pytest.raises(caffe.CaffeError, match="expected caffe.TRAIN"):
        caffe.Net(model, 3)
    with pytest.raises(caffe.CaffeError):
        caffe.Net(str(tmp_path / "absent.prototxt"), caffe.TEST)
    assert issubclass(caffe.CaffeError, RuntimeError)


def test_gpu_mode_reports_a_missing_gpu():
    try:
        caffe.set_mode_gpu()
    except caffe.CaffeError as e:
        assert "no GPU" in str(e)
    else:
        # Only a machine with a GPU may accept GPU mode: its driver's device node
        # exists. Then leave the mode as the other tests expect.
        assert os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/nvidia0"), \
            "set_mode_gpu() succeeded on a machine without a GPU"
        caffe.set_device(0)
    finally:
        caffe.set_mode_cpu()


def test_set_random_seed_repeats_weight_fillers(model):
    caffe.set_random_seed(11)
    first = caffe.Net(model, caffe.TEST).params["conv"][0].data.copy()
    caffe.set_random_seed(11)
    again = caffe.Net(model, caffe.TEST).params["conv"][0].data.copy()
    caffe.set_random_seed(12)
    other = caffe.Net(model, caffe.TEST).params["conv"][0].data.copy()
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)
