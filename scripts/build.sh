#!/usr/bin/env bash
# Configures and builds zerosim in ./build (Release, warnings as errors).
#   scripts/build.sh         everything: the CLI, the GoogleTest suite, the benchmarks
#                            (ZEROSIM_BUILD_BENCH=OFF leaves the benchmarks out: no test runs them;
#                            scripts/run_tests.sh does so to save CI time)
#   scripts/build.sh --cli   only the `zerosim` executable (what scripts/run_demo.sh runs): the
#                            test suite and the benchmarks are not configured, so a first run on a
#                            fresh machine compiles the libraries and the CLI and nothing else
# Both set the test/bench options explicitly, so one build folder serves both in turn (a
# --cli build followed by a full one reuses every object already compiled).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${ZEROSIM_BUILD_DIR:-build}"
case "${1:-}" in
  "")
    cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DZEROSIM_WERROR=ON \
      -DZEROSIM_BUILD_TESTS=ON -DZEROSIM_BUILD_BENCH="${ZEROSIM_BUILD_BENCH:-ON}" >/dev/null
    cmake --build "$build_dir" -j "$(nproc)"
    ;;
  --cli)
    cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DZEROSIM_WERROR=ON \
      -DZEROSIM_BUILD_TESTS=OFF -DZEROSIM_BUILD_BENCH=OFF >/dev/null
    cmake --build "$build_dir" -j "$(nproc)" --target zerosim
    ;;
  *)
    echo "build.sh: expected no argument or --cli, got \"$1\"" >&2
    exit 1
    ;;
esac
