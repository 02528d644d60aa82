#!/usr/bin/env bash
# Installs the Debian packages zerosim needs, and only those that are missing.
#   scripts/install_deps.sh         everything the tests and CI need
#   scripts/install_deps.sh --cli   only what building the `zerosim` executable needs (run_demo.sh)
# Safe to run repeatedly; waits up to 10 minutes for another apt/dpkg to release its lock.
set -euo pipefail

# libyaml-cpp-dev: the trainer configs (--trainer-config: LLaMA-Factory and axolotl YAML).
packages=(cmake g++ make nlohmann-json3-dev libyaml-cpp-dev)
# The viewer (ui/, optional: CMake skips it when these are missing). Dear ImGui 1.86 with its GLFW
# and OpenGL3 backends compiled in, stb (imgui.pc requires it; stb_image_write writes the PNGs),
# GLFW for the window, Mesa's EGL/GL for headless screenshots (EGL surfaceless + llvmpipe), and
# Xvfb + xauth to run the window without a display (ecosystem.md §1.1).
# clang-14 and libclang-rt-14-dev: the sanitiser and libFuzzer builds (scripts/run_sanitizers.sh).
# libopenmpi-dev and openmpi-bin: the CUDA backend's mpirun launch (MPI_Bcast of the NCCL unique id;
# optional: without MPI, mpirun launches exchange it over TCP). CUDA and NCCL themselves come with
# the NVIDIA toolkit, not from Debian. python3-torch: the recorder's tests (tools/zerosim_record,
# ctest -L recorder) record a two-rank gloo job with Debian's /usr/bin/python3.
viewer=(pkgconf libimgui-dev libglfw3-dev libstb-dev libegl-dev libgl-dev libopengl-dev
        libegl-mesa0 libgl1-mesa-dri xvfb xauth)
case "${1:-}" in
  "") packages+=(libgtest-dev libbenchmark-dev clang-format clang-tidy "${viewer[@]}"
      clang-14 libclang-rt-14-dev libopenmpi-dev openmpi-bin python3-torch) ;;
  --cli) ;;
  *)
    echo "install_deps.sh: expected no argument or --cli, got \"$1\"" >&2
    exit 1
    ;;
esac

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install_deps: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get -o DPkg::Lock::Timeout=600 update -qq
"${sudo_cmd[@]}" apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}"
