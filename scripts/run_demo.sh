#!/usr/bin/env bash
# The main job on the embedded default scenario: installs what the CLI needs, builds the CLI only
# (not the test suite: scripts/run_tests.sh does that), and prints the ZeRO plan for Llama-2-7B on
# 8 x H100-SXM-80GB. Extra arguments are passed to `zerosim plan`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh --cli
scripts/build.sh --cli
"${ZEROSIM_BUILD_DIR:-build}"/cli/zerosim plan "$@"
