#!/usr/bin/env bash
# Configures and builds zerosim in ./build (Release, warnings as errors).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${ZEROSIM_BUILD_DIR:-build}"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DZEROSIM_WERROR=ON >/dev/null
cmake --build "$build_dir" -j "$(nproc)"
