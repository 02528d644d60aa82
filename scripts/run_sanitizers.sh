#!/usr/bin/env bash
# CI's sanitiser and fuzzing steps (scripts/run_tests.sh runs them after the Release suite).
#   asan  clang + AddressSanitizer + UndefinedBehaviorSanitizer (-fno-sanitize-recover) in
#         build-asan: the whole ctest suite except the lint tests (clang-tidy and clang-format read
#         the sources, not the binaries: the Release run covers them). The same tree carries
#         libFuzzer's coverage hooks and builds the fuzz targets.
#   fuzz  every fuzz/ target for ZEROSIM_FUZZ_SECONDS (default 25) from its committed corpus,
#         nproc targets at a time (build-asan; run asan first). A crash fails the step and leaves the input in
#         build-asan/fuzz-artifacts/.
#   tsan  ThreadSanitizer in build-tsan: the host backend's tests (one thread per rank), i.e. the
#         Host*/RingPlan/TrackingAllocator/ValidateCli unit tests and the validate.* cases. It
#         builds the CLI and zerosim_host_tests (those three test files, tests/CMakeLists.txt), not
#         the whole suite: the suite's other ~75 files run no threads of ours and were most of the
#         step's time (437 s in the last CI run, 17 s of it tests).
#   Both sanitizer steps skip the tests labelled data_large (GPT-2 small in data mode: gigabytes
#   of buffers through instrumented loops); the small data-mode cases run under both.
# Usage: run_sanitizers.sh [asan] [fuzz] [tsan]   (no argument: all three, in that order)
# Build folders follow ZEROSIM_ASAN_DIR / ZEROSIM_TSAN_DIR; jobs follow nproc.
set -euo pipefail
cd "$(dirname "$0")/.."
asan_dir="${ZEROSIM_ASAN_DIR:-build-asan}"
tsan_dir="${ZEROSIM_TSAN_DIR:-build-tsan}"
jobs="$(nproc)"
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(asan fuzz tsan)
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# -O1 as the sanitizers' documentation recommends; line tables for the reports; asserts on.
common=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -gline-tables-only"
        -DZEROSIM_WITH_CUDA=OFF -DZEROSIM_WITH_UI=OFF -DZEROSIM_BUILD_BENCH=OFF "${launcher[@]}")
# Leaks are findings too; a UBSan report stops the test (and says where).
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"

step_asan() {
  cmake -S . -B "$asan_dir" -DCMAKE_CXX_COMPILER=clang++-14 -DZEROSIM_SANITIZE=ON -DZEROSIM_FUZZ=ON \
    "${common[@]}" >/dev/null
  cmake --build "$asan_dir" -j "$jobs" --target zerosim zerosim_tests zerosim_trace_only zerosim_base_only zerosim_fuzzers
  ctest --test-dir "$asan_dir" --output-on-failure -j "$jobs" -E '^(lint|format)\.' -LE data_large
}

# One fuzz target for $seconds from its scratch corpus in $work; its log in $work/T.log.
fuzz_one() {
  local t=$1
  cd "$work" && "$root/$asan_dir/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$root/$asan_dir/fuzz-artifacts/$t-" \
    "$t" 2>"$work/$t.log"
}

# Waits for one running target (fuzz_pids: pid -> target); prints its totals, or its log's tail
# and returns 1 when it failed.
fuzz_reap() {
  local pid status=0 t
  wait -n -p pid || status=$?
  t=${fuzz_pids[$pid]}
  unset "fuzz_pids[$pid]"
  if [ "$status" -ne 0 ]; then
    tail -n 60 "$work/$t.log"
    echo "fuzz_$t: failed (exit $status)"
    return 1
  fi
  grep -E '^#[0-9]+[[:space:]]+DONE|stat::number_of_executed_units' "$work/$t.log" | tail -n 2 |
    sed "s/^/fuzz_$t: /"
}

step_fuzz() {
  # The targets run $jobs at a time (each is one process on one core): on 2 cores the step takes
  # half the wall time for the same fuzzing time per target.
  local t failed=0
  seconds="${ZEROSIM_FUZZ_SECONDS:-25}"
  root="$(pwd)"
  work="$(mktemp -d)"
  declare -gA fuzz_pids=()
  trap 'rm -rf "$work"' RETURN
  mkdir -p "$asan_dir/fuzz-artifacts"
  # Fuzzed scenarios name files relative to the folder the target runs in: give them the param
  # list the shipped tiny scenario uses.
  cp scenarios/tiny_params.json "$work/"
  for t in fuzz/corpus/*/; do
    t="$(basename "$t")"
    # A scratch copy of the corpus: what the run adds stays out of the tree.
    mkdir -p "$work/$t"
    cp -r "fuzz/corpus/$t/." "$work/$t/"
    echo "fuzz_$t: ${seconds} s"
    fuzz_one "$t" &
    fuzz_pids[$!]=$t
    if [ "${#fuzz_pids[@]}" -ge "$jobs" ]; then fuzz_reap || failed=1; fi
  done
  while [ "${#fuzz_pids[@]}" -gt 0 ]; do fuzz_reap || failed=1; done
  return "$failed"
}

step_tsan() {
  # gcc, RelWithDebInfo: TSan's reports need the frames; -O2 keeps the rank threads' races real.
  cmake -S . -B "$tsan_dir" -DZEROSIM_TSAN=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DZEROSIM_WITH_CUDA=OFF -DZEROSIM_WITH_UI=OFF -DZEROSIM_BUILD_BENCH=OFF "${launcher[@]}" >/dev/null
  cmake --build "$tsan_dir" -j "$jobs" --target zerosim zerosim_host_tests
  ctest --test-dir "$tsan_dir" --output-on-failure -j "$jobs" -R '^(Host[A-Za-z]*|RingPlan|TrackingAllocator|ValidateCli)\.|^validate\.' \
    -LE data_large
}

for s in "${steps[@]}"; do
  start=$(date +%s)
  "step_$s"
  echo "run_sanitizers: $s took $(($(date +%s) - start)) s"
done
