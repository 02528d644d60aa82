#!/usr/bin/env bash
# Regenerates the README's screenshots with the command itself (headless, deterministic):
#   ui/screenshots/make.sh build/cli/zerosim
set -euo pipefail
zerosim=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
scenarios="$here/../../scenarios"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
shot() { "$zerosim" view "$@" --width 1400 --height 640; }
"$zerosim" simulate --scenario "$scenarios/gpt2-xl_zero2_8xa100.json" --trace zero2.json >/dev/null
"$zerosim" simulate --scenario "$scenarios/gpt2-xl_zero3_8xa100.json" --trace zero3.json >/dev/null
shot zero2.json --rank 0 --screenshot "$here/gpt2-xl_zero2.png"
shot zero3.json --screenshot "$here/gpt2-xl_zero3.png"
small=(--model gpt2-small --gpus 4 --gpus-per-node 4 --stage 2 --precision fp16)
"$zerosim" validate "${small[@]}" --no-data --output measured.json >/dev/null
"$zerosim" simulate "${small[@]}" --trace predicted.json >/dev/null
shot measured.json predicted.json --rank 0 --screenshot "$here/measured_vs_predicted.png"
"$zerosim" simulate --model llama2-7b --gpus 8 --stage 0 --trace oom.json >/dev/null || true
shot oom.json --screenshot "$here/llama2-7b_zero0_oom.png"
# What-if mode: the ZeRO-2 scenario changed to stage 3, the stage 2 run as the ghost.
cp "$scenarios/gpt2-xl_zero2_8xa100.json" .
shot gpt2-xl_zero2_8xa100.json --set stage=3 --screenshot "$here/what_if_zero2_to_3.png"
