#!/usr/bin/env bash
# The test command: installs dependencies, builds everything, runs every test; then the same suite
# under ASan + UBSan, each fuzz target for a bounded time, and the host backend under TSan
# (scripts/run_sanitizers.sh; ZEROSIM_SKIP_SANITIZERS=1 skips them for a quick local run).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
ctest --test-dir "${ZEROSIM_BUILD_DIR:-build}" --output-on-failure -j "$(nproc)"
if [ "${ZEROSIM_SKIP_SANITIZERS:-0}" != 1 ]; then
  scripts/run_sanitizers.sh
fi
