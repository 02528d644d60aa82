#!/usr/bin/env bash
# ctest golden.outputs: regenerates every golden output into a temporary folder and diffs it with
# tests/golden/expected/. Any difference fails (run tests/golden/regen.sh after an intended change).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$here/generate.sh" "$1" "$tmp/actual"
if diff -r "$here/expected" "$tmp/actual" >"$tmp/diff"; then
  echo "golden: $(ls "$tmp/actual" | wc -l) outputs identical"
else
  head -c 20000 "$tmp/diff"
  echo "golden: outputs differ from tests/golden/expected (see above); run tests/golden/regen.sh if intended"
  exit 1
fi
