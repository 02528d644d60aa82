#!/usr/bin/env bash
# ctest validate.*: executes one schedule on the host backend (count-only, or with --data first
# in data mode: real buffers and numerics), then checks the measured trace against the
# simulator's predicted trace with `zerosim check`.
# Usage: run_case.sh ZEROSIM_BINARY [--data] RUN-FLAGS...   (the flags of zerosim schedule/simulate)
set -euo pipefail
zs=$1
shift
mode=--no-data
if [ "${1:-}" = --data ]; then
  mode=
  shift
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$zs" validate "$@" $mode --output "$tmp/measured.json" --collectives-out "$tmp/measured.jsonl"
"$zs" simulate "$@" --trace "$tmp/predicted.json" >/dev/null
"$zs" schedule "$@" --collectives-out "$tmp/predicted.jsonl" >/dev/null
"$zs" check --predicted "$tmp/predicted.json" --measured "$tmp/measured.json"
"$zs" check --predicted "$tmp/predicted.jsonl" --measured "$tmp/measured.jsonl" | tail -1
