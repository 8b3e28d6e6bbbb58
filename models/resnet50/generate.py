#!/usr/bin/env python3
"""Writes models/resnet50/train_val.prototxt: ResNet-50 (He et al., 2015) for ImageNet.

Layout and layer names follow the original MSRA release (conv1, bn_conv1, scale_conv1,
res2a_branch2a, bn2a_branch2a, ...), so weights saved by that release map onto these
layers by name. Every convolution is followed by BatchNorm (statistics only) and Scale
(learned gamma and beta), so convolutions carry no bias. Bottleneck blocks downsample in
their first 1x1 convolution, as in the original; the first block of every stage has a
1x1 projection shortcut (option B), the others an identity shortcut.

Run from anywhere; the output lands next to this script:
    python3 models/resnet50/generate.py
"""
import os

# (stage name, blocks, bottleneck width, output width, stride of the first block)
STAGES = [
    ("2", 3, 64, 256, 1),
    ("3", 4, 128, 512, 2),
    ("4", 6, 256, 1024, 2),
    ("5", 3, 512, 2048, 2),
]
TRAIN_BATCH = 32       # per rank; the solver's iter_size 8 makes the reference 256
TEST_BATCH = 50        # 1000 x 50 = the 50k validation images
SYNTHETIC_BATCH = 8    # small enough for `caffe time` on a 2-core CPU
CROP = 224
CLASSES = 1000
BGR_MEAN = (104, 117, 123)


def block(name, *lines):
    """One `layer { ... }` entry; nested messages are given as pre-indented lines."""
    body = "\n".join("  " + line for line in lines)
    return "layer {\n  name: \"%s\"\n%s\n}" % (name, body)


def data_layers():
    real = []
    for phase, source, batch, mirror in (
            ("TRAIN", "data/imagenet/ilsvrc12_train_lmdb", TRAIN_BATCH, "true"),
            ("TEST", "data/imagenet/ilsvrc12_val_lmdb", TEST_BATCH, "false")):
        real.append(block(
            "data",
            'type: "Data"', 'top: "data"', 'top: "label"',
            'include { phase: %s not_stage: "synthetic" }' % phase,
            "transform_param {",
            "  mirror: %s" % mirror,
            "  crop_size: %d" % CROP,
            *["  mean_value: %d" % v for v in BGR_MEAN],
            "}",
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
        "  shape { dim: %d dim: 3 dim: %d dim: %d }" % (SYNTHETIC_BATCH, CROP, CROP),
        "  shape { dim: %d }" % SYNTHETIC_BATCH,
        "  # mean-subtracted pixels are roughly centred on zero",
        '  data_filler { type: "uniform" min: -128 max: 128 }',
        '  data_filler { type: "uniform" min: 0 max: %.3f }' % (CLASSES - 0.001),
        "}")
    return real + [synthetic]


def conv_bn(bottom, conv_name, bn_suffix, num_output, kernel, stride, relu):
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
        # An empty batch_norm_param: batch statistics in TRAIN, running averages in TEST.
        block("bn" + bn_suffix,
              'type: "BatchNorm"', 'bottom: "%s"' % conv_name, 'top: "%s"' % conv_name,
              "batch_norm_param {}"),
        block("scale" + bn_suffix,
              'type: "Scale"', 'bottom: "%s"' % conv_name, 'top: "%s"' % conv_name,
              "scale_param { bias_term: true }"),
    ]
    if relu:
        layers.append(block(conv_name + "_relu",
                            'type: "ReLU"', 'bottom: "%s"' % conv_name,
                            'top: "%s"' % conv_name))
    return layers


def bottleneck(bottom, stage, letter, width, out_width, stride, project):
    res = "res%s%s" % (stage, letter)
    tag = "%s%s" % (stage, letter)
    layers = []
    shortcut = bottom
    if project:
        layers += conv_bn(bottom, res + "_branch1", tag + "_branch1", out_width, 1, stride, False)
        shortcut = res + "_branch1"
    layers += conv_bn(bottom, res + "_branch2a", tag + "_branch2a", width, 1, stride, True)
    layers += conv_bn(res + "_branch2a", res + "_branch2b", tag + "_branch2b", width, 3, 1, True)
    layers += conv_bn(res + "_branch2b", res + "_branch2c", tag + "_branch2c", out_width, 1, 1,
                      False)
    layers.append(block(res,
                        'type: "Eltwise"', 'bottom: "%s"' % shortcut,
                        'bottom: "%s_branch2c"' % res, 'top: "%s"' % res,
                        "eltwise_param { operation: SUM }"))
    layers.append(block(res + "_relu", 'type: "ReLU"', 'bottom: "%s"' % res, 'top: "%s"' % res))
    return layers, res


def net():
    layers = data_layers()
    layers += conv_bn("data", "conv1", "_conv1", 64, 7, 2, True)
    layers.append(block("pool1", 'type: "Pooling"', 'bottom: "conv1"', 'top: "pool1"',
                        "pooling_param { pool: MAX kernel_size: 3 stride: 2 }"))
    top = "pool1"
    for stage, count, width, out_width, stride in STAGES:
        for i in range(count):
            block_layers, top = bottleneck(top, stage, "abcdef"[i], width, out_width,
                                           stride if i == 0 else 1, project=(i == 0))
            layers += block_layers
    layers.append(block("pool5", 'type: "Pooling"', 'bottom: "%s"' % top, 'top: "pool5"',
                        "pooling_param { pool: AVE global_pooling: true }"))
    layers.append(block("fc1000",
                        'type: "InnerProduct"', 'bottom: "pool5"', 'top: "fc1000"',
                        "param { lr_mult: 1 decay_mult: 1 }",
                        "param { lr_mult: 2 decay_mult: 0 }",
                        "inner_product_param {",
                        "  num_output: %d" % CLASSES,
                        '  weight_filler { type: "gaussian" std: 0.01 }',
                        '  bias_filler { type: "constant" value: 0 }',
                        "}"))
    layers.append(block("loss", 'type: "SoftmaxWithLoss"', 'bottom: "fc1000"',
                        'bottom: "label"', 'top: "loss"'))
    layers.append(block("accuracy_top1", 'type: "Accuracy"', 'bottom: "fc1000"',
                        'bottom: "label"', 'top: "accuracy_top1"',
                        "include { phase: TEST }"))
    layers.append(block("accuracy_top5", 'type: "Accuracy"', 'bottom: "fc1000"',
                        'bottom: "label"', 'top: "accuracy_top5"',
                        "include { phase: TEST }", "accuracy_param { top_k: 5 }"))
    header = (
        "# ResNet-50 for ImageNet (ILSVRC-2012, 1000 classes). GENERATED by generate.py in\n"
        "# this folder: edit that script, not this file.\n"
        "# The \"synthetic\" stage swaps the LMDB Data layers for DummyData (batch %d):\n"
        "#   build/tools/caffe time -model models/resnet50/train_val.prototxt -stage synthetic\n"
        'name: "ResNet-50"\n' % SYNTHETIC_BATCH)
    return header + "\n".join(layers) + "\n"


if __name__ == "__main__":
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "train_val.prototxt")
    with open(out, "w") as f:
        f.write(net())
    print("wrote", out)
