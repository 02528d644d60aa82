#!/usr/bin/env bash
# Rewrites tests/golden/expected/ from the current build (default build/cli/zerosim).
# Review `git diff tests/golden/` before committing: every changed line is a changed output.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
zs=${1:-"$here/../../build/cli/zerosim"}
rm -rf "$here/expected"
"$here/generate.sh" "$(realpath "$zs")" "$here/expected"
echo "regen: $(ls "$here/expected" | wc -l) files in tests/golden/expected"
