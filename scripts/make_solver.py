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
with no value removes it). Used by scripts/reproduce_*.sh.
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


_SYNC_ENTRY = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*:\s*("[^"]*"|[^\s}]+)')


def edit_sync(text, sets):
    """Applies "name: value" sets to the entries of a sync_param block's text."""
    entries = _SYNC_ENTRY.findall(text)
    changed = collections.OrderedDict()
    for item in sets:
        name, _, value = item.partition(":")
        changed.setdefault(name.strip(), []).append(value.strip())
    out = [(n, v) for n, v in entries if n not in changed]
    for name, values in changed.items():
        out.extend((name, v) for v in values if v != "")
    return " ".join("%s: %s" % entry for entry in out)


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
