// Silent reroutes DeepSpeed applies to an accepted config, and notes on commonly misread keys.
//
// Reroutes change the loaded DsConfig so that it describes what really runs, and each one leaves a
// note: offload_param below stage 3 is ignored; stage3_allgather_sequential forces a prefetch
// bucket of 1 (engine.py _configure_zero_optimizer); stage 1 + bf16 + fp32 gradient accumulation
// without CPU optimizer offload, and v0.14.4's stage 0 + bf16, run BF16_Optimizer (engine.py
// _do_optimizer_sanity_check).
// The other notes explain behaviour the docs get wrong or users often expect differently
// (shared/docs/deepspeed_zero.md §10). Every note is one line.
#include <string>
#include <utility>

#include "config/ds_config_internal.h"

namespace zerosim::dsconfig {
namespace {

bool written(const Loader& ld, const std::string& key) { return ld.facts.zero_keys.count(key) > 0; }

void reroutes(Loader& ld) {
  ZeroConfig& z = ld.cfg.zero;
  if (z.stage < 3 && z.offload_param.enabled()) {
    z.offload_param.device = OffloadDevice::None;
    ld.note(
        "offload_param is ignored below stage 3: the stage 1/2 optimizer never offloads "
        "parameters");
  }
  if (z.stage == 3 && z.allgather_sequential && z.prefetch_bucket_size != 1) {
    z.prefetch_bucket_size = 1;
    ld.note(
        "stage3_allgather_sequential: DeepSpeed sets stage3_prefetch_bucket_size to 1 (one "
        "all-gather "
        "per parameter)");
  }
  if (ld.cfg.optimizer_path() == OptimizerPath::Bf16Optimizer && z.stage == 0)
    ld.note(
        "bf16 without ZeRO at DeepSpeed v0.14.4: gradients accumulate in fp32 by default and "
        "DeepSpeed runs BF16_Optimizer, which partitions the fp32 master weights and optimizer "
        "states over the data-parallel ranks like stage 1 (edaa722 runs FP16_Optimizer in bf16 "
        "mode with a full copy on every rank)");
  else if (ld.cfg.optimizer_path() == OptimizerPath::Bf16Optimizer)
    ld.note(
        "stage 1 + bf16 + data_types.grad_accum_dtype fp32 without CPU optimizer offload: "
        "DeepSpeed runs "
        "BF16_Optimizer (not the ZeRO optimizer), which keeps a full, unpartitioned fp32 gradient "
        "buffer "
        "and all-reduces it through the engine");
}

void stage_notes(Loader& ld) {
  const DsConfig& c = ld.cfg;
  const ZeroConfig& z = c.zero;
  const OptimizerPath path = c.optimizer_path();
  if (path == OptimizerPath::ZeroStage1And2) {
    if (z.stage == 1)
      ld.note(
          "stage 1 does not shrink gradient memory: every rank keeps full-size gradients until the "
          "optimizer step; stage 2 drops the gradients it does not own");
    ld.note(std::string("ZeRO-") + (z.stage == 1 ? "1" : "2") +
            " never issues a reduce-scatter: each gradient bucket is all-reduced (or reduced per "
            "owner) and "
            "every rank keeps its own slice");
  }
  if (z.stage == 3 && !z.overlap_comm_set)
    ld.note(
        "overlap_comm is unset: DeepSpeed turns it on for stage 3 (the documentation says the "
        "default "
        "is false)");
  if (z.stage == 3 && z.offload_optimizer.super_offload)
    ld.note("offload_optimizer.super_offload (SuperOffload) is accepted but not modelled");
  if (ld.facts.zenflow) ld.note("zero_optimization.zenflow (ZenFlow) is accepted but not modelled");
  const std::string low = [&] {
    std::string s = c.optimizer_type;
    for (char& ch : s) ch = static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
    return s;
  }();
  if (low == "muon" && path == OptimizerPath::ZeroStage1And2 && z.reduce_scatter)
    ld.note(
        "Muon with ZeRO-1/2 and reduce_scatter: a Muon parameter split across ranks gets its "
        "reduced "
        "slices copied to every owning rank (DeepSpeed PR #8141)");
}

void key_notes(Loader& ld) {
  const ZeroConfig& z = ld.cfg.zero;
  if (written(ld, "allgather_bucket_size"))
    ld.note(
        "allgather_bucket_size has no effect on modern PyTorch: DeepSpeed issues one "
        "all_gather_into_tensor per parameter group");
  if (written(ld, "allgather_partitions"))
    ld.note(
        "allgather_partitions is read but never used by DeepSpeed: parameters are always "
        "all-gathered");
  if (written(ld, "max_live_parameters") && z.stage == 3)
    ld.note("stage3_max_live_parameters is not a hard cap: it only limits how much is prefetched");
}

// ZeRO++ and MiCS change stage 3's partitioning and traffic (DeepSpeed edaa722
// runtime/zero/config.py:309-341 the keys and defaults; runtime/engine.py:2441-2517 hpZ and the
// quantized weights passed to the stage 3 optimizer, :1833 quantized gradients, :2533
// MiCS_Optimizer when mics_shard_size > 0). zerosim computes plain ZeRO, so an active one is a
// warning on the first screen; one set to its default changes nothing and says nothing.
// Every optimizer is modelled with Adam's two states per master element: one that keeps fewer
// over-counts the optimizer states, and said so only in --verbose (found by a new-user pass).
void optimizer_state_warning(Loader& ld) {
  std::string low = ld.cfg.optimizer_type;
  for (char& ch : low) ch = static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
  for (const char* fewer : {"sgd", "adagrad", "lion", "muon"})
    if (low == fewer)
      ld.cfg.warnings.push_back(
          "optimizer.type " + ld.cfg.optimizer_type +
          " keeps fewer states than Adam's two per parameter (momentum only, or none), which "
          "zerosim models for every optimizer: optimizer-state memory is over-counted");
}

void unmodelled_warnings(Loader& ld) {
  optimizer_state_warning(ld);
  const ZeroConfig& z = ld.cfg.zero;
  if (z.stage != 3) return;  // every one of them is read by the stage 3 optimizer only
  const std::string tail = ") is not modelled: memory and traffic are for plain ZeRO stage 3";
  auto& w = ld.cfg.warnings;
  if (z.zero_hpz_partition_size > 1)
    w.push_back("zero_hpz_partition_size = " + std::to_string(z.zero_hpz_partition_size) +
                " (ZeRO++ hpZ: a secondary copy of the parameters within each node" + tail);
  if (z.zero_quantized_weights)
    w.push_back("zero_quantized_weights (ZeRO++ qwZ: int8 parameter all-gathers" + tail);
  if (z.zero_quantized_nontrainable_weights)
    w.push_back("zero_quantized_nontrainable_weights (ZeRO++: frozen weights held in int8" + tail);
  if (z.zero_quantized_gradients)
    w.push_back("zero_quantized_gradients (ZeRO++ qgZ: int4 gradient all-to-all reduction" + tail);
  if (z.mics)
    w.push_back("mics_shard_size = " + std::to_string(z.mics_shard_size) +
                " (MiCS: parameters partitioned within groups of that many GPUs, replicated "
                "across groups" +
                tail);
}

}  // namespace

// NVMe offload. Below stage 3 DeepSpeedZeroOptimizer offloads for any device but "none"
// (DeepSpeed edaa722 runtime/zero/stage_1_and_2.py:186): "nvme" runs as CPU offload, nothing is
// swapped, and zerosim plans it so. Stage 3 swaps to NVMe (stage3.py:777 swap_optimizer,
// :784 params_in_nvme_and_cpu) through pinned host buffers and aio (runtime/swap_tensor/
// partitioned_optimizer_swapper.py, partitioned_param_swapper.py), which zerosim does not
// simulate: refused, never planned as CPU offload.
void nvme_offload(Loader& ld) {
  const ZeroConfig& z = ld.cfg.zero;
  if (z.stage < 3) {
    if (z.offload_optimizer.device == OffloadDevice::Nvme)
      ld.note(
          "offload_optimizer.device nvme below stage 3: DeepSpeed's stage 1/2 optimizer offloads "
          "to CPU memory for any device but none (stage_1_and_2.py:186); nothing goes to NVMe");
    return;
  }
  const std::pair<const char*, const OffloadConfig*> blocks[] = {
      {"offload_optimizer", &z.offload_optimizer}, {"offload_param", &z.offload_param}};
  for (const auto& [key, o] : blocks)
    if (o->device == OffloadDevice::Nvme)
      ld.cfg.refusals.push_back(
          {Severity::Error, ld.source, std::string("/zero_optimization/") + key + "/device",
           "expected \"cpu\" or \"none\" at stage 3, got \"nvme\": ZeRO-Infinity swaps to NVMe "
           "through pinned host buffers and async I/O, which zerosim does not model (refused "
           "rather "
           "than planned as CPU offload)",
           "device \"cpu\" plans the same job with host memory in place of NVMe"});
}

void add_notes(Loader& ld) {
  reroutes(ld);
  nvme_offload(ld);
  stage_notes(ld);
  key_notes(ld);
  unmodelled_warnings(ld);
}

}  // namespace zerosim::dsconfig
