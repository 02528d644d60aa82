#!/usr/bin/env bash
# Installs the Debian packages zerosim needs, and only those that are missing.
# Safe to run repeatedly; waits up to 10 minutes for another apt/dpkg to release its lock.
set -euo pipefail

packages=(cmake g++ make libgtest-dev libbenchmark-dev nlohmann-json3-dev clang-format clang-tidy)
# The viewer (ui/, optional: CMake skips it when these are missing). Dear ImGui 1.86 with its GLFW
# and OpenGL3 backends compiled in, stb (imgui.pc requires it; stb_image_write writes the PNGs),
# GLFW for the window, Mesa's EGL/GL for headless screenshots (EGL surfaceless + llvmpipe), and
# Xvfb + xauth to run the window without a display (ecosystem.md §1.1).
packages+=(pkgconf libimgui-dev libglfw3-dev libstb-dev libegl-dev libgl-dev libopengl-dev
           libegl-mesa0 libgl1-mesa-dri xvfb xauth)

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
