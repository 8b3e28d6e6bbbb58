"""caffe.net_spec: nets written in Python give the NetParameter Caffe reads.

    PYTHONPATH=python python3 -m pytest tests/python/test_pycaffe_net_spec.py

The tests that build a caffe.Net or run `caffe time` need the build (CAFFE_BUILD,
default <repo>/build).
"""
import math
import os
import subprocess

import pytest
from google.protobuf import text_format

import caffe
from caffe import layers as L, params as P
from caffe.net_spec import param_name_dict
from caffe.proto import caffe_pb2
from conftest import CAFFE_TOOL, REPO, write

LENET = os.path.join(REPO, "models", "lenet_fashion", "train_val.prototxt")


def data_layer(layer_type, **params):
    """One data layer with tops 'data' and 'label'. Layers of different phases share
    those top names, which one NetSpec cannot hold, so each is written on its own."""
    n = caffe.NetSpec()
    n.data, n.label = getattr(L, layer_type)(ntop=2, **params)
    return n.to_proto().layer[0]


def learning_params(**layer_params):
    return dict(param=[dict(lr_mult=1), dict(lr_mult=2)], weight_filler=dict(type="xavier"),
                bias_filler=dict(type="constant"), **layer_params)


def lenet():
    """models/lenet_fashion/train_val.prototxt, written with net_spec."""
    n = caffe.NetSpec()
    n.data, n.label = L.Data(source="data/fashion_mnist/train_lmdb", batch_size=64,
                             backend=P.Data.LMDB, transform_param=dict(scale=1. / 256),
                             include=dict(phase=caffe.TRAIN, not_stage="synthetic"), ntop=2)
    n.conv1 = L.Convolution(n.data, **learning_params(num_output=20, kernel_size=5, stride=1))
    n.pool1 = L.Pooling(n.conv1, pool=P.Pooling.MAX, kernel_size=2, stride=2)
    n.conv2 = L.Convolution(n.pool1, **learning_params(num_output=50, kernel_size=5, stride=1))
    n.pool2 = L.Pooling(n.conv2, pool=P.Pooling.MAX, kernel_size=2, stride=2)
    n.ip1 = L.InnerProduct(n.pool2, **learning_params(num_output=500))
    n.relu1 = L.ReLU(n.ip1, in_place=True)
    n.ip2 = L.InnerProduct(n.relu1, **learning_params(num_output=10))
    n.accuracy = L.Accuracy(n.ip2, n.label, include=dict(phase=caffe.TEST))
    n.loss = L.SoftmaxWithLoss(n.ip2, n.label)
    body = n.to_proto()

    test_data = data_layer(
        "Data", source="data/fashion_mnist/test_lmdb", batch_size=100, backend=P.Data.LMDB,
        transform_param=dict(scale=1. / 256),
        include=dict(phase=caffe.TEST, not_stage="synthetic"))
    synthetic_data = data_layer(
        "DummyData", shape=[dict(dim=[64, 1, 28, 28]), dict(dim=[64])],
        data_filler=[dict(type="uniform", min=0, max=1),
                     dict(type="uniform", min=0, max=9.999)],
        include=dict(stage="synthetic"))
    net = caffe_pb2.NetParameter(name="LeNetFashion")
    net.layer.extend([body.layer[0], test_data, synthetic_data] + list(body.layer[1:]))
    return net


def read_prototxt(path):
    net = caffe_pb2.NetParameter()
    with open(path) as f:
        text_format.Merge(f.read(), net)
    return net


def test_lenet_layers_tops_and_bottoms():
    net = lenet()
    assert [(l.name, l.type, list(l.bottom), list(l.top)) for l in net.layer] == [
        ("data", "Data", [], ["data", "label"]),
        ("data", "Data", [], ["data", "label"]),
        ("data", "DummyData", [], ["data", "label"]),
        ("conv1", "Convolution", ["data"], ["conv1"]),
        ("pool1", "Pooling", ["conv1"], ["pool1"]),
        ("conv2", "Convolution", ["pool1"], ["conv2"]),
        ("pool2", "Pooling", ["conv2"], ["pool2"]),
        ("ip1", "InnerProduct", ["pool2"], ["ip1"]),
        ("relu1", "ReLU", ["ip1"], ["ip1"]),
        ("ip2", "InnerProduct", ["ip1"], ["ip2"]),
        ("accuracy", "Accuracy", ["ip2", "label"], ["accuracy"]),
        ("loss", "SoftmaxWithLoss", ["ip2", "label"], ["loss"]),
    ]


def test_lenet_parameters():
    net = lenet()
    layers = {(l.name, l.type): l for l in net.layer}
    train, test = net.layer[0], net.layer[1]
    assert [(r.phase, list(r.not_stage)) for r in train.include] == [(caffe.TRAIN, ["synthetic"])]
    assert [(r.phase, list(r.not_stage)) for r in test.include] == [(caffe.TEST, ["synthetic"])]
    assert (train.data_param.batch_size, test.data_param.batch_size) == (64, 100)
    assert train.data_param.backend == caffe_pb2.DataParameter.LMDB
    assert train.data_param.source == "data/fashion_mnist/train_lmdb"
    assert train.transform_param.scale == pytest.approx(1 / 256)
    synthetic = layers["data", "DummyData"].dummy_data_param
    assert [list(shape.dim) for shape in synthetic.shape] == [[64, 1, 28, 28], [64]]
    assert [f.max for f in synthetic.data_filler] == pytest.approx([1, 9.999])

    conv2 = layers["conv2", "Convolution"]
    assert [p.lr_mult for p in conv2.param] == [1, 2]
    assert conv2.convolution_param.num_output == 50
    assert list(conv2.convolution_param.kernel_size) == [5]
    assert list(conv2.convolution_param.stride) == [1]
    assert conv2.convolution_param.weight_filler.type == "xavier"
    assert conv2.convolution_param.bias_filler.type == "constant"
    pool1 = layers["pool1", "Pooling"].pooling_param
    assert (pool1.pool, pool1.kernel_size, pool1.stride) == (caffe_pb2.PoolingParameter.MAX, 2, 2)
    assert layers["ip1", "InnerProduct"].inner_product_param.num_output == 500
    assert [r.phase for r in layers["accuracy", "Accuracy"].include] == [caffe.TEST]
    # Only the messages that were given are present.
    assert not layers["relu1", "ReLU"].HasField("relu_param")
    assert not layers["loss", "SoftmaxWithLoss"].HasField("loss_param")


def test_lenet_is_the_shipped_prototxt():
    # models/lenet_fashion/train_val.prototxt is lenet() above; if the model changes,
    # change lenet() with it.
    assert lenet() == read_prototxt(LENET)


def test_text_round_trips():
    net = lenet()
    parsed = caffe_pb2.NetParameter()
    text_format.Merge(str(net), parsed)
    assert parsed == net
    assert str(parsed) == str(net)


def small_net():
    """Input + Convolution + Pooling + InnerProduct + in-place ReLU + SoftmaxWithLoss:
    needs no data set."""
    n = caffe.NetSpec()
    n.data, n.label = L.Input(shape=[dict(dim=[2, 1, 28, 28]), dict(dim=[2])], ntop=2)
    n.conv = L.Convolution(n.data, num_output=4, kernel_size=5,
                           weight_filler=dict(type="xavier"), bias_filler=dict(type="constant"))
    n.pool = L.Pooling(n.conv, pool=P.Pooling.MAX, kernel_size=2, stride=2)
    n.ip = L.InnerProduct(n.pool, num_output=10, weight_filler=dict(type="xavier"))
    n.relu = L.ReLU(n.ip, in_place=True)
    n.loss = L.SoftmaxWithLoss(n.relu, n.label)
    return n.to_proto()


@pytest.fixture
def small_net_file(tmp_path):
    return write(tmp_path, "small_net.prototxt", str(small_net()))


def test_caffe_net_reads_the_written_net(small_net_file):
    net = caffe.Net(small_net_file, caffe.TEST)
    assert list(net._layer_names) == ["data", "conv", "pool", "ip", "relu", "loss"]
    assert [layer.type for layer in net.layers] == [
        "Input", "Convolution", "Pooling", "InnerProduct", "ReLU", "SoftmaxWithLoss"]
    assert [(name, blob.data.shape) for name, blob in net.blobs.items()] == [
        ("data", (2, 1, 28, 28)), ("label", (2,)), ("conv", (2, 4, 24, 24)),
        ("pool", (2, 4, 12, 12)), ("ip", (2, 10)), ("loss", ())]
    # Zero images give the InnerProduct zero outputs (biases start at 0): a uniform
    # softmax, whose loss is log(10) whatever the labels.
    net.blobs["data"].data[...] = 0
    net.blobs["label"].data[...] = [3, 7]
    assert float(net.forward()["loss"]) == pytest.approx(math.log(10), rel=1e-5)


def test_caffe_time_runs_the_written_net(small_net_file):
    assert os.access(CAFFE_TOOL, os.X_OK), "%s is not built (set CAFFE_BUILD)" % CAFFE_TOOL
    result = subprocess.run([CAFFE_TOOL, "time", "-model", small_net_file, "-iterations", "1"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]


def test_unnamed_tops_are_named_after_their_layer_type():
    data = L.DummyData(shape=dict(dim=[1, 3]))
    loss = L.EuclideanLoss(L.InnerProduct(data, num_output=3),
                           L.InnerProduct(data, num_output=3))
    net = loss.to_proto()
    assert [(l.name, list(l.bottom), list(l.top)) for l in net.layer] == [
        ("DummyData1", [], ["DummyData1"]),
        ("InnerProduct1", ["DummyData1"], ["InnerProduct1"]),
        ("InnerProduct2", ["DummyData1"], ["InnerProduct2"]),
        ("EuclideanLoss1", ["InnerProduct1", "InnerProduct2"], ["EuclideanLoss1"]),
    ]


def test_netspec_names_win_and_layers_come_in_dependency_order():
    conv = L.Convolution(L.Input(shape=dict(dim=[1, 1, 4, 4])), num_output=1, kernel_size=1)
    n = caffe.NetSpec()
    n.loss = L.Reduction(L.ReLU(conv, in_place=True))
    n.conv = conv  # named after use: the name still applies
    net = n.to_proto()
    assert [(l.name, l.type, list(l.bottom), list(l.top)) for l in net.layer] == [
        ("Input1", "Input", [], ["Input1"]),
        ("conv", "Convolution", ["Input1"], ["conv"]),
        ("ReLU1", "ReLU", ["conv"], ["conv"]),
        ("loss", "Reduction", ["conv"], ["loss"]),
    ]
    assert n.keys() == ["loss", "conv"] and n["conv"] is n.conv is conv


def test_shared_layers_are_written_once():
    data = L.DummyData(shape=dict(dim=[2]))
    net = caffe.to_proto(L.Power(data), L.Exp(data), data)
    assert [l.type for l in net.layer] == ["DummyData", "Power", "Exp"]


def test_two_tops():
    n = caffe.NetSpec()
    tops = L.Slice(L.DummyData(shape=dict(dim=[4, 2])), axis=0, ntop=2)
    assert isinstance(tops, tuple) and len(tops) == 2
    n.first, n.second = tops
    layer = n.to_proto().layer[-1]
    assert (layer.name, list(layer.top)) == ("first", ["first", "second"])
    assert layer.slice_param.axis == 0


def test_zero_tops():
    n = caffe.NetSpec()
    n.data, n.label = L.DummyData(shape=dict(dim=3), ntop=2)
    n.silence_data = L.Silence(n.data, ntop=0)
    anonymous = L.Silence(n.label, ntop=0)
    assert isinstance(anonymous, caffe.net_spec.Function)
    net = caffe.to_proto(n.silence_data, anonymous)
    assert [(l.name, list(l.bottom), list(l.top)) for l in net.layer] == [
        ("DummyData1", [], ["DummyData1", "DummyData2"]),
        ("Silence1", ["DummyData1"], []),
        ("Silence2", ["DummyData2"], []),
    ]
    n.silence_label = anonymous
    assert [l.name for l in n.to_proto().layer] == ["data", "silence_data", "silence_label"]


def test_keywords_reach_layer_parameter_fields():
    data = L.Input(shape=dict(dim=[1, 10]))
    layer = L.InnerProduct(data, name="fc", num_output=2, loss_weight=0.5,
                           propagate_down=[False], param=dict(lr_mult=0, decay_mult=0),
                           exclude=[dict(stage="deploy"), dict(phase=caffe.TRAIN)],
                           ).to_proto().layer[-1]
    assert layer.name == "fc" and layer.top == ["InnerProduct1"]
    assert list(layer.loss_weight) == [0.5]  # a single value, appended
    assert list(layer.propagate_down) == [False]
    assert [(p.lr_mult, p.decay_mult) for p in layer.param] == [(0, 0)]
    assert [list(r.stage) for r in layer.exclude] == [["deploy"], []]
    loss = L.SoftmaxWithLoss(data, data, loss_param=dict(normalization=P.Loss.BATCH_SIZE),
                             softmax_param=dict(axis=1)).to_proto().layer[-1]
    assert loss.loss_param.normalization == caffe_pb2.LossParameter.BATCH_SIZE
    assert loss.softmax_param.axis == 1


def test_params_are_enum_values():
    assert P.Pooling.MAX == caffe_pb2.PoolingParameter.MAX
    assert P.Pooling.AVE == caffe_pb2.PoolingParameter.AVE
    assert P.Data.LMDB == caffe_pb2.DataParameter.LMDB
    with pytest.raises(AttributeError, match="MAXIMUM"):
        P.Pooling.MAXIMUM
    with pytest.raises(AttributeError, match="NoSuchParameter"):
        P.NoSuch.VALUE


def test_param_name_dict_comes_from_the_proto():
    names = param_name_dict()
    assert names["Convolution"] == "convolution"
    assert names["InnerProduct"] == "inner_product"
    assert names["ReLU"] == "relu"
    layer = caffe_pb2.LayerParameter()
    for type_name, prefix in names.items():
        assert type(getattr(layer, prefix + "_param")).__name__ == type_name + "Parameter"


def test_unknown_parameters_are_errors_naming_layer_and_key():
    data = L.Input(shape=dict(dim=[1, 1, 4, 4]))
    with pytest.raises(AttributeError, match="Convolution.*'kernel_sizes'"):
        L.Convolution(data, kernel_sizes=3)
    with pytest.raises(AttributeError, match="Convolution.*weight_filler.*'kind'"):
        L.Convolution(data, weight_filler=dict(kind="xavier"))
    with pytest.raises(AttributeError, match="SoftmaxWithLoss.*'axis'"):
        L.SoftmaxWithLoss(data, data, axis=1)  # belongs in softmax_param
    with pytest.raises(ValueError, match="Data.*'top'"):
        L.Data(top="images")
    with pytest.raises(TypeError, match="num_output"):
        L.Convolution(data, num_output="twenty")


def test_inputs_must_be_tops():
    tops = L.DummyData(ntop=2)
    message = r"^Silence input 0 is not a Top \(type is <class 'tuple'>\)$"
    with pytest.raises(TypeError, match=message):
        L.Silence(tops, ntop=0)
    L.Silence(*tops, ntop=0)
    with pytest.raises(TypeError, match="ntop=2"):
        caffe.NetSpec().tops_pair = tops


def test_deep_nets_do_not_recurse():
    top = L.Input(shape=dict(dim=[1]))
    for _ in range(3000):
        top = L.ReLU(top)
    assert len(top.to_proto().layer) == 3001


def test_types_that_share_a_parameter_message_take_its_keywords():
    data = L.Input(shape=dict(dim=[1, 1, 4, 4]))
    deconv = L.Deconvolution(data, num_output=3, kernel_size=2, stride=2).to_proto().layer[-1]
    assert (deconv.convolution_param.num_output, list(deconv.convolution_param.kernel_size),
            list(deconv.convolution_param.stride)) == (3, [2], [2])
    seq = L.Input(shape=[dict(dim=[2, 1, 3]), dict(dim=[2, 1])], ntop=2)
    lstm = L.LSTM(*seq, num_output=5).to_proto().layer[-1]
    assert lstm.recurrent_param.num_output == 5


def test_has_nccl_is_false():
    # BVLC's single-process caffe.NCCL is not offered (docs/python.md).
    assert caffe.has_nccl() is False
    assert not hasattr(caffe, "NCCL")
