#!/usr/bin/env python3
"""Writes a copy of a net prototxt with data paths, batch sizes, layer widths or
BatchNorm layers changed.

    make_net.py BASE OUT [--path OLD=NEW]... [--batch SOURCE=B]... [--num-output LAYER=K]...
                [--batchnorm-after LAYER]...

--path            replaces the quoted string "OLD" by "NEW" wherever it occurs (data
                  sources, mean files)
--batch           sets batch_size in the layer whose data source is SOURCE (after --path)
--num-output      sets num_output of the layer named LAYER
--batchnorm-after puts a BatchNorm (moving_average_fraction 0.9, as in
                  models/resnet20_fashion) and a Scale with a bias in place on the top of the
                  Convolution or InnerProduct layer LAYER, and drops LAYER's own bias,
                  which BatchNorm would cancel (as the BatchNorm ResNets do)
Every requested change must apply, or the script fails: a renamed layer or path in
the model then shows up instead of passing silently. Used by
scripts/reproduce_imagenet.sh to point models/* at generated databases, and by
scripts/reproduce_iwp_full.sh for LeNet with BatchNorm.
"""

import argparse
import re
import sys


def layer_spans(text):
    """(start, end) of every top-level `layer { ... }` block."""
    spans = []
    for m in re.finditer(r"(?m)^layer\s*\{", text):
        depth, i = 0, m.start()
        while i < len(text):
            c = text[i]
            if c == "#":
                i = text.find("\n", i)
                if i < 0:
                    break
                continue
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    spans.append((m.start(), i + 1))
                    break
            i += 1
    return spans


def edit_layers(text, predicate, field, value):
    """Sets `field: value` in every layer for which predicate(layer_text) holds;
    returns (new text, number of layers changed)."""
    pieces, last, changed = [], 0, 0
    for start, end in layer_spans(text):
        block = text[start:end]
        if predicate(block):
            block, n = re.subn(r"(\b%s:\s*)\d+" % field, r"\g<1>%d" % value, block)
            if n:
                changed += 1
        pieces += [text[last:start], block]
        last = end
    pieces.append(text[last:])
    return "".join(pieces), changed


def is_named(block, layer):
    return re.search(r'\bname:\s*"%s"' % re.escape(layer), block) is not None


def named_layer(text, layer):
    """(start, end) of the layer named LAYER, or None."""
    for start, end in layer_spans(text):
        if is_named(text[start:end], layer):
            return start, end
    return None


def with_batchnorm_after(text, layer):
    span = named_layer(text, layer)
    if span is None:
        raise SystemExit('error: --batchnorm-after: no layer "%s"' % layer)
    start, end = span
    block = text[start:end]
    kind = re.search(r'\btype:\s*"(Convolution|InnerProduct)"', block)
    tops = re.findall(r'\btop:\s*"([^"]+)"', block)
    if not kind or len(tops) != 1:
        raise SystemExit('error: --batchnorm-after: layer "%s" must be a Convolution or '
                         'InnerProduct with one top' % layer)
    params = list(re.finditer(r"\n[ \t]*param\s*\{[^{}]*\}", block))
    if len(params) > 1:  # the bias's param (lr_mult, decay_mult) goes with the bias
        block = block[:params[1].start()] + block[params[1].end():]
    block = re.sub(r"\n[ \t]*bias_filler\s*\{[^{}]*\}", "", block)
    block, n = re.subn(r"\bbias_term:\s*\w+", "bias_term: false", block)
    if n == 0:
        block, n = re.subn(r"(\b(?:convolution|inner_product)_param\s*\{)",
                           r"\1\n    bias_term: false", block, count=1)
    if n != 1:
        raise SystemExit('error: --batchnorm-after: layer "%s" has no %s_param block'
                         % (layer, "convolution" if kind.group(1) == "Convolution" else "inner_product"))
    top = tops[0]
    added = ('\nlayer {\n  name: "%s_bn"\n  type: "BatchNorm"\n  bottom: "%s"\n  top: "%s"\n'
             '  batch_norm_param { moving_average_fraction: 0.9 }\n}\n'
             'layer {\n  name: "%s_scale"\n  type: "Scale"\n  bottom: "%s"\n  top: "%s"\n'
             '  scale_param { bias_term: true }\n}' % (layer, top, top, layer, top, top))
    return text[:start] + block + added + text[end:]


def make_net(text, paths, batches, widths, batchnorm_after=()):
    for old, new in paths:
        quoted = '"%s"' % old
        if quoted not in text:
            raise SystemExit('error: path "%s" does not occur in the net' % old)
        text = text.replace(quoted, '"%s"' % new)
    for source, batch in batches:
        text, n = edit_layers(text, lambda b, s=source: 'source: "%s"' % s in b, "batch_size", batch)
        if n == 0:
            raise SystemExit('error: no layer reads source "%s" with a batch_size' % source)
    for layer, width in widths:
        text, n = edit_layers(text, lambda b, l=layer: is_named(b, l),
                              "num_output", width)
        if n == 0:
            raise SystemExit('error: no layer "%s" with a num_output' % layer)
    for layer in batchnorm_after:
        text = with_batchnorm_after(text, layer)
    return text


def _pairs(items, convert):
    out = []
    for item in items:
        if "=" not in item:
            raise SystemExit("error: expected KEY=VALUE, found %r" % item)
        key, value = item.split("=", 1)
        out.append((key, convert(value)))
    return out


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("base")
    parser.add_argument("out")
    parser.add_argument("--path", action="append", default=[], help="OLD=NEW")
    parser.add_argument("--batch", action="append", default=[], help="SOURCE=BATCH")
    parser.add_argument("--num-output", action="append", default=[], help="LAYER=K")
    parser.add_argument("--batchnorm-after", action="append", default=[], metavar="LAYER")
    args = parser.parse_args(argv)
    with open(args.base) as f:
        text = f.read()
    text = make_net(text, _pairs(args.path, str), _pairs(args.batch, int),
                    _pairs(args.num_output, int), args.batchnorm_after)
    with open(args.out, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
