#!/usr/bin/env python3
"""Fails when a source file includes a header of a part it may not depend on.

The parts and their allowed dependencies come from CMakeLists.txt (caffe_part), so
the build's link graph and this include check cannot drift apart:

    check_layering.py ROOT "util: core:util data:core,util ..."

A part may include its own headers, the schema (caffe/proto), and the headers of the
parts it depends on, directly or through them. The link check (layering_check_*)
catches calls into a higher part; this catches header-only back-edges (an enum, an
inline function) that link fine. One narrowing from docs/design.md section 8: the exchange
sees flat parameter buffers, so sync and the exchange methods (exchanges) may take Blob
and SyncedMemory from core but never a Layer or a Net.

A second rule keeps the transport wired in one place (docs/design.md section 4): outside
the communicators themselves and transport.{hpp,cpp}, no sync or exchanges file
constructs a communicator, compares a backend's name or casts a Communicator to its
backend.
"""
import os
import re
import sys

SYNC_MAY_USE_FROM_CORE = {"blob.hpp", "syncedmem.hpp", "common.hpp"}
# The parts that hold the exchange: the framework (sync) and the methods (exchanges).
EXCHANGE_PARTS = {"sync", "exchanges"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"(caffe/[^"]+|support/[^"]+)"')
# Files of the sync part that may make communicators and know their backends.
TRANSPORT_FILES = re.compile(r"(^|_)communicator\.(hpp|cpp|cu)$|^transport\.(hpp|cpp)$")
TRANSPORT_LEAKS = [
    (re.compile(r"\bmake_(shared|unique)\s*<\s*\w*Communicator\s*>|\bnew\s+\w*Communicator\b"),
     "constructs a communicator (take it from the Transport)"),
    (re.compile(r"\bbackend\s*\(\s*\)\s*[!=]="), "compares a backend's name (ask memory())"),
    (re.compile(r"\bdynamic_cast\s*<\s*\w*Communicator\b"), "casts a Communicator to its backend"),
]


def part_of_header(header):
    """The part that owns an include path such as caffe/exchanges/iwp_exchange.hpp."""
    if header.startswith("support/"):
        return "tool_support"
    rest = header[len("caffe/"):]
    if rest.startswith("proto/"):
        return "schema"
    if "/" in rest:
        return rest.split("/", 1)[0]
    return "solvers" if rest == "solver.hpp" else "core"


def part_of_file(rel):
    """The part of a file under include/caffe, src/caffe or tools/support; None above."""
    if rel.startswith("tools/support/"):
        return "tool_support"
    for root in ("include/caffe/", "src/caffe/"):
        if rel.startswith(root):
            rest = rel[len(root):]
            if "/" in rest:
                return rest.split("/", 1)[0]
            return "solvers" if rest.startswith("solver.") else "core"
    return None


def reachable(graph, part):
    seen, stack = set(), [part]
    while stack:
        for dep in graph.get(stack.pop(), ()):
            if dep not in seen:
                seen.add(dep)
                stack.append(dep)
    return seen


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: check_layering.py ROOT 'part:dep,dep part:...'")
    root = sys.argv[1]
    graph = {}
    for entry in re.split(r"[;\s]+", " ".join(sys.argv[2:])):
        if not entry:
            continue
        name, _, deps = entry.partition(":")
        graph[name] = [d for d in deps.split(",") if d]
    allowed = {p: reachable(graph, p) | {p, "schema"} for p in graph}

    problems, checked = [], 0
    for top in ("include/caffe", "src/caffe", "tools/support"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                rel = os.path.relpath(os.path.join(dirpath, name), root)
                part = part_of_file(rel)
                if part is None or not name.endswith((".hpp", ".cpp", ".cu", ".cuh")):
                    continue
                if part not in allowed:
                    problems.append(f"{rel}: part '{part}' is not declared in CMakeLists.txt")
                    continue
                checked += 1
                watch_transport = part in EXCHANGE_PARTS and not TRANSPORT_FILES.search(name)
                with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
                    for line_no, line in enumerate(f, 1):
                        if watch_transport:
                            code = line.split("//", 1)[0]
                            for pattern, what in TRANSPORT_LEAKS:
                                if pattern.search(code):
                                    problems.append(f"{rel}:{line_no}: {what}")
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        header = m.group(1)
                        owner = part_of_header(header)
                        if owner not in allowed[part]:
                            problems.append(f"{rel}:{line_no}: part '{part}' includes {header} "
                                            f"of part '{owner}', which it does not depend on")
                        elif (part in EXCHANGE_PARTS and owner == "core" and
                              os.path.basename(header) not in SYNC_MAY_USE_FROM_CORE):
                            problems.append(f"{rel}:{line_no}: {part} includes {header}; the "
                                            f"exchange may take only Blob and SyncedMemory "
                                            f"from core")
    for p in problems:
        print(p)
    if problems:
        sys.exit(1)
    if checked == 0:
        sys.exit(f"no source files found under {root}")
    print(f"check_layering: {checked} files, no include against the part graph, "
          f"the transport made in one place")


if __name__ == "__main__":
    main()
