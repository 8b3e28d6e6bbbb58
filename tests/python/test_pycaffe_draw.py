"""caffe.draw and python/draw_net.py: pictures of nets through graphviz.

    PYTHONPATH=python python3 -m pytest tests/python/test_pycaffe_draw.py
"""
import os
import subprocess
import sys

import pytest
from google.protobuf import text_format

import caffe
import caffe.draw
from caffe.proto import caffe_pb2
from conftest import REPO, python_env, write

LENET = os.path.join(REPO, "models", "lenet_fashion", "train_val.prototxt")
DRAW_NET = os.path.join(REPO, "python", "draw_net.py")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def read_lenet():
    net = caffe_pb2.NetParameter()
    with open(LENET) as f:
        text_format.Merge(f.read(), net)
    return net


def layer_labels(graph):
    """The labels of the layer nodes (blobs are octagons), in order."""
    return [node.get("label").strip('"') for node in graph.get_nodes()
            if node.get("shape") != "octagon"]


def test_draw_net_to_file_writes_a_png(tmp_path):
    image_module = pytest.importorskip("PIL.Image")
    path = str(tmp_path / "lenet.png")
    caffe.draw.draw_net_to_file(read_lenet(), path)
    with open(path, "rb") as f:
        assert f.read(8) == PNG_SIGNATURE
    with image_module.open(path) as image:
        width, height = image.size
    # Left to right: a long, low picture of the 16 layers and blobs.
    assert 1000 < width < 10000 and 100 < height < width


def test_draw_net_returns_the_image_in_the_format_asked():
    svg = caffe.draw.draw_net(read_lenet(), "TB", ext="svg")
    assert b"<svg" in svg and b"conv1" in svg
    assert caffe.draw.draw_net(read_lenet(), "LR", ext="raw").startswith(b"digraph")
    with pytest.raises(ValueError, match="'bogus'"):
        caffe.draw.draw_net(read_lenet(), "LR", ext="bogus")


def test_phase_keeps_the_layers_caffe_keeps():
    net = read_lenet()
    # Both real data layers are called 'data'; tell them apart.
    net.layer[0].name, net.layer[1].name = "train_data", "test_data"
    every = layer_labels(caffe.draw.get_pydot_graph(net, "LR"))
    train = layer_labels(caffe.draw.get_pydot_graph(net, "LR", phase=caffe.TRAIN))
    test = layer_labels(caffe.draw.get_pydot_graph(net, "LR", phase=caffe.TEST))
    assert len(every) == len(net.layer) == 12
    assert [l.split("\\n")[0] for l in train] == [
        "train_data", "conv1", "pool1", "conv2", "pool2", "ip1", "relu1", "ip2", "loss"]
    assert [l.split("\\n")[0] for l in test] == [
        "test_data", "conv1", "pool1", "conv2", "pool2", "ip1", "relu1", "ip2", "accuracy",
        "loss"]
    # The DummyData layer needs stage 'synthetic': the net's own state can give it.
    net.state.stage.append("synthetic")
    for phase, layer_count in ((caffe.TRAIN, 9), (caffe.TEST, 10)):
        synthetic = layer_labels(caffe.draw.get_pydot_graph(net, "LR", phase=phase))
        assert synthetic[0] == "data\\n(DummyData)" and len(synthetic) == layer_count


def test_include_and_exclude_together_is_an_error():
    net = read_lenet()
    net.layer[3].exclude.add(phase=caffe.TEST)
    net.layer[3].include.add(phase=caffe.TRAIN)
    with pytest.raises(ValueError, match="conv1"):
        caffe.draw.get_pydot_graph(net, "LR", phase=caffe.TRAIN)


def test_nodes_and_edges():
    graph = caffe.draw.get_pydot_graph(read_lenet(), "LR", phase=caffe.TEST)
    nodes = {node.get("label").strip('"'): node for node in graph.get_nodes()}
    assert "conv1\\n(Convolution)\\nkernel size: 5\\nstride: 1\\npad: 0" in nodes
    assert "pool1\\n(Pooling MAX)\\nkernel size: 2\\nstride: 2\\npad: 0" in nodes
    blobs = ["data", "label", "conv1", "pool1", "conv2", "pool2", "ip1", "ip2", "accuracy",
             "loss"]
    assert all(nodes[blob].get("shape") == "octagon" for blob in blobs)
    edges = {(e.get_source(), e.get_destination()): e for e in graph.get_edge_list()}
    relu = nodes["relu1\\n(ReLU)"].get_name()
    ip1 = nodes["ip1"].get_name()
    assert (ip1, relu) in edges and (relu, ip1) in edges  # in place: out and back
    assert nodes["relu1\\n(ReLU)"].get("fillcolor") == caffe.draw.NEURON_LAYER_STYLE["fillcolor"]
    assert edges[nodes["data\\n(Data)"].get_name(), nodes["data"].get_name()].get("label") \
        == '"Batch 100"'


def test_display_lrm_and_vertical_labels():
    graph = caffe.draw.get_pydot_graph(read_lenet(), "TB", display_lrm=True)
    assert ("conv1 (Convolution) kernel size: 5 stride: 1 pad: 0 lr mult: 1, 2 "
            "decay mult: 1, 1") in layer_labels(graph)
    assert "pool1 (Pooling MAX) kernel size: 2 stride: 2 pad: 0" in layer_labels(graph)


def test_names_that_mean_something_to_dot_are_escaped(tmp_path):
    net = read_lenet()
    net.name = 'a "quoted" {net}'
    net.layer[3].name = "conv|1<a>:b"
    path = str(tmp_path / "net.png")
    caffe.draw.draw_net_to_file(net, path, rankdir="TB")
    with open(path, "rb") as f:
        assert f.read(8) == PNG_SIGNATURE


def run_draw_net(*args):
    return subprocess.run([sys.executable, DRAW_NET] + list(args), capture_output=True,
                          text=True, env=python_env(), timeout=120)


def test_draw_net_script_writes_a_png(tmp_path):
    path = str(tmp_path / "lenet.png")
    result = run_draw_net(LENET, path, "--phase", "TRAIN", "--display_lrm")
    assert result.returncode == 0, result.stderr
    with open(path, "rb") as f:
        assert f.read(8) == PNG_SIGNATURE


def test_draw_net_script_reports_a_malformed_prototxt_in_one_line(tmp_path):
    bad = write(tmp_path, "bad.prototxt", 'name: "bad"\nlayer {\n  name: "a"\n  kernel: 3\n}\n')
    result = run_draw_net(bad, str(tmp_path / "bad.png"))
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "%s:4:" % bad in lines[0] and "kernel" in lines[0]
    assert not (tmp_path / "bad.png").exists()


def test_draw_net_script_reports_a_missing_file_in_one_line(tmp_path):
    missing = str(tmp_path / "missing.prototxt")
    result = run_draw_net(missing, str(tmp_path / "out.png"))
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and missing in result.stderr
