#!/usr/bin/env bash
# scripts/gpu_validate.sh [OUT_DIR]: the CUDA backend's whole validation in one call, for a machine
# with NVIDIA GPUs (issue #10). NOT RUN YET: the session that wrote it had no GPU; it was only
# checked for syntax (bash -n) and against a build without a device. What it measures:
#   1. builds zerosim and the CUDA tests (sm_90, or ZEROSIM_CUDA_ARCH) into build-gpu/;
#   2. runs the GPU tests (ctest -L cuda): library error strings, AdamW kernel against the CPU
#      reference bit for bit, fp16 casts, "does not fit";
#   3. a validation sweep, single-GPU mode (every collective a local stand-in: communication time
#      model only): GPT-2 small and Pythia-1B, ZeRO stages 0-3, 4 simulated ranks, ranks 0 and 3,
#      3 steps (1 warm-up): zerosim's tracked peak bytes against the prediction (to the byte), the
#      pool's used/reserved high-water marks, cudaMemGetInfo, step time measured vs predicted;
#   4. with 2+ GPUs and mpirun or torchrun on PATH: the same models, stages 0-3, one rank per GPU
#      with real NCCL collectives (NCCL's own bytes per rank, bus bandwidth per call in the traces);
#   5. nccl-tests' all_reduce_perf/all_gather_perf/reduce_scatter_perf when on PATH, as the
#      bandwidth reference for step 4;
#   6. prints one table, predicted vs measured (memory, bytes, time, error %), to OUT_DIR/table.txt;
#   7. calibrates the time model on the measured traces: OUT_DIR/calibration.json (zerosim
#      calibrate), for plan/simulate/check --calibration.
# Everything (logs, JSON reports, measured traces, nvidia-smi) goes to OUT_DIR (default
# gpu_validation_<UTC time>). Budget: under 5 minutes on one H200 (the build is most of it).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-gpu_validation_$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"
arch=${ZEROSIM_CUDA_ARCH:-90}
log() { echo "gpu_validate: $*" | tee -a "$out/summary.log"; }

log "build (sm_$arch) -> build-gpu/"
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$arch" \
  -DZEROSIM_BUILD_BENCH=OFF -DZEROSIM_WITH_UI=OFF >"$out/configure.log" 2>&1
grep -q "CUDA backend enabled" "$out/configure.log" || {
  log "the CUDA backend was not enabled (see $out/configure.log)"
  exit 1
}
cmake --build build-gpu -j"$(nproc)" --target zerosim zerosim-cuda zerosim_cuda_tests >"$out/build.log" 2>&1
zs=build-gpu/cli/zerosim
nvidia-smi >"$out/nvidia-smi.txt" 2>&1 || true
ngpu=$(nvidia-smi --list-gpus 2>/dev/null | wc -l || echo 0)
log "$ngpu GPU(s)"

log "GPU tests"
ctest --test-dir build-gpu -L cuda --output-on-failure >"$out/gpu_tests.log" 2>&1 &&
  log "GPU tests passed" || log "GPU tests FAILED (see $out/gpu_tests.log)"

common=(--gpus 4 --gpus-per-node 4 --precision bf16 --steps 3 --warmup-steps 1 --gpu H200)
models=(gpt2-small pythia-1b)
for model in "${models[@]}"; do
  for stage in 0 1 2 3; do
    name="${model}_stage${stage}_single"
    log "$name"
    "$zs" validate --backend cuda --single-gpu --ranks 0,3 --model "$model" --stage "$stage" \
      "${common[@]}" --format json --output "$out/$name.trace.json" \
      >"$out/$name.json" 2>"$out/$name.err" || log "$name: exit $? (see $out/$name.err)"
  done
done

if [ "$ngpu" -ge 2 ]; then
  n=$((ngpu < 8 ? ngpu : 8))
  # NCCL connects at init, so the per-communicator memory deltas hold its buffers (ecosystem.md
  # §5.2: with the default lazy connection they would appear at the first collective instead).
  export NCCL_RUNTIME_CONNECT=0
  launch=()
  if command -v mpirun >/dev/null; then
    launch=(mpirun --allow-run-as-root -np "$n" -x NCCL_DEBUG=WARN -x NCCL_RUNTIME_CONNECT)
  elif command -v torchrun >/dev/null; then
    launch=(torchrun --standalone --nproc-per-node "$n" --no-python)
  fi
  if [ ${#launch[@]} -gt 0 ]; then
    for model in "${models[@]}"; do
      for stage in 0 1 2 3; do
        name="${model}_stage${stage}_${n}gpu"
        log "$name (${launch[0]})"
        "${launch[@]}" "$zs" validate --backend cuda --model "$model" --stage "$stage" \
          --gpus "$n" --gpus-per-node "$n" --precision bf16 --steps 3 --warmup-steps 1 \
          --gpu H200 --format json --output "$out/$name.trace.json" \
          >"$out/$name.json" 2>"$out/$name.err" || log "$name: exit $? (see $out/$name.err)"
      done
    done
  else
    log "multi-GPU sweep skipped: neither mpirun nor torchrun on PATH"
  fi
  for t in all_reduce_perf all_gather_perf reduce_scatter_perf; do
    if command -v "$t" >/dev/null; then
      "$t" -b 1M -e 512M -f 4 -g "$n" -d bfloat16 >"$out/nccl-tests_$t.txt" 2>&1 || true
    fi
  done
fi

# 7. calibrate the time model on what was measured (zerosim calibrate, README "Calibration"):
# the multi-GPU traces when there are any (real NCCL collectives), else the single-GPU ones (their
# collectives are local stand-ins: the collective fits then describe device copies, not NCCL),
# with the nccl-tests tables as the collectives' device side.
traces=("$out"/*gpu.trace.json)
[ -e "${traces[0]}" ] || traces=("$out"/*_single.trace.json)
if [ -e "${traces[0]}" ]; then
  nccl=()
  for f in "$out"/nccl-tests_*.txt; do [ -s "$f" ] && nccl+=(--nccl-tests "$f"); done
  log "calibrate on ${#traces[@]} measured traces -> $out/calibration.json"
  "$zs" calibrate "${traces[@]}" "${nccl[@]}" -o "$out/calibration.json" \
    >"$out/calibration.txt" 2>"$out/calibration.err" &&
    cat "$out/calibration.txt" | tee -a "$out/summary.log" ||
    log "calibrate: exit $? (see $out/calibration.err)"
else
  log "calibrate skipped: no measured trace"
fi

# The table: one row per measured rank of every run (several JSON objects per file under mpirun).
python3 - "$out" <<'PY' | tee "$out/table.txt"
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
print(f"{'run':34} {'rank':>4} {'pred GiB':>9} {'tracked GiB':>11} {'mem err %':>9} "
      f"{'pool res GiB':>12} {'device GiB':>10} {'pred ms':>9} {'meas ms':>9} {'time err %':>10}")
for f in sorted(out.glob("*.json")):
    if f.name.endswith(".trace.json"):
        continue
    for line in f.read_text().splitlines():
        try:
            rep = json.loads(line)
        except ValueError:
            continue
        for r in rep.get("ranks", []):
            p, m = r["predicted_peak_bytes"], r["tracked_peak_bytes"]
            err = 100.0 * (m - p) / p if p else 0.0
            g = 2 ** 30
            note = "  comm model only" if r["comm_model_only"] else ""
            print(f"{f.stem:34} {r['rank']:>4} {p / g:>9.3f} {m / g:>11.3f} {err:>9.2f} "
                  f"{r['pool_reserved_high_bytes'] / g:>12.3f} {r['device_used_high_bytes'] / g:>10.3f} "
                  f"{r['predicted_step_ns'] / 1e6:>9.3f} {r['measured_step_ns'] / 1e6:>9.3f} "
                  f"{r['step_error_pct']:>10.1f}{note}")
PY
log "done: everything is in $out/"
