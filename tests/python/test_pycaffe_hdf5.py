"""BVLC pycaffe's HDF5 parts, checked with h5py: Net.save_hdf5 / load_hdf5 in BVLC's
layout, a .h5 name wherever weights are named, weights written by h5py, and the
HDF5Data and HDF5Output layers on files h5py writes and reads."""
import h5py
import numpy as np
import pytest

import caffe
from conftest import write

NET = """
name: "tiny"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 2 dim: 3 } } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
        inner_product_param { num_output: 4 weight_filler { type: "gaussian" std: 1 }
                              bias_filler { type: "gaussian" std: 1 } } }
layer { name: "relu" type: "ReLU" bottom: "ip" top: "ip" }
"""


@pytest.fixture
def model(tmp_path):
    return write(tmp_path, "tiny.prototxt", NET)


def make_net(model, seed):
    caffe.set_mode_cpu()
    caffe.set_random_seed(seed)
    return caffe.Net(model, caffe.TEST)


def test_save_hdf5_then_load_hdf5(model, tmp_path):
    saved = make_net(model, 1)
    path = str(tmp_path / "w.h5")
    saved.save_hdf5(path)
    with h5py.File(path, "r") as f:
        assert list(f.keys()) == ["data"]
        assert sorted(f["data"].keys()) == ["data", "ip", "relu"]  # every layer has a group
        assert sorted(f["data/ip"].keys()) == ["0", "1"]
        assert f["data/ip/0"].dtype == np.float32
        np.testing.assert_array_equal(f["data/ip/0"][...], saved.params["ip"][0].data)
        np.testing.assert_array_equal(f["data/ip/1"][...], saved.params["ip"][1].data)

    loaded = make_net(model, 2)
    assert not np.array_equal(loaded.params["ip"][0].data, saved.params["ip"][0].data)
    loaded.load_hdf5(path)
    for mine, theirs in zip(loaded.params["ip"], saved.params["ip"]):
        np.testing.assert_array_equal(mine.data, theirs.data)

    # A name ending in .h5 loads HDF5 wherever weights are named, as in BVLC.
    copied = make_net(model, 3)
    copied.copy_from(path)
    for made in (caffe.Net(model, path, caffe.TEST), caffe.Net(model, caffe.TEST, weights=path),
                 copied):
        for mine, theirs in zip(made.params["ip"], saved.params["ip"]):
            np.testing.assert_array_equal(mine.data, theirs.data)


def test_weights_written_by_h5py_load(model, tmp_path):
    path = str(tmp_path / "by_h5py.h5")
    weights = np.arange(12, dtype=np.float64).reshape(4, 3) / 4  # h5py keeps float64
    bias = np.array([1, -2, 3, -4])                              # and int64
    with h5py.File(path, "w") as f:
        f["data/ip/0"] = weights
        f["data/ip/1"] = bias
    net = make_net(model, 1)
    net.load_hdf5(path)
    np.testing.assert_array_equal(net.params["ip"][0].data, weights.astype(np.float32))
    np.testing.assert_array_equal(net.params["ip"][1].data, bias.astype(np.float32))

    with h5py.File(path, "w") as f:
        f["data/ip/0"] = np.zeros((4, 5), np.float32)
        f["data/ip/1"] = np.zeros(4, np.float32)
    with pytest.raises(caffe.CaffeError,
                       match="layer 'ip' blob 0: the weights have shape 4x5, the net expects 4x3"):
        net.load_hdf5(path)


def test_hdf5_data_layer_reads_a_file_h5py_wrote(tmp_path):
    data = np.arange(5 * 2 * 3, dtype=np.float32).reshape(5, 2, 3)
    label = np.arange(5)
    h5 = str(tmp_path / "train.h5")
    with h5py.File(h5, "w") as f:
        f["data"] = data
        f["label"] = label
    source = write(tmp_path, "train.txt", h5 + "\n")
    model = write(tmp_path, "hdf5.prototxt", f"""
        layer {{ name: "in" type: "HDF5Data" top: "data" top: "label"
                hdf5_data_param {{ source: "{source}" batch_size: 2 }} }}""")
    caffe.set_mode_cpu()
    net = caffe.Net(model, caffe.TRAIN)
    assert net.blobs["data"].data.shape == (2, 2, 3)
    assert net.blobs["label"].data.shape == (2,)
    # Items 0 and 1, 2 and 3, then 4 and the wrap back to 0.
    for items in ([0, 1], [2, 3], [4, 0]):
        out = net.forward()
        np.testing.assert_array_equal(out["data"], data[items])
        np.testing.assert_array_equal(out["label"], label[items].astype(np.float32))


def test_hdf5_output_layer_keeps_every_batch(tmp_path):
    out_path = str(tmp_path / "out.h5")
    model = write(tmp_path, "out.prototxt", f"""
        layer {{ name: "in" type: "Input" top: "x" top: "y"
                input_param {{ shape {{ dim: 2 dim: 3 }} shape {{ dim: 2 }} }} }}
        layer {{ name: "out" type: "HDF5Output" bottom: "x" bottom: "y"
                hdf5_output_param {{ file_name: "{out_path}" }} }}""")
    caffe.set_mode_cpu()
    net = caffe.Net(model, caffe.TEST)
    batches = np.arange(12, dtype=np.float32).reshape(2, 2, 3) - 5.5
    for i in range(2):
        net.blobs["x"].data[...] = batches[i]
        net.blobs["y"].data[...] = [i, -i]
        net.forward()
    del net  # closes the file
    with h5py.File(out_path, "r") as f:
        assert sorted(f.keys()) == ["data", "label"]
        np.testing.assert_array_equal(f["data"][...], batches.reshape(4, 3))
        np.testing.assert_array_equal(f["label"][...], [0, 0, 1, -1])


def test_an_hdf5_fed_net_trains_through_caffe_train_under_mpirun(tmp_path):
    # A linear regression read from two HDF5 files by HDF5Data: 2 ranks, each reading
    # its own share of the items, learn y = x . w + b through the caffe tool.
    import os
    import re
    import shutil
    import subprocess
    from conftest import CAFFE_TOOL
    rng = np.random.default_rng(7)
    w, b = np.array([0.5, -1.0, 2.0, 0.25]), 0.3
    sources = []
    for part in range(2):
        x = rng.uniform(-1, 1, size=(128, 4))
        path = str(tmp_path / ("part%d.h5" % part))
        with h5py.File(path, "w") as f:
            f["data"] = x.astype(np.float32)
            f["label"] = (x @ w + b).reshape(-1, 1).astype(np.float32)
        sources.append(path)
    listing = write(tmp_path, "train.txt", "\n".join(sources) + "\n")
    net = write(tmp_path, "net.prototxt", """
      layer {{ name: "data" type: "HDF5Data" top: "data" top: "label"
              hdf5_data_param {{ source: "{}" batch_size: 16 shuffle: true }} }}
      layer {{ name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
              inner_product_param {{ num_output: 1 weight_filler {{ type: "constant" }} }} }}
      layer {{ name: "loss" type: "EuclideanLoss" bottom: "ip" bottom: "label" top: "loss" }}
    """.format(listing))
    solver = write(tmp_path, "solver.prototxt", """
      net: "{}" base_lr: 0.1 momentum: 0.9 lr_policy: "fixed" max_iter: 200 display: 20
      random_seed: 1 snapshot_after_train: false solver_mode: CPU
    """.format(net))
    mpirun = shutil.which("mpirun")
    assert mpirun, "mpirun not found (openmpi-bin)"
    command = [mpirun, "-np", "2", "--oversubscribe"]
    if os.geteuid() == 0:
        command.append("--allow-run-as-root")
    run = subprocess.run(command + [CAFFE_TOOL, "train", "-solver", solver],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    losses = [float(v) for v in re.findall(r"Iteration \d+(?: \([^)]*\))?, loss = ([-0-9.eE+]+)",
                                                 run.stderr)]
    assert len(losses) >= 5, run.stderr[-3000:]
    # From about (|w|^2 / 3 + b^2) / 2 = 0.93 at the start to nearly 0.
    assert losses[0] > 0.3 and losses[-1] < 0.01 * losses[0], losses
