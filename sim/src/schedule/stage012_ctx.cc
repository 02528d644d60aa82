// The stage 0/1/2 builder context (stage012_internal.h): the configuration resolved the way
// DeepSpeed resolves it (which optimizer wrapper runs, whether gradient hooks exist, contiguous
// gradients forced by offload, the dtypes LP/MW/GA/CD) and the small emit helpers every stage012
// file uses.
#include <string>
#include <utility>

#include "schedule/stage012_internal.h"

namespace zerosim::schedule::s12 {

Ctx::Ctx(const ScheduleInput& input, Emitter& emitter)
    : in(input), m(*input.model), plan(*input.plan), ds(*input.ds), e(emitter) {
  path = ds.optimizer_path();
  stage = ds.zero.stage;
  world = plan.world;
  gas = static_cast<std::uint32_t>(ds.grad_accum_steps);
  r = ds.zero.reduce_bucket_size;
  offload = path == OptimizerPath::ZeroStage1And2 && ds.zero.offload_optimizer.enabled();
  overlap = ds.zero.overlap_comm;
  contiguous = ds.zero.contiguous_gradients || offload;  // forced on with optimizer offload
  reduce_scatter = ds.zero.reduce_scatter;
  multi_rank = ds.zero.use_multi_rank_bucket_allreduce;
  v0144 = in.version == DeepSpeedVersion::V0_14_4;
  managed = ds.managed_gradient_accumulation;
  lp = ds.lp_dtype();
  mw = ds.master_dtype();
  ga = ds.grad_accum();
  cd = ds.comm_dtype();
  ga_attr = path == OptimizerPath::ZeroStage1And2 && stage == 1 && ga != lp;
  // §4.1: hooks exist iff stage 2 or overlap_comm or GA-attribute mode or contiguous_gradients
  // (v0.14.4: only stage 2 or overlap_comm).
  hooks = v0144 ? (stage == 2 || overlap) : (stage == 2 || overlap || ga_attr || contiguous);
  average = ds.gradient_allreduce_op == GradientAllreduceOp::Mean ? 1.0 / world : 1.0;
  loss_scale_gas = gas > 1 ? 1.0 / gas : 1.0;
  grad_buf.assign(m.params.size(), kNone);
  grad_accum_buf.assign(m.params.size(), kNone);
  grad_live.assign(m.params.size(), false);
  lp_home.assign(m.params.size(), Region{});
  grad_accum_live.assign(m.params.size(), false);
  t6.assign(plan.groups.size(), kNone);
  t7.assign(plan.groups.size(), kNone);
}

CopySpec Ctx::transfer(OpKind kind, DType dt) const {
  CopySpec c;
  c.kind = kind;
  c.stream = kind == OpKind::HostToDevice ? Stream::H2D : Stream::D2H;
  c.dtype = dt;
  c.after = overlap ? Stream::Reduce : Stream::Compute;
  return c;
}

void Ctx::alloc_grad(std::uint32_t p, bool zero_fill) {
  if (grad_buf[p] == kNone || grad_live[p]) return;
  e.alloc(grad_buf[p], Stream::Compute, kNone, zero_fill);
  grad_live[p] = true;
}

void Ctx::free_grad(std::uint32_t p, Stream st) {
  if (grad_buf[p] == kNone || !grad_live[p]) return;
  e.free(grad_buf[p], st);
  grad_live[p] = false;
}

}  // namespace zerosim::schedule::s12
