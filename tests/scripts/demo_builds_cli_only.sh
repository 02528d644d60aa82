#!/usr/bin/env bash
# scripts/run_demo.sh builds only what the demo runs (issue 13 item 7): run it with a stand-in
# `cmake` on PATH that records how it is called (and links the real zerosim where the build would
# put it), then check that the demo configured without the test suite and benchmarks, built the
# zerosim target alone, and printed the plan. install_deps.sh --cli runs for real: it only checks
# that the five packages the CLI needs (yaml-cpp for --trainer-config among them) are present
# (they are wherever this test was built).
# Usage: demo_builds_cli_only.sh ZEROSIM_BINARY REPO_ROOT
set -euo pipefail
zs=$(realpath "$1")
root=$(realpath "$2")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"
cat >"$work/bin/cmake" <<EOF
#!/usr/bin/env bash
echo "cmake \$*" >>"$work/cmake.log"
if [ "\$1" = "--build" ]; then mkdir -p "\$2/cli" && ln -sf "$zs" "\$2/cli/zerosim"; fi
EOF
chmod +x "$work/bin/cmake"

fail() {
  echo "demo_builds_cli_only: $1" >&2
  cat "$work/cmake.log" >&2 || true
  exit 1
}
PATH="$work/bin:$PATH" ZEROSIM_BUILD_DIR="$work/build" "$root/scripts/run_demo.sh" --model gpt2-small \
  >"$work/out.txt" 2>"$work/err.txt" || fail "run_demo.sh failed: $(tail -3 "$work/err.txt")"
grep -q -- "-DZEROSIM_BUILD_TESTS=OFF" "$work/cmake.log" || fail "configured with the test suite"
grep -q -- "-DZEROSIM_BUILD_BENCH=OFF" "$work/cmake.log" || fail "configured with the benchmarks"
[ "$(grep -c -- "--build" "$work/cmake.log")" = 1 ] || fail "expected one build command"
grep -- "--build" "$work/cmake.log" | grep -q -- "--target zerosim$" || fail "built more than the zerosim target"
grep -q "^zerosim plan: gpt2-small" "$work/out.txt" || fail "the demo did not print the plan"
grep -q "install_deps: all 5 packages present" "$work/out.txt" ||
  fail "install_deps.sh --cli did not check exactly the CLI's five packages"

# The full build (scripts/run_tests.sh) turns the test suite and benchmarks back on in the same
# folder, so a demo build followed by the tests never silently drops the tests.
: >"$work/cmake.log"
PATH="$work/bin:$PATH" ZEROSIM_BUILD_DIR="$work/build" "$root/scripts/build.sh" >/dev/null
grep -q -- "-DZEROSIM_BUILD_TESTS=ON" "$work/cmake.log" || fail "full build left the tests off"
grep -- "--build" "$work/cmake.log" | grep -q -- "--target" && fail "full build limited its targets"
# A bad argument is one line and exit 1.
if PATH="$work/bin:$PATH" "$root/scripts/build.sh" --bogus 2>"$work/bad.txt"; then
  fail "build.sh --bogus succeeded"
fi
[ "$(wc -l <"$work/bad.txt")" = 1 ] || fail "build.sh --bogus: expected one line"
if "$root/scripts/install_deps.sh" --bogus 2>"$work/bad.txt"; then
  fail "install_deps.sh --bogus succeeded"
fi
[ "$(wc -l <"$work/bad.txt")" = 1 ] || fail "install_deps.sh --bogus: expected one line"
echo "demo_builds_cli_only: ok"
