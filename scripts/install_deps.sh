#!/usr/bin/env bash
# Installs the Debian packages zerosim needs, and only those that are missing.
# Safe to run repeatedly; waits up to 10 minutes for another apt/dpkg to release its lock.
set -euo pipefail

# clang-14 and libclang-rt-14-dev: the sanitiser and libFuzzer builds (scripts/run_sanitizers.sh).
packages=(cmake g++ make libgtest-dev libbenchmark-dev nlohmann-json3-dev clang-format clang-tidy
          clang-14 libclang-rt-14-dev)

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
