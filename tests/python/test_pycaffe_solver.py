"""Solvers driven from Python: the same weights as `caffe train` bit for bit (alone and
under mpirun with an IWP exchange), step/solve/snapshot/restore, and every solver type."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import caffe
from caffe.proto import caffe_pb2
from conftest import CAFFE_TOOL, python_env, write

NET = """
name: "small"
layer { name: "data" type: "Data" top: "data" top: "label"
        transform_param { scale: 0.00390625 }
        data_param { source: "%(lmdb)s" batch_size: 16 backend: LMDB } }
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
        convolution_param { num_output: 4 kernel_size: 5 stride: 2
          weight_filler { type: "xavier" } bias_filler { type: "constant" } } }
layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" }
layer { name: "ip" type: "InnerProduct" bottom: "conv" top: "ip"
        inner_product_param { num_output: 10 weight_filler { type: "xavier" } } }
layer { name: "accuracy" type: "Accuracy" bottom: "ip" bottom: "label" top: "accuracy"
        include { phase: TEST } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
"""

SOLVER = """
net: "%(net)s"
type: "%(type)s"
base_lr: 0.05
%(momentum)s
weight_decay: 0.0005
lr_policy: "fixed"
max_iter: %(max_iter)d
test_iter: 2
test_interval: 1000
test_initialization: false
display: 0
snapshot: 0
snapshot_prefix: "%(prefix)s"
random_seed: 3
%(extra)s
"""


def make_solver(folder, lmdb, name, max_iter=50, solver_type="SGD", extra="", momentum=0.9):
    net = write(folder, "net.prototxt", NET % {"lmdb": lmdb})
    return write(folder, name + ".prototxt",
                 SOLVER % {"net": net, "type": solver_type, "max_iter": max_iter,
                           "prefix": os.path.join(str(folder), name), "extra": extra,
                           "momentum": "" if momentum is None else f"momentum: {momentum}"})


def caffemodel_params(path):
    """{layer name: [arrays]} from a .caffemodel."""
    param = caffe_pb2.NetParameter()
    with open(path, "rb") as f:
        param.ParseFromString(f.read())
    return {l.name: [caffe.io.blobproto_to_array(b) for b in l.blobs]
            for l in param.layer if len(l.blobs)}


def assert_same_bits(net, saved):
    assert set(saved) == set(net.params)
    for name, blobs in net.params.items():
        for mine, theirs in zip(blobs, saved[name]):
            assert np.array_equal(mine.data.view(np.uint32), theirs.astype(np.float32).view(np.uint32)), name


def mpirun_prefix(np_):
    mpirun = shutil.which("mpirun")
    assert mpirun, "mpirun not found (openmpi-bin)"
    cmd = [mpirun, "-np", str(np_), "--oversubscribe"]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    return cmd


def test_python_training_matches_caffe_train_bit_for_bit(tmp_path, fashion_test_lmdb):
    tool_solver = make_solver(tmp_path, fashion_test_lmdb, "tool")
    subprocess.run([CAFFE_TOOL, "train", "-solver", tool_solver], check=True,
                   capture_output=True)
    solver = caffe.get_solver(make_solver(tmp_path, fashion_test_lmdb, "py"))
    assert solver.iter == 0 and solver.type == "SGD"
    solver.step(50)
    assert solver.iter == 50
    assert_same_bits(solver.net, caffemodel_params(str(tmp_path / "tool_iter_50.caffemodel")))


MPI_SCRIPT = """
import sys
import caffe
solver = caffe.get_solver(sys.argv[1])
solver.step(30)
if caffe.solver_rank() == 0:
    print("ranks", caffe.solver_count())
    solver.net.save(sys.argv[2])
"""


def test_python_solver_under_mpirun_exchanges_like_caffe_train(tmp_path, fashion_test_lmdb):
    # IWP with a short dense warm-up: sparse steps, residuals and the leader's
    # indices all run, and every rank must agree with the tool's run bit for bit.
    sync = ("sync_param { method: IWP density: 0.05 warmup_iter: 5 "
            "max_relative_step: 0.1 iwp_param { stochastic_fraction: 0.1 } }")
    tool_solver = make_solver(tmp_path, fashion_test_lmdb, "tool", max_iter=30, extra=sync)
    subprocess.run(mpirun_prefix(2) + [CAFFE_TOOL, "train", "-solver", tool_solver],
                   check=True, capture_output=True)
    py_solver = make_solver(tmp_path, fashion_test_lmdb, "py", max_iter=30, extra=sync)
    script = write(tmp_path, "train.py", MPI_SCRIPT)
    saved = str(tmp_path / "py.caffemodel")
    done = subprocess.run(mpirun_prefix(2) + [sys.executable, script, py_solver, saved],
                          env=python_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ranks 2" in done.stdout
    assert "exchange IWP" in done.stderr
    tool = caffemodel_params(str(tmp_path / "tool_iter_30.caffemodel"))
    mine = caffemodel_params(saved)
    for name in tool:
        for a, b in zip(mine[name], tool[name]):
            assert np.array_equal(a.view(np.uint32), b.view(np.uint32)), name


def test_solve_snapshot_restore_and_test_nets(tmp_path, fashion_test_lmdb):
    path = make_solver(tmp_path, fashion_test_lmdb, "run", max_iter=20)
    solver = caffe.SGDSolver(path)
    assert len(solver.test_nets) == 1
    assert "accuracy" in solver.test_nets[0].outputs
    solver.step(10)
    solver.snapshot()
    state = str(tmp_path / "run_iter_10.solverstate")
    assert os.path.exists(state) and os.path.exists(str(tmp_path / "run_iter_10.caffemodel"))
    weights_at_10 = {k: [b.data.copy() for b in v] for k, v in solver.net.params.items()}
    solver.solve()  # on to max_iter
    assert solver.iter == 20
    assert os.path.exists(str(tmp_path / "run_iter_20.caffemodel"))
    # The test net shares the train net's weights.
    np.testing.assert_array_equal(solver.test_nets[0].params["ip"][0].data,
                                  solver.net.params["ip"][0].data)
    resumed = caffe.SGDSolver(path)
    resumed.restore(state)
    assert resumed.iter == 10
    for name, blobs in weights_at_10.items():
        for mine, saved in zip(resumed.net.params[name], blobs):
            np.testing.assert_array_equal(mine.data, saved)
    resumed.solve()
    assert resumed.iter == 20
    with pytest.raises(caffe.CaffeError, match="absent.solverstate"):
        resumed.restore(str(tmp_path / "absent.solverstate"))


@pytest.mark.parametrize("cls,name", [
    (caffe.SGDSolver, "SGD"), (caffe.NesterovSolver, "Nesterov"),
    (caffe.AdaGradSolver, "AdaGrad"), (caffe.RMSPropSolver, "RMSProp"),
    (caffe.AdaDeltaSolver, "AdaDelta"), (caffe.AdamSolver, "Adam")])
def test_every_solver_type_trains(tmp_path, fashion_test_lmdb, cls, name):
    # The file says Adam; the class decides, as in BVLC (get_solver reads the file).
    # AdaGrad and RMSProp refuse a momentum; the others use it.
    momentum = None if name in ("AdaGrad", "RMSProp") else 0.9
    path = make_solver(tmp_path, fashion_test_lmdb, "s", max_iter=5, solver_type="Adam",
                       momentum=momentum)
    assert caffe.get_solver(path).type == "Adam"
    solver = cls(path)
    assert solver.type == name and isinstance(solver, caffe.Solver)
    before = solver.net.params["ip"][0].data.copy()
    solver.step(3)
    after = solver.net.params["ip"][0].data
    assert np.all(np.isfinite(after)) and not np.array_equal(before, after)


TINY_NET = """
name: "tiny"
layer { name: "data" type: "Input" top: "data" top: "label"
        input_param { shape { dim: 4 dim: 3 } shape { dim: 4 } } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
        param { lr_mult: 1 } param { lr_mult: 2 }
        inner_product_param { num_output: 2 weight_filler { type: "gaussian" std: 0.5 }
          bias_filler { type: "constant" value: 0.1 } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
"""


def test_apply_update_steps_by_the_rate_times_the_gradient(tmp_path):
    # Plain SGD: no momentum, no weight decay, a fixed rate of 0.1 (times lr_mult).
    net_path = write(tmp_path, "tiny.prototxt", TINY_NET)
    path = write(tmp_path, "tiny_solver.prototxt",
                 'net: "%s"\nbase_lr: 0.1\nlr_policy: "fixed"\nmax_iter: 10\n'
                 "random_seed: 1\n" % net_path)
    caffe.set_mode_cpu()
    solver = caffe.SGDSolver(path)
    net = solver.net
    net.blobs["data"].data[...] = np.random.RandomState(4).randn(4, 3)
    net.blobs["label"].data[...] = [0, 1, 1, 0]
    net.clear_param_diffs()
    net.forward()
    net.backward()
    before = [b.data.copy() for b in net.params["ip"]]
    grads = [b.diff.copy() for b in net.params["ip"]]
    assert all(np.any(g != 0) for g in grads)
    solver.apply_update()
    for lr_mult, blob, start, grad in zip((1, 2), net.params["ip"], before, grads):
        np.testing.assert_allclose(blob.data, start - np.float32(0.1 * lr_mult) * grad,
                                   rtol=1e-6, atol=1e-7)
    assert solver.iter == 0  # as in BVLC: only step() counts iterations
    # A zero gradient without momentum moves nothing.
    after = [b.data.copy() for b in net.params["ip"]]
    net.clear_param_diffs()
    solver.apply_update()
    for blob, expected in zip(net.params["ip"], after):
        np.testing.assert_array_equal(blob.data, expected)


def test_bad_solver_file_is_a_clear_error(tmp_path):
    bad = write(tmp_path, "bad_solver.prototxt", "base_lr: 0.1\nmax_iter: oops\n")
    with pytest.raises(caffe.CaffeError, match="bad_solver.prototxt.*2"):
        caffe.get_solver(bad)


DYING_RANK = """
import sys
import caffe
solver = caffe.get_solver(sys.argv[1])
if caffe.solver_rank() == 1:
    raise ValueError("rank 1 gives up")
solver.step(30)
"""


def test_an_error_on_one_rank_ends_the_job(tmp_path, fashion_test_lmdb):
    # Rank 0 would wait for rank 1 in the first collective forever; the uncaught
    # exception must end every rank instead.
    path = make_solver(tmp_path, fashion_test_lmdb, "die", max_iter=30,
                       extra="sync_param { method: DENSE }")
    script = write(tmp_path, "die.py", DYING_RANK)
    done = subprocess.run(mpirun_prefix(2) + [sys.executable, script, path], env=python_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "ValueError: rank 1 gives up" in done.stderr, (
        "mpirun's stderr lacks rank 1's traceback:\n%s\n--- stdout ---\n%s"
        % (done.stderr, done.stdout))
