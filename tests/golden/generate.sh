#!/usr/bin/env bash
# Writes every golden output of zerosim into DIR: the nine shipped scenarios through `simulate`
# (table and JSON report, summary, zerosim trace, Chrome trace) and `schedule` (collective log),
# and `plan` in every format. Usage: generate.sh ZEROSIM_BINARY DIR
#
# tests/golden/expected/ holds what this printed at the last reviewed change; the ctest
# golden.outputs regenerates into a temporary folder and diffs. After an intended change, run
# tests/golden/regen.sh and review `git diff tests/golden/` before committing.
# Files over 256 KiB are kept as their SHA-256 (name.sha256) so the repository stays small; the
# rest are kept whole so a diff shows what changed.
set -euo pipefail
zs=$1
out=$2
root="$(cd "$(dirname "$0")/../.." && pwd)"
mkdir -p "$out"
cd "$root"

run() {  # run NAME CMD... : stdout to NAME.out, exit code to NAME.rc (stderr kept too)
  local name=$1; shift
  set +e
  "$@" >"$out/$name.out" 2>"$out/$name.err"
  echo $? >"$out/$name.rc"
  set -e
  if [ -s "$out/$name.err" ]; then  # output paths differ per run: name them $OUT
    sed -i "s|$out|\$OUT|g" "$out/$name.err"
  else
    rm -f "$out/$name.err"
  fi
}

for s in scenarios/*.json; do
  base=$(basename "$s" .json)
  grep -q '"zerosim-scenario"' "$s" || continue
  run "simulate.$base.table" "$zs" simulate --scenario "$s" \
      --summary "$out/simulate.$base.summary.json" --trace "$out/simulate.$base.trace.json" \
      --chrome-trace "$out/simulate.$base.chrome.json"
  run "simulate.$base.json" "$zs" simulate --scenario "$s" --format json
  run "schedule.$base" "$zs" schedule --scenario "$s" \
      --collectives-out "$out/schedule.$base.collectives.jsonl"
done

for f in table json csv markdown; do
  run "plan.default.$f" "$zs" plan --format "$f"
  run "plan.gpt2-xl_4.$f" "$zs" plan --model gpt2-xl --gpus 4 --gpu A100-80GB --format "$f"
done
run plan.verbose "$zs" plan --verbose
run plan.verbose.json "$zs" plan --verbose --format json
run plan.sweep "$zs" plan --model llama3.1-405b --gpus 1024 --sweep --max-gpus 4096 --format json
run plan.ds_config "$zs" plan --ds-config scenarios/llama2-70b_zero3_ds_config.json --model llama2-70b --gpus 64
run plan.ds_config_zero_init "$zs" plan --ds-config scenarios/llama2-70b_zero3_ds_config.json --model llama2-70b --gpus 64 --activation-checkpointing --zero-init
run plan.paper "$zs" plan --model llama2-13b --mode paper --format csv
run plan.param_list "$zs" plan --param-list scenarios/tiny_params.json --gpus 4 --gpu RTX-4090

# Large files become their hash.
for f in "$out"/*; do
  if [ "$(stat -c %s "$f")" -gt 262144 ]; then
    (cd "$out" && sha256sum "$(basename "$f")") >"$f.sha256"
    rm "$f"
  fi
done
