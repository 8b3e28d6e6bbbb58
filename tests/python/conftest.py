"""Shared fixtures of the pycaffe suites: where the build is, and nets written to
temporary folders."""
import gzip
import os
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("CAFFE_BUILD", os.path.join(REPO, "build"))
CAFFE_TOOL = os.path.join(BUILD, "tools", "caffe")
FASHION_DIR = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")


def write(folder, name, text):
    path = os.path.join(str(folder), name)
    with open(path, "w") as f:
        f.write(text)
    return path


def python_env(*extra_paths):
    """The environment for a child process that imports caffe (and extra modules)."""
    env = dict(os.environ)
    paths = list(extra_paths) + [os.path.join(REPO, "python")]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


@pytest.fixture(scope="session")
def fashion_test_lmdb(tmp_path_factory):
    """The 10k Fashion-MNIST test images as a real LMDB, written by convert_idx."""
    images = os.path.join(FASHION_DIR, "t10k-images-idx3-ubyte.gz")
    labels = os.path.join(FASHION_DIR, "t10k-labels-idx1-ubyte.gz")
    assert os.path.exists(images), f"{images} missing: install dataset-fashion-mnist"
    out = str(tmp_path_factory.mktemp("lmdb") / "test_lmdb")
    subprocess.run([os.path.join(BUILD, "tools", "convert_idx"), images, labels, out],
                   check=True, capture_output=True)
    return out


def fashion_test_arrays(count):
    """The first `count` Fashion-MNIST test images (N, 1, 28, 28, in [0, 1]) and labels."""
    import numpy as np
    with gzip.open(os.path.join(FASHION_DIR, "t10k-images-idx3-ubyte.gz")) as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)
    with gzip.open(os.path.join(FASHION_DIR, "t10k-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)
    return images[:count].astype(np.float32) / 255, labels[:count].astype(np.float32)
