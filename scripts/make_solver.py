#!/usr/bin/env python3
"""Writes a solver prototxt: a base solver with top-level fields replaced and a
sync_param block added.

    make_solver.py BASE OUT [FIELD=VALUE ...] [--sync "method: IWP density: 0.015625"]
                   [--sync-set "method: DENSE" ...]

FIELD=VALUE replaces every top-level line of FIELD in BASE (give a repeated field,
e.g. stepvalue, once per value); FIELD= with nothing after it removes the field.
VALUE is written verbatim, so strings carry their quotes: 'net="models/x.prototxt"'.
Only top-level scalar lines are matched; a sync_param block in BASE is replaced
by --sync. --sync-set "name: value" instead edits BASE's block (or --sync's): it
replaces every entry of that field (give a repeated field once per value; "name:"
with no value removes it); "iwp_param.leader: PER_LAYER" edits a field of a
sub-message. Used by scripts/reproduce_*.sh.
"""

import argparse
import collections
import re
import sys

_TOP_LEVEL_FIELD = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*:")


def split_block(lines, name):
    """Splits off every top-level `name { ... }` block (braces counted, comments
    ignored): returns the lines outside them and the first block's contents ("" if
    there is none)."""
    outside, contents, depth, blocks = [], [], 0, 0
    for line in lines:
        code = line.split("#", 1)[0]
        if depth == 0:
            if not re.match(r"^\s*%s\s*\{" % name, code):
                outside.append(line)
                continue
            blocks += 1
            code = code.split("{", 1)[1]
            depth = 1
        depth += code.count("{") - code.count("}")
        if blocks == 1:
            contents.append(code.rsplit("}", 1)[0] if depth <= 0 else code)
        depth = max(depth, 0)
    return outside, " ".join(contents)


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|[{}:]|[^\s{}:"\']+')


def parse_entries(text):
    """A block's text as [(name, value)], where a value is a string or, for a
    sub-message (`iwp_param { leader: PER_STEP }`), the list of its own entries."""
    tokens = _TOKEN.findall(text)
    stack, pos = [[]], 0
    while pos < len(tokens):
        token = tokens[pos]
        if token == "}":
            done = stack.pop()
            stack[-1][-1] = (stack[-1][-1][0], done)
            pos += 1
            continue
        name = token
        pos += 1
        if pos < len(tokens) and tokens[pos] == ":":
            pos += 1
        if pos < len(tokens) and tokens[pos] == "{":
            stack[-1].append((name, None))
            stack.append([])
            pos += 1
        else:
            stack[-1].append((name, tokens[pos]))
            pos += 1
    return stack[0]


def render_entries(entries):
    return " ".join("%s { %s }" % (n, render_entries(v)) if isinstance(v, list) else "%s: %s" % (n, v)
                    for n, v in entries)


def edit_sync(text, sets):
    """Applies "name: value" sets to a sync_param block's text. A name may reach into a
    sub-message with a dot: "iwp_param.leader: PER_LAYER"."""
    entries = parse_entries(text)
    changed = collections.OrderedDict()
    for item in sets:
        name, _, value = item.partition(":")
        changed.setdefault(name.strip(), []).append(value.strip())

    def apply(block, path, values):
        head, _, rest = path.partition(".")
        if rest:
            inner = next((v for n, v in block if n == head and isinstance(v, list)), None)
            if inner is None:
                inner = []
                block.append((head, inner))
            apply(inner, rest, values)
            if not inner:
                block[:] = [(n, v) for n, v in block if not (n == head and v == [])]
            return
        block[:] = [(n, v) for n, v in block if n != head]
        block.extend((head, v) for v in values if v != "")

    for path, values in changed.items():
        apply(entries, path, values)
    return render_entries(entries)


def make_solver(base_text, overrides, sync, sync_sets=()):
    lines = base_text.splitlines()
    outside, base_sync = split_block(lines, "sync_param")
    if sync_sets:
        sync = edit_sync(sync if sync is not None else base_sync, sync_sets)
    if sync is not None:
        lines = outside
    out = []
    placed = set()
    for line in lines:
        m = _TOP_LEVEL_FIELD.match(line)
        if m and m.group(1) in overrides:
            field = m.group(1)
            if field not in placed:
                out.extend("%s: %s" % (field, v) for v in overrides[field] if v != "")
                placed.add(field)
            continue
        out.append(line)
    extra = [f for f in overrides if f not in placed]
    if extra:
        out.append("# ---- set by %s" % "scripts/make_solver.py")
        for field in extra:
            out.extend("%s: %s" % (field, v) for v in overrides[field] if v != "")
    if sync is not None:
        out.append("sync_param { %s }" % sync.strip())
    return "\n".join(out) + "\n"


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("base")
    parser.add_argument("out")
    parser.add_argument("fields", nargs="*", help="FIELD=VALUE")
    parser.add_argument("--sync", help="contents of the sync_param block")
    parser.add_argument("--sync-set", action="append", default=[],
                        help='"name: value": edits one field of the sync_param block')
    args = parser.parse_args(argv)
    overrides = collections.OrderedDict()
    for item in args.fields:
        if "=" not in item:
            parser.error("expected FIELD=VALUE, found %r" % item)
        field, value = item.split("=", 1)
        overrides.setdefault(field.strip(), []).append(value.strip())
    with open(args.base) as f:
        text = make_solver(f.read(), overrides, args.sync, args.sync_set)
    with open(args.out, "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
