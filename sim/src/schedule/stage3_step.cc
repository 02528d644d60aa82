// step() of DeepSpeed stage 3 (deepspeed_zero.md §7.7): release every gathered param, the overflow
// check (fp16 only: 1 uint8 MAX all-reduce), one norm all-reduce per sub-group (float64; fp32 from
// the per-param norms with optimizer offload), then per sub-group the flatten/cast temporaries, the
// lazily created Adam states at the first step, the update and the write-back to the LP partitions,
// and finally POST_STEP: the synchronous gather of every persistent param (ds_id order).
// An overflow step (ScheduleInput::overflow_steps) issues the check and returns: no norm, no update
// and no POST_STEP gather, so persistent params stay released until a module fetches them.
#include <string>

#include "schedule/stage3_internal.h"

namespace zerosim::schedule::s3 {
namespace {

// The operands of sub-group sg's update reading `grad`.
UpdateCall update_call(const Context& cx, std::size_t sg, Region grad) {
  const Elements sc = cx.plan.sub_groups[sg].partition_numel;
  UpdateCall call;
  call.master = cx.master_region(sg);
  call.grad = grad;
  call.exp_avg = region(cx.adam[sg], 0, sc);
  call.exp_avg_sq = region(cx.adam[sg], sc, sc);
  call.lp_out = region(cx.lp_partitions, cx.sg_offset[sg], sc);
  const std::uint32_t norms = cx.sg_on_cpu(sg) ? cx.norms32 : cx.norms64;
  call.norms = region(norms, 0, cx.plan.sub_groups.size());
  call.overflow = region(cx.overflow_flag, 0, 1);
  return call;
}

void gpu_update(Context& cx, std::size_t sg, bool first_step) {
  const Elements sc = cx.plan.sub_groups[sg].partition_numel;
  const std::string tag = " [sub-group " + std::to_string(sg) + "]";
  // g = cast(flatten(averaged views), MW): a GA temporary, then the MW copy.
  const auto flat = cx.pool.acquire(cx.e, "step flat grads", BufferCategory::Temp, cx.ga, sc);
  cx.e.alloc(flat);
  cx.data_op(OpKind::Copy, Stream::Compute, sc, cx.ga,
             region(cx.grad_partitions, cx.sg_offset[sg], sc), region(flat),
             "flatten grad partitions" + tag);
  // DeepSpeed casts with .to(master dtype) (stage3.py, _prepare_fp32_grad_for_sub_group), and
  // Tensor.to returns the tensor itself when it already has that dtype (PyTorch docs,
  // torch.Tensor.to): with grads already in the master dtype (bf16 master weights) no copy exists.
  const bool cast = cx.ga != cx.mw;
  const auto g32 =
      cast ? cx.pool.acquire(cx.e, "step fp32 grads", BufferCategory::Temp, cx.mw, sc) : flat;
  if (cast) {
    cx.e.alloc(g32);
    cx.data_op(OpKind::Copy, Stream::Compute, sc, cx.mw, region(flat), region(g32),
               "cast grads to master dtype" + tag);
    cx.e.free(flat);
    cx.pool.release(flat);
  }
  if (first_step)
    cx.e.alloc(cx.adam[sg], Stream::Compute, kNone, /*zero_fill=*/true);  // torch.zeros_like
  cx.e.optimizer_step({.dtype = cx.mw,
                       .elements = sc,
                       .call = update_call(cx, sg, region(g32)),
                       .label = "optimizer step" + tag});
  const Region lp_out = region(cx.lp_partitions, cx.sg_offset[sg], sc);
  if (cx.master_is_lp(sg)) {
    // fp16_partitioned_groups_flat[i].data.copy_(itself): Tensor.copy_ returns at once.
  } else if (cx.offload_param)  // the LP partitions live on the host
    cx.data_op(OpKind::DeviceToHost, Stream::Compute, sc, cx.lp, cx.master_region(sg), lp_out,
               "master to LP partitions" + tag);
  else
    cx.data_op(OpKind::WriteBack, Stream::Compute, sc, cx.lp, cx.master_region(sg), lp_out,
               "master to LP partitions" + tag);
  cx.e.free(g32);
  cx.pool.release(g32);
}

void cpu_update(Context& cx, std::size_t sg, bool first_step) {
  const Elements sc = cx.plan.sub_groups[sg].partition_numel;
  const std::string tag = " [sub-group " + std::to_string(sg) + "]";
  if (first_step)
    cx.e.alloc(cx.adam[sg], Stream::Compute, kNone, /*zero_fill=*/true);  // torch.zeros_like
  const auto st = cx.e.optimizer_step({.stream = Stream::Host,
                                       .dtype = cx.mw,
                                       .elements = sc,
                                       .call = update_call(cx, sg, region(cx.host_fp32_grads[sg])),
                                       .label = "CPU optimizer step" + tag});
  const Region lp_out = region(cx.lp_partitions, cx.sg_offset[sg], sc);
  if (cx.offload_param)
    cx.data_op(OpKind::WriteBack, Stream::Host, sc, cx.lp, cx.master_region(sg), lp_out,
               "master to LP partitions" + tag, {st});
  else
    cx.data_op(OpKind::HostToDevice, Stream::H2D, sc, cx.lp, cx.master_region(sg), lp_out,
               "master to LP partitions" + tag, {st});
}

// Sub-group sg's averaged gradients, where the step reads them: the device grad partitions, or
// the host fp32 gradients of an offloaded sub-group.
Region sub_group_grads(const Context& cx, std::size_t sg) {
  const Elements sc = cx.plan.sub_groups[sg].partition_numel;
  return cx.sg_on_cpu(sg) ? region(cx.host_fp32_grads[sg], 0, sc)
                          : region(cx.grad_partitions, cx.sg_offset[sg], sc);
}

// The local statistic of every sub-group's gradients before its all-reduce (stage3.py
// has_overflow's partitioned check and get_grad_norm's local part; with offload_optimizer the
// same values from the host fp32 gradients): `kind` GradNorm into norms[sg], GradOverflow or-ed
// over the sub-groups into the flag.
void local_grad_stats(Context& cx, OpKind kind) {
  const auto n_sg = cx.plan.sub_groups.size();
  for (std::size_t i = 0; i < n_sg; ++i) {
    const Elements sc = cx.plan.sub_groups[i].partition_numel;
    const Region src = sub_group_grads(cx, i);
    if (src.buffer == kNone) continue;
    const bool norm = kind == OpKind::GradNorm;
    const std::string tag = " [sub-group " + std::to_string(i) + "]";
    cx.e.grad_stat({.kind = kind,
                    .dtype = cx.e.schedule().buffers[src.buffer].dtype,
                    .elements = sc,
                    .src = src,
                    .dst = norm ? region(cx.sg_on_cpu(i) ? cx.norms32 : cx.norms64, i, 1)
                                : region(cx.overflow_flag, 0, 1),
                    .mode = norm || i == 0 ? CopyMode::Assign : CopyMode::Add,
                    .label = (norm ? "local squared grad norm" : "local inf/nan check") + tag});
  }
}

}  // namespace

void emit_step(Context& cx, Coordinator& co, bool overflow) {
  cx.e.set_phase(Phase::Step);
  cx.e.marker("step");
  co.release_all();
  const auto n_sg = cx.plan.sub_groups.size();
  if (cx.norms64 == kNone) {  // the step's scalar scratch, provided by the executor
    cx.norms64 = cx.e.scratch("grad norms, GPU sub-groups (scratch)", n_sg, DType::Float64);
    if (cx.offload_opt)
      cx.norms32 = cx.e.scratch("grad norms, CPU sub-groups (scratch)", n_sg, DType::Float32);
    if (cx.lp == DType::Float16)
      cx.overflow_flag = cx.e.scratch("overflow flag (scratch)", 1, DType::UInt8);
  }
  if (cx.lp == DType::Float16)  // bf16 and fp32 training run no overflow check in stage 3
    local_grad_stats(cx, OpKind::GradOverflow);
  if (cx.lp == DType::Float16)
    cx.collective(CollectiveKind::AllReduce, 1, 1, DType::UInt8, ReduceOp::Max, Stream::Compute,
                  "overflow check", {}, kNone, region(cx.overflow_flag, 0, 1));
  if (overflow) {  // zero grads, drop the averaged lists, return (fp16 only: checked by the input)
    cx.e.marker("overflow: step skipped, loss scale lowered");
    return;
  }
  const bool first_step = !cx.updated;  // Adam states come with the first update
  cx.updated = true;
  local_grad_stats(cx, OpKind::GradNorm);
  for (std::size_t i = 0; i < n_sg; ++i)  // in place on the sub-group's squared norm
    cx.collective(CollectiveKind::AllReduce, 1, 1,
                  cx.sg_on_cpu(i) ? DType::Float32 : DType::Float64, ReduceOp::Sum, Stream::Compute,
                  "grad norm [sub-group " + std::to_string(i) + "]", {}, kNone,
                  region(cx.sg_on_cpu(i) ? cx.norms32 : cx.norms64, i, 1));
  for (std::size_t i = 0; i < n_sg; ++i) {
    if (cx.sg_on_cpu(i))
      cpu_update(cx, i, first_step);
    else
      gpu_update(cx, i, first_step);
  }
  cx.e.set_phase(Phase::PostStep);
  co.gather_persistent();
}

}  // namespace zerosim::schedule::s3
