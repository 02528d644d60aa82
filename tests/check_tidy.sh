#!/usr/bin/env bash
# ctest lint.clang_tidy: clang-tidy (.clang-tidy at the root) over every tracked sim/, cli/ and ui/
# source, warnings as errors. Usage: check_tidy.sh SOURCE_DIR BUILD_DIR (the build's
# compile_commands.json). GCC-only warning flags are ignored by clang.
set -euo pipefail
src=$1
build=$2
tidy=$(command -v clang-tidy-14 || command -v clang-tidy || true)
if [ -z "$tidy" ]; then
  echo "clang-tidy not found (scripts/install_deps.sh installs it)"
  exit 1
fi
cd "$src"
files=$(git ls-files 'sim/*.cc' 'cli/*.cc' 'ui/*.cc' 2>/dev/null || find sim cli ui -name '*.cc')
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if echo "$files" | xargs -P "$(nproc)" -n 8 "$tidy" -p "$build" --quiet \
    --extra-arg=-Wno-unknown-warning-option >"$log" 2>&1; then
  echo "clang-tidy: $(echo "$files" | wc -w) files clean"
else
  grep -E "(warning|error):" "$log" | head -50
  echo "clang-tidy found problems (see above)"
  exit 1
fi
