#!/usr/bin/env bash
# Runs BVLC Caffe's own Python test suite (python/caffe/test of a BVLC Caffe checkout)
# against this repository's pycaffe, to check that BVLC-style scripts run unchanged.
# BVLC's files stay outside this repository: give the checkout's path.
#
#   scripts/bvlc_python_tests.sh /path/to/BVLC/caffe [pytest args...]
#
# The tests run from a temporary copy of the checkout's python/caffe/test, models/ and
# examples/ (test_draw.py draws every net prototxt under those two), with this
# repository's python/ first on PYTHONPATH, so the BVLC checkout's own caffe package
# is never imported. Needs the pycaffe build (scripts/test.sh or cmake --build build).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 BVLC_CAFFE_CHECKOUT [pytest args...]" >&2; exit 2; }
bvlc="$1"
shift
[ -d "$bvlc/python/caffe/test" ] || {
  echo "error: $bvlc: no python/caffe/test (not a BVLC Caffe checkout)" >&2; exit 2; }
ls python/caffe/_caffe*.so >/dev/null 2>&1 || {
  echo "error: python/caffe has no built _caffe module: build first (scripts/test.sh)" >&2; exit 2; }
copy="$(mktemp -d)"
trap 'rm -rf "$copy"' EXIT
mkdir -p "$copy/python/caffe"
cp -r "$bvlc/python/caffe/test" "$copy/python/caffe/"
for tree in models examples; do
  [ -d "$bvlc/$tree" ] && cp -r "$bvlc/$tree" "$copy/"
done
PYTHONPATH="$PWD/python" /usr/bin/python3 -m pytest -q -p no:cacheprovider \
  "$copy/python/caffe/test" "$@"
