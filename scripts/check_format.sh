#!/usr/bin/env bash
# Checks that the C++ and CUDA lines changed since .clang-format arrived follow it
# (git clang-format over the diff from that commit to the working tree): new code
# follows the style, old code is left as it is until it is touched. Prints the
# reformatting it wants and exits 1 where a changed line does not follow it.
#   scripts/check_format.sh [BASE]      BASE: the commit to diff from (default: the
#                                       one that added .clang-format)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v git-clang-format >/dev/null 2>&1 || command -v git-clang-format-14 >/dev/null 2>&1 ||
  { echo "error: check_format: git-clang-format not found (the clang-format package)"; exit 2; }
tool="$(command -v git-clang-format || command -v git-clang-format-14)"
base="${1:-$(git log --diff-filter=A --format=%H -- .clang-format | tail -1)}"
if [ -z "$base" ]; then
  echo "check_format: .clang-format is not committed yet; nothing to compare with"
  exit 0
fi
if ! git cat-file -e "$base^{commit}" 2>/dev/null; then
  # A shallow clone: what changed since the style arrived cannot be told apart here.
  echo "check_format: SKIPPED: commit $base is not in this clone (shallow?); fetch more history to check"
  exit 0
fi
out="$("$tool" --binary "$(command -v clang-format)" --diff --extensions c,cc,cpp,h,hpp,cu,cuh \
  "$base" -- include src tools tests python/src bench fuzz 2>&1)" || true
case "$out" in
  *"no modified files to format"*|*"clang-format did not modify any files"*|"")
    echo "check_format: every C++ line changed since ${base:0:12} follows .clang-format"
    exit 0 ;;
esac
echo "$out"
echo "error: check_format: the lines above, changed since ${base:0:12}, do not follow .clang-format (fix: $(basename "$tool") $base)"
exit 1
