#!/usr/bin/env bash
# Formats the C++ and CUDA sources with .clang-format, or with --check lists the files that differ
# (exit 1 when any does). Fixtures and vendored node modules are not ours to format.
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files '*.cpp' '*.h' '*.hpp' '*.cu' '*.cuh' | grep -v -e '^tests/fixtures/' -e 'node_modules/')
if [[ "${1:-}" == "--check" ]]; then
  bad=0
  for f in $files; do
    if ! clang-format --style=file "$f" | cmp -s - "$f"; then echo "$f"; bad=1; fi
  done
  exit $bad
fi
echo "$files" | xargs clang-format --style=file -i
