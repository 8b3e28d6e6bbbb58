#!/usr/bin/env python3
"""Writes a copy of a net prototxt with data paths, batch sizes or layer widths changed.

    make_net.py BASE OUT [--path OLD=NEW]... [--batch SOURCE=B]... [--num-output LAYER=K]...

--path       replaces the quoted string "OLD" by "NEW" wherever it occurs (data
             sources, mean files)
--batch      sets batch_size in the layer whose data source is SOURCE (after --path)
--num-output sets num_output of the layer named LAYER
Every requested change must apply, or the script fails: a renamed layer or path in
the model then shows up instead of passing silently. Used by
scripts/reproduce_imagenet.sh to point models/* at generated databases.
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


def make_net(text, paths, batches, widths):
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
        text, n = edit_layers(text, lambda b, l=layer: re.search(r'\bname:\s*"%s"' % re.escape(l), b),
                              "num_output", width)
        if n == 0:
            raise SystemExit('error: no layer "%s" with a num_output' % layer)
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
    args = parser.parse_args(argv)
    with open(args.base) as f:
        text = f.read()
    text = make_net(text, _pairs(args.path, str), _pairs(args.batch, int),
                    _pairs(args.num_output, int))
    with open(args.out, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
