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
  grad_buf.assign(m.params.size(), kNone);
  grad_accum_buf.assign(m.params.size(), kNone);
  grad_live.assign(m.params.size(), false);
  grad_accum_live.assign(m.params.size(), false);
  t6.assign(plan.groups.size(), kNone);
  t7.assign(plan.groups.size(), kNone);
}

std::uint32_t Ctx::temp(const std::string& name, Elements numel, DType dt, BufferCategory c,
                        const std::string& spec_id) {
  auto key = std::make_tuple(name, numel, dt);
  auto it = temps.find(key);
  if (it != temps.end()) return it->second;
  Buffer b;
  b.name = name + " (" + std::to_string(numel) + " x " + std::string(dtype_name(dt)) + ")";
  b.spec_id = spec_id;
  b.category = c;
  b.dtype = dt;
  b.numel = numel;
  const std::uint32_t id = e.buffer(std::move(b));
  temps.emplace(std::move(key), id);
  return id;
}

std::uint32_t Ctx::copy(Elements elements, std::uint32_t slot, DType dt, Stream st,
                        std::uint32_t buffer, std::string label) {
  Op o;
  o.kind = OpKind::Copy;
  o.stream = st;
  o.elements = elements;
  o.slot = slot;
  o.dtype = dt;
  o.buffer = buffer;
  o.label = std::move(label);
  return e.op(std::move(o));
}

std::uint32_t Ctx::transfer(OpKind kind, Elements elements, std::uint32_t slot, DType dt,
                            std::uint32_t buffer, std::string label) {
  Op o;
  o.kind = kind;
  o.stream = kind == OpKind::HostToDevice ? Stream::H2D : Stream::D2H;
  o.elements = elements;
  o.slot = slot;
  o.dtype = dt;
  o.buffer = buffer;
  o.label = std::move(label);
  // Issued (non_blocking) after the work enqueued so far on the stream that produced the data.
  const std::uint32_t after = e.last_on(overlap ? Stream::Reduce : Stream::Compute);
  if (after != kNone) o.deps.push_back(after);
  return e.op(std::move(o));
}

std::uint32_t Ctx::collective(CollectiveKind k, Elements numel, Elements out_numel, DType dt,
                              ReduceOp op, Stream st, const std::string& what, std::int32_t dst) {
  std::string label = what + ": " + short_name(k) + "(";
  if (k == CollectiveKind::Reduce) label += std::to_string(dst) + ",";
  label += std::to_string(k == CollectiveKind::AllGather ? out_numel : numel);
  if (k == CollectiveKind::AllGather) label += "," + std::to_string(numel);
  label += ")";
  return e.collective(k, numel, out_numel, dt, op, st, std::move(label), dst);
}

void Ctx::alloc_grad(std::uint32_t p) {
  if (grad_buf[p] == kNone || grad_live[p]) return;
  e.alloc(grad_buf[p]);
  grad_live[p] = true;
}

void Ctx::free_grad(std::uint32_t p, Stream st) {
  if (grad_buf[p] == kNone || !grad_live[p]) return;
  e.free(grad_buf[p], st);
  grad_live[p] = false;
}

Op make_op(OpKind kind, std::string label, Elements elements, DType dt, std::uint32_t buffer) {
  Op o;
  o.kind = kind;
  o.label = std::move(label);
  o.elements = elements;
  o.dtype = dt;
  o.buffer = buffer;
  return o;
}

std::string short_name(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::AllReduce:
      return "AR";
    case CollectiveKind::Reduce:
      return "RD";
    case CollectiveKind::Broadcast:
      return "BC";
    case CollectiveKind::AllGather:
      return "AG";
    case CollectiveKind::ReduceScatter:
      return "RS";
  }
  return "?";
}

}  // namespace zerosim::schedule::s12
