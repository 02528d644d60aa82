#!/usr/bin/env bash
# The test command: installs dependencies, builds everything, runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
ctest --test-dir "${ZEROSIM_BUILD_DIR:-build}" --output-on-failure -j "$(nproc)"
