// step() of DeepSpeedZeroOptimizer (deepspeed_zero.md §5, §3.3): the overflow check, one
// gradient-norm all-reduce per param group, per group the flatten/cast temporaries, the optimizer
// update on the rank's S_g master elements (Adam states created by the first call) and the
// write-back, then ALL_GATHER_DP_GROUPS and zero_grad. With CPU optimizer offload the update runs
// on the host and the new LP slice is copied back to the GPU before the same all-gather.
#include <algorithm>
#include <string>

#include "schedule/stage012_internal.h"

namespace zerosim::schedule::s12 {
namespace {

Buffer step_buffer(std::string name, std::string spec, BufferCategory cat, MemoryPool pool,
                   DType dt, Elements numel, std::uint32_t slot, bool persistent) {
  Buffer b;
  b.name = std::move(name);
  b.spec_id = std::move(spec);
  b.category = cat;
  b.pool = pool;
  b.dtype = dt;
  b.numel = numel;
  b.slot = slot;
  b.persistent = persistent;
  return b;
}

// `grad`: the flat master-dtype gradient the update reads (empty: not carried).
std::uint32_t optimizer_op(Ctx& c, Elements elements, Stream st, std::uint32_t group, Region grad) {
  UpdateCall call;
  call.master = region(c.b2[group]);
  call.grad = grad;
  call.exp_avg = region(c.b3[group], 0, elements);
  call.exp_avg_sq = region(c.b3[group], elements, elements);
  call.lp_out = rank_slice(c.b1[group], elements);  // the write-back / H2D after writes it
  call.norms = region(c.norms, 0, c.plan.groups.size());
  call.overflow = c.overflow_flag == kNone ? Region{} : region(c.overflow_flag, 0, 1);
  return c.e.optimizer_step({.stream = st,
                             .dtype = c.mw,
                             .elements = elements,
                             .call = call,
                             .label = "optimizer step group " + std::to_string(group)});
}

std::uint32_t write_back(Ctx& c, Elements elements, std::uint32_t group) {
  return c.e.copy({.kind = OpKind::WriteBack,
                   .dtype = c.lp,
                   .elements = elements,
                   .src = region(c.b2[group]),
                   .dst = rank_slice(c.b1[group], elements),
                   .label = "master -> LP slice of group " + std::to_string(group)});
}

void alloc_adam(Ctx& c, std::uint32_t g, MemoryPool pool) {
  c.b3.resize(c.plan.groups.size(), kNone);
  c.b3[g] = c.e.buffer(step_buffer("optimizer states [" + std::to_string(g) + "]", "B3",
                                   BufferCategory::OptimState, pool, c.mw,
                                   2 * c.plan.groups[g].partition, kNone, true));
  // Lazily, by the first optimizer.step(), as zeros (torch.optim.Adam(W)'s and DeepSpeed's
  // FusedAdam/DeepSpeedCPUAdam's state init: torch.zeros_like).
  c.e.alloc(c.b3[g], Stream::Compute, kNone, /*zero_fill=*/true);
}

void group_update_gpu(Ctx& c, std::uint32_t g, bool last) {
  const Elements s = c.plan.groups[g].partition;
  const DType flat_dt = c.ga_attr ? c.ga : c.lp;
  if (c.t6[g] == kNone)
    c.t6[g] = c.e.buffer(step_buffer("step flat grads [" + std::to_string(g) + "]", "T6",
                                     BufferCategory::Temp, MemoryPool::Device, flat_dt, 0,
                                     c.slots.flat_copy(g), false));
  const std::uint32_t t6 = c.t6[g];
  c.e.alloc(t6);
  // averaged_gradients[g], and the same with the flat copy once made (a single tensor is not
  // copied: FlatCopy is 0): views of grads_in_partition, or without contiguous gradients of the
  // kept autograd grads (X6).
  const bool carried = c.averaged_pass != kNone;
  const Region averaged =
      carried
          ? c.e.derived({.kind = DerivedKind::AveragedGrads, .pass = c.averaged_pass, .group = g})
          : Region{};
  const Region flat = carried ? c.e.derived({.kind = DerivedKind::AveragedGrads,
                                             .pass = c.averaged_pass,
                                             .group = g,
                                             .flat = t6})
                              : Region{};
  c.e.copy({.dtype = flat_dt,
            .slot = c.e.schedule().buffers[t6].slot,
            .src = averaged,
            .dst = region(t6),
            .label = "flatten averaged_gradients"});
  std::uint32_t grad_mw = t6;
  if (flat_dt != c.mw) {  // cast to the master dtype; the flat copy goes right after
    if (c.t7[g] == kNone)
      c.t7[g] =
          c.e.buffer(step_buffer("step master-dtype grads [" + std::to_string(g) + "]", "T7",
                                 BufferCategory::Temp, MemoryPool::Device, c.mw, s, kNone, false));
    grad_mw = c.t7[g];
    c.e.alloc(grad_mw);
    c.e.copy({.dtype = c.mw,
              .elements = s,
              .src = flat,  // T6, or the one averaged gradient
              .dst = region(grad_mw),
              .label = "cast grads to the master dtype"});
    c.e.free(t6);
  }
  if (last) {  // dropping the last group's averaged_gradients frees grads_in_partition
    for (std::uint32_t b : c.step_frees) c.e.free(b);
    c.step_frees.clear();
  }
  if (g >= c.b3.size() || c.b3[g] == kNone) alloc_adam(c, g, MemoryPool::Device);  // first update
  // The flat T6 itself (or the one averaged gradient) when no cast is needed.
  optimizer_op(c, s, Stream::Compute, g, grad_mw == t6 ? flat : region(grad_mw));
  c.e.free(grad_mw);
  write_back(c, s, g);
}

void group_update_host(Ctx& c, std::uint32_t g) {
  const Elements s = c.plan.groups[g].partition;
  if (g >= c.b3.size() || c.b3[g] == kNone) alloc_adam(c, g, MemoryPool::Host);  // first update
  optimizer_op(c, s, Stream::Host, g, region(c.b4[g]));
  c.e.copy({.stream = Stream::Host,
            .dtype = c.lp,
            .elements = s,
            .src = region(c.b2[g]),
            .dst = region(c.b5[g]),
            .label = "master -> LP staging (B5)"});
  CopySpec h2d = c.transfer(OpKind::HostToDevice, c.lp);
  h2d.elements = s;
  h2d.src = region(c.b5[g]);
  h2d.dst = rank_slice(c.b1[g], s);
  h2d.after = Stream::Host;  // the staging copy the host just made
  h2d.label = "updated LP slice to the GPU";
  c.e.copy(std::move(h2d));
  c.e.wait_stream(Stream::Compute, Stream::H2D);
}

// The local statistic of each group's averaged gradients before its all-reduce
// (stage_1_and_2.py: has_overflow_partitioned_grads_serial over averaged_gradients, or the
// offload path's local_overflow from the fp32 partitions; get_grad_norm_direct's local sum of
// squares): `kind` GradNorm into norms[g], GradOverflow or-ed over the groups into the flag.
// averaged_gradients views grads_in_partition, or the kept autograd grads without contiguous
// gradients (X6); a schedule that carries neither emits no statistic.
void local_grad_stats(Ctx& c, OpKind kind) {
  const bool norm = kind == OpKind::GradNorm;
  bool first = true;
  for (std::size_t g = 0; g < c.plan.groups.size(); ++g) {
    const Elements s = c.plan.groups[g].partition;
    if (s == 0) continue;
    const auto gi = static_cast<std::uint32_t>(g);
    Region src;
    DType dt = c.mw;
    if (c.offload) {
      src = region(c.b4[g]);  // the fp32 grad partition the host update reads
    } else if (c.averaged_pass != kNone) {
      src = c.e.derived({.kind = DerivedKind::AveragedGrads, .pass = c.averaged_pass, .group = gi});
      dt = c.ga_attr ? c.ga : c.lp;
    } else {
      continue;
    }
    c.e.grad_stat({.kind = kind,
                   .dtype = dt,
                   .elements = s,
                   .src = src,
                   .dst = norm ? region(c.norms, g, 1) : region(c.overflow_flag, 0, 1),
                   .mode = norm || first ? CopyMode::Assign : CopyMode::Add,
                   .label = std::string(norm ? "local squared grad norm" : "local inf/nan check") +
                            " group " + std::to_string(g)});
    first = false;
  }
}

}  // namespace

void emit_param_all_gather(Ctx& c) {
  c.e.set_phase(Phase::PostStep);
  if (c.world <= 1) return;  // groups with W = 1 are skipped
  for (std::size_t g = 0; g < c.plan.groups.size(); ++g) {
    const FlatGroup& fg = c.plan.groups[g];
    if (fg.aligned == 0) continue;
    c.e.collective(
        {.kind = CollectiveKind::AllGather,
         .dtype = c.lp,
         .numel = fg.partition,
         .out_numel = fg.aligned,
         .src = rank_slice(c.b1[g], fg.partition),  // the input is a view of the output
         .dst = region(c.b1[g]),
         .label = collective_label("all_gather params group " + std::to_string(g),
                                   CollectiveKind::AllGather, fg.partition, fg.aligned)});
  }
}

void emit_zero_step(Ctx& c, std::uint32_t step) {
  c.e.set_step(step, c.gas - 1);
  c.e.set_phase(Phase::Step);
  c.e.marker("step");
  if (c.offload) c.e.sync("step: gradient copies to host complete");
  const bool check =
      c.lp == DType::Float16 || (c.lp == DType::BFloat16 && c.ds.bf16_check_grad_overflow);
  if (c.norms == kNone) {
    c.norms = c.e.scratch("grad norms (scratch)", c.plan.groups.size(), DType::Float32);
    if (check) c.overflow_flag = c.e.scratch("overflow flag (scratch)", 1, DType::UInt8);
  }
  if (check) local_grad_stats(c, OpKind::GradOverflow);
  if (check)  // in place on the flag the rank's check set
    c.e.collective({.dtype = DType::UInt8,
                    .numel = 1,
                    .out_numel = 1,
                    .op = ReduceOp::Max,
                    .src = region(c.overflow_flag, 0, 1),
                    .label = collective_label("overflow check", CollectiveKind::AllReduce, 1, 1)});
  if (std::binary_search(c.in.overflow_steps.begin(), c.in.overflow_steps.end(), step)) {
    // Overflow: drop the grads and averaged lists and return: no norm, no update, no all-gather
    // (§5). Adam states are created by the first step that does update.
    c.e.marker("overflow: step skipped, loss scale lowered");
    for (std::uint32_t b : c.step_frees) c.e.free(b);
    c.step_frees.clear();
    c.e.set_phase(Phase::PostStep);
    c.e.marker("zero_grad");
    for (std::uint32_t p = 0; p < c.m.params.size(); ++p) c.free_grad(p);
    return;
  }
  local_grad_stats(c, OpKind::GradNorm);
  for (std::size_t g = 0; g < c.plan.groups.size(); ++g)
    c.e.collective({.dtype = DType::Float32,  // in place on the group's squared norm
                    .numel = 1,
                    .out_numel = 1,
                    .op = ReduceOp::Sum,
                    .src = region(c.norms, g, 1),
                    .label = collective_label("grad norm group " + std::to_string(g),
                                              CollectiveKind::AllReduce, 1, 1)});
  std::size_t last = c.plan.groups.size();
  for (std::size_t g = 0; g < c.plan.groups.size(); ++g)
    if (c.plan.groups[g].partition > 0) last = g;
  for (std::size_t g = 0; g < c.plan.groups.size(); ++g) {
    if (c.plan.groups[g].partition == 0) continue;
    const auto gi = static_cast<std::uint32_t>(g);
    if (c.offload) {
      group_update_host(c, gi);
    } else {
      group_update_gpu(c, gi, g == last);
    }
  }
  for (std::uint32_t b : c.step_frees) c.e.free(b);  // no group had elements
  c.step_frees.clear();
  emit_param_all_gather(c);
  c.e.marker("zero_grad");
  for (std::uint32_t p = 0; p < c.m.params.size(); ++p) c.free_grad(p);
}

}  // namespace zerosim::schedule::s12
