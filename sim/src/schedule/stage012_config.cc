// The stage 0/1/2 builder's Config (stage012_pieces.h): the ds_config resolved the way DeepSpeed
// resolves it (which optimizer wrapper runs, whether gradient hooks exist, contiguous gradients
// forced by offload, the dtypes LP/MW/GA/CD).
#include "schedule/stage012_pieces.h"

namespace zerosim::schedule::s12 {

Config::Config(const ScheduleInput& input)
    : in(input), m(*input.model), plan(*input.plan), ds(*input.ds) {
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
  host_pool = ds.zero.offload_optimizer.pin_memory ? MemoryPool::Pinned : MemoryPool::Host;
  average = ds.gradient_allreduce_op == GradientAllreduceOp::Mean ? 1.0 / world : 1.0;
  loss_scale_gas = gas > 1 ? 1.0 / gas : 1.0;
}

Elements Config::grads_in_groups() const {
  Elements total = 0;
  for (const FlatGroup& fg : plan.groups) total += fg.numel;
  return total;
}

}  // namespace zerosim::schedule::s12
