#!/usr/bin/env python3
"""Writes models/resnet20_fashion/train_val.prototxt: ResNet-20 for Fashion-MNIST.

The CIFAR ResNet-20 of He et al. (2015, section 4.2): a 3x3 convolution with 16
filters, then three stages of three basic blocks (two 3x3 convolutions each) with 16,
32 and 64 channels, global average pooling and a 10-way classifier; 6n+2 = 20 layers
with n = 3. Stages 2 and 3 halve the resolution in their first convolution and use a
1x1 convolution as the shortcut there (option B); every other shortcut is the identity.
Each convolution is followed by BatchNorm + Scale, so convolutions carry no bias.
Fashion-MNIST is 1x28x28, so the feature maps are 28, 14 and 7 pixels wide.

Run from anywhere; the output lands next to this script:
    python3 models/resnet20_fashion/generate.py
"""
import os

BLOCKS_PER_STAGE = 3
STAGE_WIDTHS = (16, 32, 64)
TRAIN_BATCH = 64
TEST_BATCH = 100        # test_iter 100 x 100 = the whole 10k test set
SYNTHETIC_BATCH = 64
CLASSES = 10


def block(name, *lines):
    """One `layer { ... }` entry; nested messages are given as pre-indented lines."""
    body = "\n".join("  " + line for line in lines)
    return "layer {\n  name: \"%s\"\n%s\n}" % (name, body)


def data_layers():
    real = []
    for phase, source, batch, mirror in (
            ("TRAIN", "data/fashion_mnist/train_lmdb", TRAIN_BATCH, " mirror: true"),
            ("TEST", "data/fashion_mnist/test_lmdb", TEST_BATCH, "")):
        real.append(block(
            "data",
            'type: "Data"', 'top: "data"', 'top: "label"',
            'include { phase: %s not_stage: "synthetic" }' % phase,
            # 1/256 maps the 0..255 pixels to [0, 1).
            "transform_param { scale: 0.00390625%s }" % mirror,
            "data_param {",
            '  source: "%s"' % source,
            "  batch_size: %d" % batch,
            "  backend: LMDB",
            "}"))
    synthetic = block(
        "data",
        'type: "DummyData"', 'top: "data"', 'top: "label"',
        'include { stage: "synthetic" }',
        "dummy_data_param {",
        "  shape { dim: %d dim: 1 dim: 28 dim: 28 }" % SYNTHETIC_BATCH,
        "  shape { dim: %d }" % SYNTHETIC_BATCH,
        '  data_filler { type: "uniform" min: 0 max: 1 }',
        '  data_filler { type: "uniform" min: 0 max: %.3f }' % (CLASSES - 0.001),
        "}")
    return real + [synthetic]


def conv_bn(bottom, conv_name, num_output, kernel, stride, relu):
    """Convolution (no bias) + BatchNorm + Scale (+ ReLU), the last three in place."""
    layers = [
        block(conv_name,
              'type: "Convolution"', 'bottom: "%s"' % bottom, 'top: "%s"' % conv_name,
              "param { lr_mult: 1 decay_mult: 1 }",
              "convolution_param {",
              "  num_output: %d" % num_output,
              "  kernel_size: %d" % kernel,
              "  pad: %d" % (kernel // 2),
              "  stride: %d" % stride,
              "  bias_term: false",
              '  weight_filler { type: "msra" }',
              "}"),
        # Batch statistics in TRAIN, running averages in TEST. Caffe's default averaging
        # (0.999, a window of ~1000 iterations) lags far behind the weights while the
        # rate is 0.1: the TEST net then scored 10% at iteration 2000 while the same
        # weights with batch statistics scored 88%. 0.9 (PyTorch's default momentum)
        # follows the weights.
        block(conv_name + "_bn",
              'type: "BatchNorm"', 'bottom: "%s"' % conv_name, 'top: "%s"' % conv_name,
              "batch_norm_param { moving_average_fraction: 0.9 }"),
        block(conv_name + "_scale",
              'type: "Scale"', 'bottom: "%s"' % conv_name, 'top: "%s"' % conv_name,
              "scale_param { bias_term: true }"),
    ]
    if relu:
        layers.append(block(conv_name + "_relu",
                            'type: "ReLU"', 'bottom: "%s"' % conv_name,
                            'top: "%s"' % conv_name))
    return layers


def basic_block(bottom, name, width, stride, project):
    layers = []
    shortcut = bottom
    if project:
        layers += conv_bn(bottom, name + "_proj", width, 1, stride, False)
        shortcut = name + "_proj"
    layers += conv_bn(bottom, name + "_conv1", width, 3, stride, True)
    layers += conv_bn(name + "_conv1", name + "_conv2", width, 3, 1, False)
    layers.append(block(name,
                        'type: "Eltwise"', 'bottom: "%s"' % shortcut,
                        'bottom: "%s_conv2"' % name, 'top: "%s"' % name,
                        "eltwise_param { operation: SUM }"))
    layers.append(block(name + "_relu", 'type: "ReLU"', 'bottom: "%s"' % name,
                        'top: "%s"' % name))
    return layers, name


def net():
    layers = data_layers()
    layers += conv_bn("data", "conv1", STAGE_WIDTHS[0], 3, 1, True)
    top, channels = "conv1", STAGE_WIDTHS[0]
    for stage, width in enumerate(STAGE_WIDTHS, start=1):
        for i in range(BLOCKS_PER_STAGE):
            stride = 2 if (i == 0 and stage > 1) else 1
            project = stride != 1 or channels != width
            block_layers, top = basic_block(top, "res%d%s" % (stage, "abc"[i]), width, stride,
                                            project)
            layers += block_layers
            channels = width
    layers.append(block("pool", 'type: "Pooling"', 'bottom: "%s"' % top, 'top: "pool"',
                        "pooling_param { pool: AVE global_pooling: true }"))
    layers.append(block("fc10",
                        'type: "InnerProduct"', 'bottom: "pool"', 'top: "fc10"',
                        "param { lr_mult: 1 decay_mult: 1 }",
                        "param { lr_mult: 2 decay_mult: 0 }",
                        "inner_product_param {",
                        "  num_output: %d" % CLASSES,
                        '  weight_filler { type: "msra" }',
                        '  bias_filler { type: "constant" value: 0 }',
                        "}"))
    layers.append(block("accuracy", 'type: "Accuracy"', 'bottom: "fc10"', 'bottom: "label"',
                        'top: "accuracy"', "include { phase: TEST }"))
    layers.append(block("loss", 'type: "SoftmaxWithLoss"', 'bottom: "fc10"',
                        'bottom: "label"', 'top: "loss"'))
    header = (
        "# ResNet-20 (CIFAR layout) for Fashion-MNIST (1x28x28, 10 classes). GENERATED by\n"
        "# generate.py in this folder: edit that script, not this file.\n"
        "# The \"synthetic\" stage swaps the LMDB Data layers for DummyData (batch %d):\n"
        "#   build/tools/caffe time -model models/resnet20_fashion/train_val.prototxt"
        " -stage synthetic\n"
        'name: "ResNet20Fashion"\n' % SYNTHETIC_BATCH)
    return header + "\n".join(layers) + "\n"


if __name__ == "__main__":
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "train_val.prototxt")
    with open(out, "w") as f:
        f.write(net())
    print("wrote", out)
