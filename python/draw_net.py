#!/usr/bin/env python3
"""Draw a net's graph (a prototxt NetParameter) into an image file, in the format its
extension names, as BVLC Caffe's python/draw_net.py:

    python/draw_net.py models/lenet_fashion/train_val.prototxt lenet.png --phase TRAIN
"""
import os
import sys
from argparse import ArgumentDefaultsHelpFormatter, ArgumentParser

from google.protobuf import text_format

import caffe
import caffe.draw
from caffe.proto import caffe_pb2


def parse_args(argv=None):
    parser = ArgumentParser(description=__doc__, formatter_class=ArgumentDefaultsHelpFormatter)
    parser.add_argument("input_net_proto_file", help="the net, a NetParameter prototxt")
    parser.add_argument("output_image_file", help="the image to write (png, svg, pdf, ...)")
    parser.add_argument("--rankdir", default="LR",
                        help="graphviz's direction of the graph: LR (left to right), "
                             "TB (top to bottom), RL or BT")
    parser.add_argument("--phase", default="ALL", choices=["TRAIN", "TEST", "ALL"],
                        help="draw only the layers of this phase; ALL draws every layer")
    parser.add_argument("--display_lrm", action="store_true",
                        help="show the lr_mult and decay_mult of the learning layers")
    return parser.parse_args(argv)


def read_net(path):
    """The NetParameter in prototxt file `path`; a ValueError saying where it is wrong."""
    net = caffe_pb2.NetParameter()
    try:
        with open(path) as net_file:
            text_format.Merge(net_file.read(), net)
    except OSError as error:
        raise ValueError("%s: %s" % (path, error.strerror or error))
    except UnicodeDecodeError as error:
        raise ValueError("%s: not a text file (%s)" % (path, error.reason))
    except text_format.ParseError as error:
        # str(error) starts with the line:column it already carries.
        message = str(error)
        if error.GetLine() is not None:
            message = message.split(" : ", 1)[-1]
            where = ":".join(str(n) for n in (error.GetLine(), error.GetColumn()) if n)
            raise ValueError("%s:%s: %s" % (path, where, message))
        raise ValueError("%s: %s" % (path, message))
    return net


def main(argv=None):
    args = parse_args(argv)
    phase = {"TRAIN": caffe.TRAIN, "TEST": caffe.TEST, "ALL": None}[args.phase]
    program = os.path.basename(sys.argv[0])
    try:
        image_format = caffe.draw.image_format(args.output_image_file)
        net = read_net(args.input_net_proto_file)
    except ValueError as error:
        sys.exit("%s: %s" % (program, error))
    print("Drawing net to %s" % args.output_image_file)
    try:
        image = caffe.draw.draw_net(net, args.rankdir, image_format, phase, args.display_lrm)
        with open(args.output_image_file, "wb") as image_file:
            image_file.write(image)
    except ValueError as error:
        # What draw rejects here is the net itself, e.g. contradictory layer rules.
        sys.exit("%s: %s: %s" % (program, args.input_net_proto_file, error))
    except OSError as error:
        sys.exit("%s: %s: %s" % (program, error.filename or args.output_image_file,
                                 error.strerror or error))


if __name__ == "__main__":
    main()
