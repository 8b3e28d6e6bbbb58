#!/usr/bin/env python3
"""Top-1 of saved weights on the whole Fashion-MNIST test set and on each rank's
share of it, through pycaffe:

    PYTHONPATH=python /usr/bin/python3 results/iwp_explore/eval_test_set.py \\
        models/resnet20_fashion/train_val.prototxt W.caffemodel --ranks 4

Until commit "test passes read every record", a multi-rank run's test score was
rank 0's: the TEST Data layer kept records i with i mod N = 0 (2500 of the 10k
images at N = 4). The share column reproduces those scores, so that new runs can be
set beside the old table rows.
"""
import argparse
import gzip
import os

import numpy as np

import caffe

FASHION = "/usr/share/datasets/fashion-mnist"


def load_test_set():
    with gzip.open(os.path.join(FASHION, "t10k-images-idx3-ubyte.gz")) as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)
    with gzip.open(os.path.join(FASHION, "t10k-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)
    return images, labels


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("net", help="train_val prototxt (its TEST net is used)")
    parser.add_argument("weights", help=".caffemodel")
    parser.add_argument("--ranks", type=int, default=4, help="shares to score too")
    args = parser.parse_args()
    caffe.init_log(2)
    net = caffe.Net(args.net, args.weights, caffe.TEST)
    accuracy_layer = next(name for name, layer in net.layer_dict.items()
                          if layer.type == "Accuracy")
    scores_blob = net.bottom_names[accuracy_layer][0]
    batch = net.blobs["data"].data.shape[0]
    images, labels = load_test_set()
    # The TEST Data layer's transform: scale 1/256, no mean, no crop.
    scale = 0.00390625
    correct = np.zeros(len(labels), bool)
    first_after_data = net._layer_names[1]
    for start in range(0, len(labels), batch):
        net.blobs["data"].data[...] = images[start:start + batch] * scale
        net.blobs["label"].data[...] = labels[start:start + batch]
        net.forward(start=first_after_data)
        predicted = net.blobs[scores_blob].data.reshape(batch, -1).argmax(axis=1)
        correct[start:start + batch] = predicted == labels[start:start + batch]
    shares = ", ".join(f"rank {r}: {100 * correct[r::args.ranks].mean():.2f}"
                       for r in range(args.ranks))
    print(f"{args.weights}: whole test set {100 * correct.mean():.2f}% "
          f"({len(labels)} images); shares of {args.ranks}: {shares}")


if __name__ == "__main__":
    main()
