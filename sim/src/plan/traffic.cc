// Closed-form traffic per optimizer step for the planner: bytes one GPU sends with ring algorithms
// for the collectives DeepSpeed issues (deepspeed_zero.md §3.4, §3.5, §4.4, §5, §7.6, §7.7) or the
// ZeRO paper's schedule. `zerosim simulate` counts every collective exactly; this is the planner's
// fast summary of the same volume.
#include <algorithm>

#include "zerosim/partition_plan.h"
#include "zerosim/planner.h"

namespace zerosim {
namespace {

__extension__ typedef unsigned __int128 u128;  // exact products of 64-bit sizes

Bytes clamp64(u128 v) { return v > UINT64_MAX ? UINT64_MAX : static_cast<Bytes>(v); }

// Ring all-reduce: each rank sends 2(n-1)/n of the buffer.
u128 ring_all_reduce(u128 bytes, std::uint64_t n) { return n <= 1 ? 0 : 2 * bytes * (n - 1) / n; }
// Ring all-gather / reduce-scatter over a full buffer of `bytes`: each rank sends (n-1)/n of it.
u128 ring_gather(u128 bytes, std::uint64_t n) { return n <= 1 ? 0 : bytes * (n - 1) / n; }
// Pipelined reduce or broadcast: each rank forwards the whole buffer once.
u128 ring_reduce(u128 bytes, std::uint64_t n) { return n <= 1 ? 0 : bytes; }

Elements trainable_nonzero(const ModelDesc& m) {
  Elements e = 0;
  for (const auto& p : m.params)
    if (p.trainable) e += p.numel;
  return e;
}

// Stage 3: elements re-gathered in backward. A module's params stay gathered from forward to
// backward when its next use lies within max_reuse_distance elements of trace (§7.4); in a layer
// stack the trace between layer i's forward release and its backward fetch holds the later layers
// twice.
Elements stage3_backward_regather(const ModelDesc& m, const PartitionPlan& plan,
                                  std::uint64_t reuse) {
  std::vector<Elements> layer_numel;
  if (!m.layers.empty()) {
    for (const auto& l : m.layers) {
      Elements e = 0;
      for (auto id : l.param_ids)
        if (id < plan.s3.size() && !plan.s3[id].persistent) e += m.params[id].numel;
      layer_numel.push_back(e);
    }
  } else {
    for (std::size_t i = 0; i < m.params.size(); ++i)
      layer_numel.push_back(i < plan.s3.size() && !plan.s3[i].persistent ? m.params[i].numel : 0);
  }
  Elements regather = 0;
  u128 suffix = 0;  // elements of later layers
  for (std::size_t i = layer_numel.size(); i-- > 0;) {
    if (2 * suffix >= reuse) regather += layer_numel[i];
    suffix += layer_numel[i];
  }
  return regather;
}

u128 stage3_traffic(const ModelDesc& m, const PartitionPlan& plan, const DsConfig& ds,
                    std::uint64_t n) {
  const Bytes lp = dtype_size(ds.lp_dtype()), cd = dtype_size(ds.comm_dtype());
  u128 gathered_nonpersistent = 0;  // W*c over non-persistent params
  for (const auto& p : plan.s3)
    if (!p.persistent) gathered_nonpersistent += static_cast<u128>(p.partition) * n;
  u128 fwd = ring_gather(gathered_nonpersistent * lp, n);
  Elements back = stage3_backward_regather(m, plan, ds.zero.max_reuse_distance);
  u128 bwd = ring_gather(static_cast<u128>(back) * lp, n);
  u128 rs = ring_gather(static_cast<u128>(plan.s3_partition_numel) * n * cd, n);
  u128 per_micro = fwd + bwd + rs;
  u128 step = ring_gather(static_cast<u128>(plan.s3_persistent_gathered) * lp, n);
  step += ring_all_reduce(u128{8} * plan.sub_groups.size(), n);  // float64 norm per sub-group
  if (ds.fp16) step += ring_all_reduce(1, n);                    // uint8 overflow flag
  return per_micro * ds.grad_accum_steps + step;
}

u128 stage12_traffic(const ModelDesc& m, const PartitionPlan& plan, const DsConfig& ds,
                     std::uint64_t n) {
  const Bytes lp = dtype_size(ds.lp_dtype()), cd = dtype_size(ds.comm_dtype());
  const u128 grad_bytes = static_cast<u128>(trainable_nonzero(m)) * cd;
  u128 reduce = ds.zero.reduce_scatter && !ds.zero.use_multi_rank_bucket_allreduce
                    ? ring_reduce(grad_bytes, n)
                    : ring_all_reduce(grad_bytes, n);
  const bool stage2 = ds.zero.stage == 2;
  u128 total = reduce * (stage2 ? ds.grad_accum_steps : 1);
  const bool overflow_check = ds.fp16 || (ds.bf16 && ds.bf16_check_grad_overflow);
  if (overflow_check) total += ring_all_reduce(1, n);
  total += ring_all_reduce(u128{4} * plan.groups.size(), n);  // fp32 norm per group
  total += ring_gather(static_cast<u128>(plan.aligned_numel()) * lp, n);
  return total;
}

}  // namespace

Bytes comm_bytes_per_step(const ModelDesc& model, const PartitionPlan& plan, const DsConfig& ds,
                          std::uint64_t world, Accounting mode) {
  const std::uint64_t n = world;
  if (n <= 1) return 0;
  if (mode == Accounting::Paper) {
    // ZeRO paper §7: DDP and ZeRO-1/2 move 2Ψ per step (all-reduce = reduce-scatter + all-gather),
    // ZeRO-3 moves 3Ψ; in 16-bit elements with ring factors.
    u128 psi_bytes = static_cast<u128>(trainable_nonzero(model)) * dtype_size(ds.lp_dtype());
    u128 one = ring_gather(psi_bytes, n);
    return clamp64(ds.zero.stage == 3 ? 3 * one : 2 * one);
  }
  switch (ds.optimizer_path()) {
    case OptimizerPath::Plain:
    case OptimizerPath::Fp16Optimizer: {
      // Engine all-reduce of every gradient in CD at the boundary (§3.5), once per step.
      u128 bytes = static_cast<u128>(trainable_nonzero(model)) * dtype_size(ds.comm_dtype());
      return clamp64(ring_all_reduce(bytes, n));
    }
    case OptimizerPath::Bf16Optimizer: {
      // §3.4: engine all-reduce of the fp32 flat buffers converted to CD, then the parameter
      // all-gather.
      u128 ar =
          ring_all_reduce(static_cast<u128>(plan.aligned_numel()) * dtype_size(ds.comm_dtype()), n);
      return clamp64(
          ar + ring_gather(static_cast<u128>(plan.aligned_numel()) * dtype_size(ds.lp_dtype()), n));
    }
    case OptimizerPath::ZeroStage1And2:
      return clamp64(stage12_traffic(model, plan, ds, n));
    case OptimizerPath::ZeroStage3:
      return clamp64(stage3_traffic(model, plan, ds, n));
  }
  return 0;
}

}  // namespace zerosim
