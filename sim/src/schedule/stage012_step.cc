// ZeroStep (stage012_pieces.h): step() of DeepSpeedZeroOptimizer (deepspeed_zero.md §5, §3.3;
// stage_1_and_2.py:2279 at edaa722): the overflow check, one gradient-norm all-reduce per param
// group, per group the flatten/cast temporaries, the optimizer update on the rank's S_g master
// elements (Adam states created by the first call) and the write-back, then ALL_GATHER_DP_GROUPS
// and zero_grad. With CPU optimizer offload the update runs on the host and the new LP slice is
// copied back to the GPU (CpuOffload::copy_back) before the same all-gather.
#include <algorithm>
#include <string>
#include <utility>

#include "schedule/stage012_pieces.h"

namespace zerosim::schedule::s12 {
namespace {

Buffer step_buffer(std::string name, std::string spec, BufferCategory cat, MemoryPool pool,
                   DType dt, Elements numel, std::uint32_t slot, bool persistent) {
  return make_buffer(std::move(name), std::move(spec), cat, pool, dt, numel, persistent, slot);
}

}  // namespace

void all_gather_dp_groups(const Config& cfg, Emitter& e, const std::vector<std::uint32_t>& flat) {
  e.set_phase(Phase::PostStep);
  if (cfg.world <= 1) return;  // groups with W = 1 are skipped
  for (std::size_t g = 0; g < cfg.plan.groups.size(); ++g) {
    const FlatGroup& fg = cfg.plan.groups[g];
    if (fg.aligned == 0) continue;
    e.collective({.kind = CollectiveKind::AllGather,
                  .dtype = cfg.lp,
                  .numel = fg.partition,
                  .out_numel = fg.aligned,
                  .src = rank_slice(flat[g], fg.partition),  // the input is a view of the output
                  .dst = region(flat[g]),
                  .label = collective_label("all_gather params group " + std::to_string(g),
                                            CollectiveKind::AllGather, fg.partition, fg.aligned)});
  }
}

// `grad`: the flat master-dtype gradient the update reads (empty: not carried).
std::uint32_t ZeroStep::optimizer_op(Elements elements, Stream st, std::uint32_t group,
                                     Region grad) {
  UpdateCall call;
  call.master = region(flat_.fp32_partition[group]);
  call.grad = grad;
  call.exp_avg = region(b3_[group], 0, elements);
  call.exp_avg_sq = region(b3_[group], elements, elements);
  call.lp_out = rank_slice(flat_.bit16_flat[group], elements);  // the write-back / H2D writes it
  call.norms = region(norms_, 0, cfg_.plan.groups.size());
  call.overflow = overflow_flag_ == kNone ? Region{} : region(overflow_flag_, 0, 1);
  return e_.optimizer_step({.stream = st,
                            .dtype = cfg_.mw,
                            .elements = elements,
                            .call = call,
                            .label = "optimizer step group " + std::to_string(group)});
}

void ZeroStep::alloc_adam(std::uint32_t g, MemoryPool pool) {
  b3_.resize(cfg_.plan.groups.size(), kNone);
  b3_[g] = e_.buffer(step_buffer("optimizer states [" + std::to_string(g) + "]", "B3",
                                 BufferCategory::OptimState, pool, cfg_.mw,
                                 2 * cfg_.plan.groups[g].partition, kNone, true));
  // Lazily, by the first optimizer.step(), as zeros (torch.optim.Adam(W)'s and DeepSpeed's
  // FusedAdam/DeepSpeedCPUAdam's state init: torch.zeros_like).
  e_.alloc(b3_[g], Stream::Compute, kNone, /*zero_fill=*/true);
}

void ZeroStep::update_on_gpu(std::uint32_t g, bool last) {
  const Elements s = cfg_.plan.groups[g].partition;
  const DType flat_dt = cfg_.ga_attr ? cfg_.ga : cfg_.lp;
  if (t6_[g] == kNone) {
    t6_slot_[g] = slots_.flat_copy(g);
    t6_[g] = e_.buffer(step_buffer("step flat grads [" + std::to_string(g) + "]", "T6",
                                   BufferCategory::Temp, MemoryPool::Device, flat_dt, 0,
                                   t6_slot_[g], false));
  }
  const std::uint32_t t6 = t6_[g];
  e_.alloc(t6);
  // averaged_gradients[g], and the same with the flat copy once made (a single tensor is not
  // copied: FlatCopy is 0): views of grads_in_partition, or without contiguous gradients of the
  // kept autograd grads (X6).
  const std::uint32_t pass = averaged_.pass();
  const bool carried = pass != kNone;
  const Region averaged =
      carried ? e_.derived({.kind = DerivedKind::AveragedGrads, .pass = pass, .group = g})
              : Region{};
  const Region flat =
      carried
          ? e_.derived({.kind = DerivedKind::AveragedGrads, .pass = pass, .group = g, .flat = t6})
          : Region{};
  e_.copy({.dtype = flat_dt,
           .slot = t6_slot_[g],
           .src = averaged,
           .dst = region(t6),
           .label = "flatten averaged_gradients"});
  std::uint32_t grad_mw = t6;
  if (flat_dt != cfg_.mw) {  // cast to the master dtype; the flat copy goes right after
    if (t7_[g] == kNone)
      t7_[g] = e_.buffer(step_buffer("step master-dtype grads [" + std::to_string(g) + "]", "T7",
                                     BufferCategory::Temp, MemoryPool::Device, cfg_.mw, s, kNone,
                                     false));
    grad_mw = t7_[g];
    e_.alloc(grad_mw);
    e_.copy({.dtype = cfg_.mw,
             .elements = s,
             .src = flat,  // T6, or the one averaged gradient
             .dst = region(grad_mw),
             .label = "cast grads to the master dtype"});
    e_.free(t6);
  }
  // Dropping the last group's averaged_gradients frees them (stage_1_and_2.py:2372 at edaa722).
  // Without a cast (fp32 training, or fp32 gradient accumulation with an fp32 master) `.to(fp32)`
  // returns the flat gradient itself (:2361), which on a rank whose averaged_gradients is one
  // tensor is a view of grads_in_partition (or of the kept grads): that storage lives until `del
  // single_grad_partition` after the update (:2383), so the frees follow the update then. (On a
  // rank with several tensors the view is the flat copy and DeepSpeed frees them one update
  // earlier: the ledger holds them that much longer in fp32.)
  const bool uncast = grad_mw == t6;
  if (last && !uncast) averaged_.release();
  if (g >= b3_.size() || b3_[g] == kNone) alloc_adam(g, MemoryPool::Device);  // first update
  // The flat T6 itself (or the one averaged gradient) when no cast is needed.
  optimizer_op(s, Stream::Compute, g, uncast ? flat : region(grad_mw));
  e_.free(grad_mw);
  if (last && uncast) averaged_.release();
  e_.copy({.kind = OpKind::WriteBack,
           .dtype = cfg_.lp,
           .elements = s,
           .src = region(flat_.fp32_partition[g]),
           .dst = rank_slice(flat_.bit16_flat[g], s),
           .label = "master -> LP slice of group " + std::to_string(g)});
}

void ZeroStep::update_on_host(std::uint32_t g) {
  const Elements s = cfg_.plan.groups[g].partition;
  if (g >= b3_.size() || b3_[g] == kNone) alloc_adam(g, MemoryPool::Host);  // first update
  optimizer_op(s, Stream::Host, g, offload_.grad_partition(g));
  offload_.copy_back(g, s, flat_.fp32_partition[g], flat_.bit16_flat[g]);
}

// The local statistic of each group's averaged gradients before its all-reduce
// (stage_1_and_2.py: has_overflow_partitioned_grads_serial over averaged_gradients, or the
// offload path's local_overflow from the fp32 partitions; get_grad_norm_direct's local sum of
// squares): `kind` GradNorm into norms[g], GradOverflow or-ed over the groups into the flag.
// averaged_gradients views grads_in_partition, or the kept autograd grads without contiguous
// gradients (X6); a schedule that carries neither emits no statistic.
void ZeroStep::local_grad_stats(OpKind kind) {
  const bool norm = kind == OpKind::GradNorm;
  bool first = true;
  for (std::size_t g = 0; g < cfg_.plan.groups.size(); ++g) {
    const Elements s = cfg_.plan.groups[g].partition;
    if (s == 0) continue;
    const auto gi = static_cast<std::uint32_t>(g);
    Region src;
    DType dt = cfg_.mw;
    if (cfg_.offload) {
      src = offload_.grad_partition(g);  // the fp32 grad partition the host update reads
    } else if (averaged_.pass() != kNone) {
      src = e_.derived({.kind = DerivedKind::AveragedGrads, .pass = averaged_.pass(), .group = gi});
      dt = cfg_.ga_attr ? cfg_.ga : cfg_.lp;
    } else {
      continue;
    }
    e_.grad_stat({.kind = kind,
                  .dtype = dt,
                  .elements = s,
                  .src = src,
                  .dst = norm ? region(norms_, g, 1) : region(overflow_flag_, 0, 1),
                  .mode = norm || first ? CopyMode::Assign : CopyMode::Add,
                  .label = std::string(norm ? "local squared grad norm" : "local inf/nan check") +
                           " group " + std::to_string(g)});
    first = false;
  }
}

void ZeroStep::step(std::uint32_t step) {
  e_.set_step(step, cfg_.gas - 1);
  e_.set_phase(Phase::Step);
  e_.marker("step");
  if (cfg_.offload) e_.sync("step: gradient copies to host complete");
  const bool check =
      cfg_.lp == DType::Float16 || (cfg_.lp == DType::BFloat16 && cfg_.ds.bf16_check_grad_overflow);
  if (norms_ == kNone) {
    norms_ = e_.scratch("grad norms (scratch)", cfg_.plan.groups.size(), DType::Float32);
    if (check) overflow_flag_ = e_.scratch("overflow flag (scratch)", 1, DType::UInt8);
  }
  if (check) local_grad_stats(OpKind::GradOverflow);
  if (check)  // in place on the flag the rank's check set
    e_.collective({.dtype = DType::UInt8,
                   .numel = 1,
                   .out_numel = 1,
                   .op = ReduceOp::Max,
                   .src = region(overflow_flag_, 0, 1),
                   .label = collective_label("overflow check", CollectiveKind::AllReduce, 1, 1)});
  if (std::binary_search(cfg_.in.overflow_steps.begin(), cfg_.in.overflow_steps.end(), step)) {
    // Overflow: drop the grads and averaged lists and return: no norm, no update, no all-gather
    // (§5). Adam states are created by the first step that does update.
    e_.marker("overflow: step skipped, loss scale lowered");
    averaged_.release();
    e_.set_phase(Phase::PostStep);
    e_.marker("zero_grad");
    module_.zero_grad();
    return;
  }
  local_grad_stats(OpKind::GradNorm);
  for (std::size_t g = 0; g < cfg_.plan.groups.size(); ++g)
    e_.collective({.dtype = DType::Float32,  // in place on the group's squared norm
                   .numel = 1,
                   .out_numel = 1,
                   .op = ReduceOp::Sum,
                   .src = region(norms_, g, 1),
                   .label = collective_label("grad norm group " + std::to_string(g),
                                             CollectiveKind::AllReduce, 1, 1)});
  std::size_t last = cfg_.plan.groups.size();
  for (std::size_t g = 0; g < cfg_.plan.groups.size(); ++g)
    if (cfg_.plan.groups[g].partition > 0) last = g;
  for (std::size_t g = 0; g < cfg_.plan.groups.size(); ++g) {
    if (cfg_.plan.groups[g].partition == 0) continue;
    const auto gi = static_cast<std::uint32_t>(g);
    if (cfg_.offload) {
      update_on_host(gi);
    } else {
      update_on_gpu(gi, g == last);
    }
  }
  averaged_.release();  // no group had elements
  all_gather_dp_groups(cfg_, e_, flat_.bit16_flat);
  e_.marker("zero_grad");
  module_.zero_grad();
}

}  // namespace zerosim::schedule::s12
