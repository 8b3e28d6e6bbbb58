"""Tests of caffe.Classifier, caffe.Detector and python/classify.py on a tiny net
(Input -> InnerProduct -> Softmax) whose probabilities are worked out in numpy.
Needs the compiled extension:

    PYTHONPATH=python /usr/bin/python3 -m pytest tests/python/test_pycaffe_classify.py
"""
import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

import caffe
from conftest import CAFFE_TOOL, REPO, fashion_test_arrays, python_env, write

CLASSIFY = os.path.join(REPO, "python", "classify.py")
CLASSES = 3

TINY_NET = """name: "tiny"
layer {{
  name: "data" type: "Input" top: "data"
  input_param {{ shape {{ dim: {batch} dim: {channels} dim: {height} dim: {width} }} }}
}}
layer {{
  name: "ip" type: "InnerProduct" bottom: "data" top: "ip"
  inner_product_param {{ num_output: {classes} }}
}}
layer {{ name: "prob" type: "Softmax" bottom: "ip" top: "prob" }}
"""


class TinyNet:
    """A deploy prototxt and saved weights, with the weights kept to compute the
    expected probabilities: softmax(W . x + b) of a C x H x W net input x."""

    def __init__(self, directory, channels, height, width, batch=1):
        self.model = write(directory, "tiny.prototxt", TINY_NET.format(
            batch=batch, channels=channels, height=height, width=width, classes=CLASSES))
        self.weights = os.path.join(str(directory), "tiny.caffemodel")
        rng = np.random.RandomState(channels * 100 + height)
        self.W = rng.normal(0, 0.5, (CLASSES, channels * height * width)).astype(np.float32)
        self.b = np.array([0.1, -0.2, 0.3], dtype=np.float32)
        net = caffe.Net(self.model, caffe.TEST)
        net.params["ip"][0].data[...] = self.W
        net.params["ip"][1].data[...] = self.b
        net.save(self.weights)

    def probabilities(self, net_input):
        scores = self.W.astype(np.float64) @ np.ravel(net_input) + self.b
        e = np.exp(scores - scores.max())
        return e / e.sum()


def rand_images(count, height, width, channels, seed=0):
    return list(np.random.RandomState(seed).rand(count, height, width, channels)
                .astype(np.float32))


# Crop origins of oversample on a 6 x 6 image cut to 4 x 4: corners, then centre.
ORIGINS_6_TO_4 = [(0, 0), (0, 2), (2, 0), (2, 2), (1, 1)]


@pytest.fixture
def grey_net(tmp_path):
    # A batch of 2 makes forward_all pad the last batch of an odd number of inputs.
    return TinyNet(tmp_path, channels=1, height=4, width=4, batch=2)


@pytest.fixture
def colour_net(tmp_path):
    return TinyNet(tmp_path, channels=3, height=4, width=4)


# --- Classifier ----------------------------------------------------------------------

def test_classifier_centre_crop(grey_net):
    classifier = caffe.Classifier(grey_net.model, grey_net.weights, image_dims=(7, 7),
                                  mean=np.array([0.5]), raw_scale=2.0, input_scale=3.0)
    images = rand_images(3, 7, 7, 1)
    predictions = classifier.predict(images, oversample=False)
    assert predictions.shape == (3, CLASSES)
    for image, prediction in zip(images, predictions):
        # A margin of 3 splits as 1 above / left and 2 below / right.
        net_input = (image[1:5, 1:5, 0] * 2.0 - 0.5) * 3.0
        np.testing.assert_allclose(prediction, grey_net.probabilities(net_input), atol=1e-5)


def test_classifier_averages_ten_oversampled_crops(grey_net):
    classifier = caffe.Classifier(grey_net.model, grey_net.weights, image_dims=(6, 6))
    images = rand_images(3, 6, 6, 1, seed=1)
    predictions = classifier.predict(images)
    assert predictions.shape == (3, CLASSES)
    for image, prediction in zip(images, predictions):
        crops = [image[y:y + 4, x:x + 4, 0] for y, x in ORIGINS_6_TO_4]
        crops += [crop[:, ::-1] for crop in crops]
        expected = np.mean([grey_net.probabilities(crop) for crop in crops], axis=0)
        np.testing.assert_allclose(prediction, expected, atol=1e-5)


def test_classifier_resizes_images_to_the_input_by_default(grey_net):
    classifier = caffe.Classifier(grey_net.model, grey_net.weights)
    small = rand_images(3, 4, 4, 1, seed=3)
    # Each pixel blown up to a 2 x 2 block: halving (bilinear) gives it back exactly.
    images = [np.repeat(np.repeat(im, 2, axis=0), 2, axis=1) for im in small]
    predictions = classifier.predict(images, oversample=False)
    for im, prediction in zip(small, predictions):
        np.testing.assert_allclose(prediction, grey_net.probabilities(im), atol=1e-5)


def test_classifier_swaps_channels_and_subtracts_the_mean(colour_net):
    mean = np.array([0.1, 0.2, 0.3])
    classifier = caffe.Classifier(colour_net.model, colour_net.weights, mean=mean,
                                  raw_scale=2.0, channel_swap=(2, 1, 0))
    image = rand_images(1, 4, 4, 3, seed=2)[0]
    prediction = classifier.predict([image], oversample=False)[0]
    # Net channel c holds image channel 2 - c (RGB -> BGR).
    net_input = np.stack([image[:, :, 2 - c] * 2.0 - mean[c] for c in range(3)])
    np.testing.assert_allclose(prediction, colour_net.probabilities(net_input), atol=1e-5)


def test_classifier_rejects_images_with_other_channels(grey_net):
    classifier = caffe.Classifier(grey_net.model, grey_net.weights)
    with pytest.raises(ValueError, match="H x W x 1"):
        classifier.predict(rand_images(1, 4, 4, 3))


# --- Detector ------------------------------------------------------------------------

def save_rgb(path, seed):
    pixels = np.random.RandomState(seed).randint(0, 256, (8, 10, 3)).astype(np.uint8)
    Image.fromarray(pixels).save(path)
    return pixels / 255.0


def test_detector_classifies_each_window(colour_net, tmp_path):
    first, second = str(tmp_path / "a.png"), str(tmp_path / "b.png")
    images = {first: save_rgb(first, 3), second: save_rgb(second, 4)}
    mean = np.array([0.1, 0.2, 0.3])
    detector = caffe.Detector(colour_net.model, colour_net.weights, mean=mean,
                              raw_scale=2.0, channel_swap=(2, 1, 0))
    # 4 x 4 windows (maxima exclusive) need no warping to the 4 x 4 input.
    request = [(first, np.array([[1, 2, 5, 6], [0, 0, 4, 4]])), (second, [[4, 6, 8, 10]])]
    detections = detector.detect_windows(request)
    expected_order = [(first, [1, 2, 5, 6]), (first, [0, 0, 4, 4]), (second, [4, 6, 8, 10])]
    assert len(detections) == 3
    for detection, (filename, window) in zip(detections, expected_order):
        assert detection["filename"] == filename
        assert list(detection["window"]) == window
        crop = images[filename][window[0]:window[2], window[1]:window[3]]
        net_input = np.stack([crop[:, :, 2 - c] * 2.0 - mean[c] for c in range(3)])
        np.testing.assert_allclose(detection["prediction"],
                                   colour_net.probabilities(net_input), atol=1e-4)


def test_detector_crop_without_context_is_the_window(colour_net):
    detector = caffe.Detector(colour_net.model, colour_net.weights)
    image = rand_images(1, 5, 6, 3)[0]
    np.testing.assert_array_equal(detector.crop(image, [1, 1, 3, 4]), image[1:3, 1:4])


def test_detector_context_pad_fills_beyond_the_image_with_the_mean(colour_net):
    detector = caffe.Detector(colour_net.model, colour_net.weights,
                              mean=np.array([30.0, 60.0, 90.0]), raw_scale=255,
                              channel_swap=(1, 2, 0), context_pad=1)
    assert list(detector.crop_dims) == [4, 4, 3]
    image = rand_images(1, 4, 4, 3, seed=5)[0]
    crop = detector.crop(image, np.array([0, 0, 1, 1]))
    # Worked by hand: with 1 pixel of context in a 4-pixel input the window's box
    # doubles to rows/cols -1..3 around centre 1; the row and column at -1 are
    # outside the image, so the image's rows/cols 0..2 land at 1..3 and the rest
    # is the mean, in image channel order (net channels 0, 1, 2 hold image channels
    # 1, 2, 0) and the [0, 1] range.
    assert crop.shape == (4, 4, 3)
    np.testing.assert_allclose(crop[1:, 1:], image[0:3, 0:3], atol=1e-6)
    image_mean = np.array([90.0, 30.0, 60.0]) / 255
    np.testing.assert_allclose(crop[0, :], np.tile(image_mean, (4, 1)), atol=1e-6)
    np.testing.assert_allclose(crop[:, 0], np.tile(image_mean, (4, 1)), atol=1e-6)


def test_detector_selective_search_is_not_available(colour_net):
    detector = caffe.Detector(colour_net.model, colour_net.weights)
    with pytest.raises(NotImplementedError, match="selective search"):
        detector.detect_selective_search(["image.jpg"])


# --- classify.py ---------------------------------------------------------------------

def run_classify(*args):
    return subprocess.run([sys.executable, CLASSIFY] + list(args), capture_output=True,
                          text=True, env=python_env())


def run_classify_tiny(net, *args):
    return run_classify("--model_def", net.model, "--pretrained_model", net.weights,
                        "--images_dim", "4,4", *args)


def test_classify_npy_of_images(grey_net, tmp_path):
    images = np.random.RandomState(6).rand(3, 4, 4).astype(np.float32)
    np.save(str(tmp_path / "images.npy"), images)
    output = str(tmp_path / "out.npy")
    result = run_classify_tiny(grey_net, str(tmp_path / "images.npy"), output, "--center_only")
    assert result.returncode == 0, result.stderr
    predictions = np.load(output)
    assert predictions.shape == (3, CLASSES)
    for image, prediction in zip(images, predictions):
        np.testing.assert_allclose(prediction, grey_net.probabilities(image), atol=1e-5)


def test_classify_uint8_npy_reads_pixels_as_load_image_does(grey_net, tmp_path):
    pixels = np.random.RandomState(7).randint(0, 256, (2, 4, 4)).astype(np.uint8)
    np.save(str(tmp_path / "pixels.npy"), pixels)
    output = str(tmp_path / "out.npy")
    result = run_classify_tiny(grey_net, str(tmp_path / "pixels.npy"), output, "--center_only")
    assert result.returncode == 0, result.stderr
    for image, prediction in zip(pixels / 255.0, np.load(output)):
        np.testing.assert_allclose(prediction, grey_net.probabilities(image), atol=1e-5)


def test_classify_directory_of_pngs_with_labels(grey_net, tmp_path):
    folder = tmp_path / "images"
    folder.mkdir()
    rng = np.random.RandomState(8)
    pixels = {name: rng.randint(0, 256, (4, 4)).astype(np.uint8) for name in ("b", "a")}
    for name, image in pixels.items():
        Image.fromarray(image).save(str(folder / (name + ".png")))
    (folder / "notes.txt").write_text("not an image")
    labels = tmp_path / "labels.txt"
    labels.write_text("cat\ndog\nbird\n")
    output = str(tmp_path / "out.npy")
    result = run_classify_tiny(grey_net, str(folder), output, "--ext", "png",
                          "--labels_file", str(labels))
    assert result.returncode == 0, result.stderr
    predictions = np.load(output)
    assert predictions.shape == (2, CLASSES)
    # Files in name order; at the input size the 10 crops are the image 5 times
    # and its mirror 5 times.
    for name, prediction in zip(["a", "b"], predictions):
        image = pixels[name] / 255.0
        expected = (grey_net.probabilities(image) + grey_net.probabilities(image[:, ::-1])) / 2
        np.testing.assert_allclose(prediction, expected, atol=1e-5)
        top = ["cat", "dog", "bird"][int(np.argmax(expected))]
        line = [l for l in result.stdout.splitlines() if l.startswith(str(folder / name))]
        assert len(line) == 1 and ("\t" + top + "\t") in line[0]


@pytest.mark.parametrize("problem", ["missing input", "missing weights", "colour input",
                                     "bad images_dim"])
def test_classify_user_errors_are_one_line(grey_net, tmp_path, problem):
    colour = str(tmp_path / "colour.npy")
    np.save(colour, np.zeros((1, 4, 4, 3), dtype=np.float32))
    args, words = {
        "missing input": ([str(tmp_path / "absent.png")], "absent.png"),
        "missing weights": ([colour, "--pretrained_model", str(tmp_path / "none.caffemodel")],
                            "none.caffemodel"),
        "colour input": ([colour], "expected 1 channel"),
        "bad images_dim": ([colour, "--images_dim", "4x4"], "--images_dim"),
    }[problem]
    result = run_classify_tiny(grey_net, *(args[:1] + [str(tmp_path / "out.npy")] + args[1:]))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    # The net may log to stderr too; the error itself is one line.
    errors = [l for l in result.stderr.splitlines() if l.startswith("classify.py: error:")]
    assert len(errors) == 1 and words in errors[0]


def test_classify_recognises_fashion_mnist_with_a_lenet_caffe_trained(tmp_path, fashion_test_lmdb):
    # models/lenet_fashion's net and deploy file, trained briefly by `caffe train` on a
    # real LMDB (the test images: this checks the tool chain, not generalisation).
    with open(os.path.join(REPO, "models/lenet_fashion/train_val.prototxt")) as f:
        net = f.read().replace("data/fashion_mnist/train_lmdb", fashion_test_lmdb)
    net = write(tmp_path, "train_val.prototxt",
                net.replace("data/fashion_mnist/test_lmdb", fashion_test_lmdb))
    solver = write(tmp_path, "solver.prototxt", f"""
        net: "{net}" base_lr: 0.02 momentum: 0.9 lr_policy: "fixed" max_iter: 150
        test_iter: 1 test_interval: 1000 test_initialization: false display: 0
        snapshot_prefix: "{tmp_path}/lenet" random_seed: 1 solver_mode: CPU""")
    trained = subprocess.run([CAFFE_TOOL, "train", "-solver", solver], capture_output=True)
    assert trained.returncode == 0, trained.stderr[-2000:]
    images, labels = fashion_test_arrays(300)
    np.save(str(tmp_path / "images.npy"), images[:, 0])
    output = str(tmp_path / "out.npy")
    result = run_classify(str(tmp_path / "images.npy"), output, "--center_only",
                          "--pretrained_model", str(tmp_path / "lenet_iter_150.caffemodel"))
    assert result.returncode == 0, result.stderr
    predictions = np.load(output)
    assert predictions.shape == (300, 10)
    np.testing.assert_allclose(predictions.sum(axis=1), 1.0, atol=1e-5)
    # Chance is 10%: a net that learned nothing, or mangled input, fails this.
    assert np.mean(predictions.argmax(axis=1) == labels) > 0.6
