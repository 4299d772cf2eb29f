#!/usr/bin/env bash
# Fails when a C++, CUDA or proto file of the tree differs from what .clang-format makes of it.
# Skips (exit 77) where clang-format is not installed.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
command -v clang-format >/dev/null || { echo "SKIP: clang-format not installed"; exit 77; }
cd "$root"
bad=0
while IFS= read -r f; do
  if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
    echo "not formatted: $f (run: clang-format -i $f)"
    bad=1
  fi
done < <(git ls-files '*.cc' '*.hpp' '*.h' '*.cu' '*.cuh' '*.proto' 2>/dev/null || find . -name '*.cc')
exit $bad
