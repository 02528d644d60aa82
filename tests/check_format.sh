#!/usr/bin/env bash
# ctest format.clang_format_clean: every tracked C++ file is formatted as .clang-format says
# (Google style, 100 columns). Fix with: git ls-files '*.cc' '*.h' '*.cu' | xargs clang-format -i
set -euo pipefail
cd "$1"
fmt=$(command -v clang-format-14 || command -v clang-format || true)
if [ -z "$fmt" ]; then
  echo "clang-format not found (scripts/install_deps.sh installs it)"
  exit 1
fi
files=$(git ls-files '*.cc' '*.h' '*.cu' '*.cuh' 2>/dev/null || find . -name '*.cc' -o -name '*.h')
bad=0
for f in $files; do
  if ! "$fmt" "$f" | cmp -s - "$f"; then
    echo "not clang-format clean: $f"
    bad=$((bad + 1))
  fi
done
if [ "$bad" -ne 0 ]; then
  echo "$bad file(s) differ from .clang-format; run: git ls-files '*.cc' '*.h' '*.cu' | xargs $fmt -i"
  exit 1
fi
echo "clang-format: $(echo "$files" | wc -w) files clean"
