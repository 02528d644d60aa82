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
# One clang-format process for all files (--dry-run -Werror reports each violation as
# "FILE:LINE:COL: error: ..."): one process per file spent most of the test's time starting
# clang-format, 61 s against 8.5 s for the 436 files under load.
# shellcheck disable=SC2086
report=$(printf '%s\n' $files | xargs "$fmt" --dry-run -Werror 2>&1 || true)
bad_files=$(printf '%s\n' "$report" | sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: .*clang-format-violations.*$/\1/p' | sort -u)
if [ -n "$bad_files" ]; then
  printf 'not clang-format clean: %s\n' $bad_files
  echo "$(echo "$bad_files" | wc -l) file(s) differ from .clang-format; run: git ls-files '*.cc' '*.h' '*.cu' | xargs $fmt -i"
  exit 1
fi
if [ -n "$report" ]; then
  echo "clang-format failed: $report" | head -n 5
  exit 1
fi
echo "clang-format: $(echo "$files" | wc -w) files clean"
