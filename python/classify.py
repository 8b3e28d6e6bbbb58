#!/usr/bin/env python3
"""Classifies images with caffe.Classifier and saves the class probabilities
(N x classes) with np.save. The input is an image file, a directory of images
(by --ext), or a .npy of images (N x H x W x K, or N x H x W for grey).

    python3 python/classify.py image.png out.npy --center_only --print_results

The defaults fit the Fashion-MNIST LeNet of models/lenet_fashion.
"""
import argparse
import glob
import os
import sys
import time

import numpy as np
from google.protobuf.message import DecodeError

import caffe

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class UserError(Exception):
    """A problem with the command's arguments or files: reported in one line."""


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("input_file", help="image file, directory of images, or .npy")
    parser.add_argument("output_file", help="where to np.save the probabilities")
    parser.add_argument("--model_def",
                        default=os.path.join(REPO, "models/lenet_fashion/deploy.prototxt"),
                        help="deploy prototxt (default: %(default)s)")
    parser.add_argument("--pretrained_model",
                        default=os.path.join(
                            REPO, "build/snapshots/lenet_fashion_iwp_iter_3000.caffemodel"),
                        help="trained weights (default: %(default)s)")
    parser.add_argument("--gpu", action="store_true", help="compute on the GPU")
    parser.add_argument("--center_only", action="store_true",
                        help="classify the centre crop only, instead of averaging 10 "
                             "crops (5 and their mirrors); better for nets trained "
                             "without mirroring, as the Fashion-MNIST LeNet was")
    parser.add_argument("--images_dim", default="28,28",
                        help="'height,width' images are resized to before cropping")
    parser.add_argument("--mean_file", default="",
                        help="mean to subtract: .npy (C x H x W) or .binaryproto; "
                             "'' for none")
    parser.add_argument("--input_scale", type=float,
                        help="multiply inputs by this after mean subtraction")
    parser.add_argument("--raw_scale", type=float,
                        help="multiply the [0, 1] images by this before mean subtraction")
    parser.add_argument("--channel_swap", default="",
                        help="net channel order, e.g. '2,1,0' for an RGB -> BGR net; "
                             "'' to keep the order")
    parser.add_argument("--ext", default="png",
                        help="extension of the images taken from an input directory")
    parser.add_argument("--labels_file",
                        help="class names, one a line: print each input's top class")
    parser.add_argument("--print_results", action="store_true",
                        help="print each input's top class and its probability")
    return parser.parse_args(argv)


def int_list(text, option):
    try:
        return [int(s) for s in text.split(",")]
    except ValueError:
        raise UserError("{}: expected comma-separated integers, found {!r}".format(
            option, text))


def require_file(path, what):
    if not os.path.isfile(path):
        raise UserError("{} {} does not exist".format(what, path))


def load_mean(path):
    require_file(path, "mean file")
    if path.endswith(".binaryproto"):
        try:
            with open(path, "rb") as f:
                mean = caffe.io.blobproto_to_array(
                    caffe.proto.caffe_pb2.BlobProto.FromString(f.read()))
        except (DecodeError, ValueError) as e:
            raise UserError("mean file {}: expected a BlobProto ({})".format(path, e))
        # compute_image_mean writes 1 x C x H x W.
        return mean[0] if mean.ndim == 4 else mean
    try:
        return np.load(path)
    except (OSError, ValueError) as e:
        raise UserError("mean file {}: expected a .npy array ({})".format(path, e))


def load_image(path, color):
    try:
        return caffe.io.load_image(path, color=color)
    except OSError as e:
        raise UserError("image {}: cannot be read ({})".format(path, e))


def load_inputs(path, ext, channels):
    """The input images (H x W x K float arrays; a uint8 .npy is scaled to [0, 1])
    and a name for each."""
    color = channels != 1
    if path.endswith(".npy"):
        try:
            images = np.load(path)
        except (OSError, ValueError) as e:
            raise UserError("input {}: expected a .npy array ({})".format(path, e))
        if images.ndim == 3:
            images = images[..., np.newaxis]
        if images.ndim != 4:
            raise UserError("input {}: expected N x H x W x K or N x H x W images, "
                            "found shape {}".format(path, images.shape))
        # uint8 pixels are read the way load_image reads image files.
        scale = 1 / 255.0 if images.dtype == np.uint8 else 1.0
        names = ["{}[{}]".format(path, i) for i in range(len(images))]
        return list(images.astype(np.float32) * scale), names
    if os.path.isdir(path):
        files = sorted(glob.glob(os.path.join(glob.escape(path), "*." + ext)))
        if not files:
            raise UserError("input directory {} has no *.{} images".format(path, ext))
    else:
        files = [path]
    return [load_image(f, color) for f in files], files


def print_results(predictions, names, labels):
    for name, probs in zip(names, predictions):
        top = int(np.argmax(probs))
        label = "\t" + labels[top] if labels else ""
        print("{}\t{}{}\t{:.4f}".format(name, top, label, probs[top]))


def read_labels(path, classes):
    require_file(path, "labels file")
    with open(path) as f:
        labels = [line.strip() for line in f if line.strip()]
    if len(labels) != classes:
        raise UserError("labels file {}: expected {} labels, found {}".format(
            path, classes, len(labels)))
    return labels


def main(argv):
    args = parse_args(argv)
    image_dims = int_list(args.images_dim, "--images_dim")
    if len(image_dims) != 2:
        raise UserError("--images_dim: expected 'height,width', found {!r}".format(
            args.images_dim))
    channel_swap = int_list(args.channel_swap, "--channel_swap") if args.channel_swap else None
    mean = load_mean(args.mean_file) if args.mean_file else None
    input_file = os.path.expanduser(args.input_file)
    if not os.path.exists(input_file):
        raise UserError("input {} does not exist".format(input_file))
    require_file(args.model_def, "model definition")
    require_file(args.pretrained_model, "pretrained model")

    if args.gpu:
        caffe.set_mode_gpu()
        print("GPU mode")
    else:
        caffe.set_mode_cpu()
        print("CPU mode")

    try:
        classifier = caffe.Classifier(args.model_def, args.pretrained_model,
                                      image_dims=image_dims, mean=mean,
                                      input_scale=args.input_scale, raw_scale=args.raw_scale,
                                      channel_swap=channel_swap)
    except ValueError as e:
        raise UserError(str(e))
    except RuntimeError as e:
        raise UserError("net {}: {}".format(args.model_def, " ".join(str(e).split())))
    channels = classifier.blobs[classifier.inputs[0]].data.shape[1]
    classes = classifier.blobs[classifier.outputs[0]].data.size // \
        classifier.blobs[classifier.outputs[0]].data.shape[0]
    labels = read_labels(args.labels_file, classes) if args.labels_file else None

    print("Loading {}".format(input_file))
    inputs, names = load_inputs(input_file, args.ext, channels)
    for name, im in zip(names, inputs):
        if im.shape[2] != channels:
            raise UserError("{}: expected {} channel(s) for the net, found {}".format(
                name, channels, im.shape[2]))

    print("Classifying {} inputs.".format(len(inputs)))
    start = time.time()
    predictions = classifier.predict(inputs, not args.center_only)
    print("Done in {:.2f} s.".format(time.time() - start))
    if args.print_results or labels:
        print_results(predictions, names, labels)

    print("Saving results into {}".format(args.output_file))
    np.save(args.output_file, predictions)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except UserError as e:
        print("classify.py: error: {}".format(e), file=sys.stderr)
        sys.exit(1)
