// build_stage3: the DeepSpeed stage 3 schedule (deepspeed_zero.md §7, event model §12). Checks the
// inputs the stage 3 pieces rely on, fills the metadata, emits initialization, then for every
// optimizer step and micro-step replays the module hook sequence through the coordinator (FETCH /
// RELEASE / prefetch) and the reducer (grad hooks, IPG flushes), the epilogue, and step() at the
// accumulation boundary. Every rank holds c = ceil(n/W) elements of every param, so the program has
// a single rank role and no slots.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "schedule/stage3_internal.h"

namespace zerosim::schedule {
namespace s3 {

std::uint32_t BufferPool::acquire(Emitter& e, std::string_view name, BufferCategory cat, DType dt,
                                  Elements numel, MemoryPool pool) {
  auto it = index_.find(KeyView{name, dt, numel, pool});
  if (it == index_.end()) {
    it = index_
             .emplace(Key{std::string(name), dt, numel, pool},
                      static_cast<std::uint32_t>(shapes_.size()))
             .first;
    shapes_.emplace_back();
  }
  const std::uint32_t shape = it->second;
  if (std::vector<std::uint32_t>& free_list = shapes_[shape].free; !free_list.empty()) {
    const auto b = free_list.back();
    free_list.pop_back();
    return b;
  }
  const auto index = shapes_[shape].created++;
  Buffer b;
  b.name = std::string(name) + " (" + std::to_string(numel) + ")" +
           (index > 0 ? " #" + std::to_string(index) : "");
  b.category = cat;
  b.pool = pool;
  b.dtype = dt;
  b.numel = numel;
  const auto id = e.buffer(std::move(b));
  if (shape_of_.size() <= id) shape_of_.resize(id + 1, kNone);
  shape_of_[id] = shape;
  return id;
}

void BufferPool::release(std::uint32_t buffer) {
  if (buffer < shape_of_.size() && shape_of_[buffer] != kNone)
    shapes_[shape_of_[buffer]].free.push_back(buffer);
}

namespace {

std::uint32_t named_buffer(Emitter& e, std::string name, BufferCategory cat, DType dt,
                           Elements numel, bool persistent = false) {
  Buffer b;
  b.name = std::move(name);
  b.category = cat;
  b.dtype = dt;
  b.numel = numel;
  b.persistent = persistent;
  return e.buffer(std::move(b));
}

}  // namespace

Context::Context(Schedule& s, const ScheduleInput& in, const Walk& w)
    : e(s, in.plan->world),
      m(*in.model),
      plan(*in.plan),
      ds(*in.ds),
      z(in.ds->zero),
      walk(w),
      version(in.version),
      world(in.plan->world),
      lp(ds.lp_dtype()),
      mw(ds.master_dtype()),
      ga(ds.grad_accum()),
      cd(ds.comm_dtype()),
      overlap(z.overlap_comm),
      offload_opt(z.offload_optimizer.enabled()),
      offload_param(z.offload_param.enabled()),
      zero_init(in.training.zero_init),
      host_pool(MemoryPool::Host),
      gather_stream(overlap ? Stream::Gather : Stream::Compute),
      reduce_stream(overlap ? Stream::Reduce : Stream::Compute) {
  const bool pinned = offload_opt ? z.offload_optimizer.pin_memory : z.offload_param.pin_memory;
  host_pool = pinned ? MemoryPool::Pinned : MemoryPool::Host;
  e.set_labels(in.labels);
  const auto n_sg = plan.sub_groups.size();
  master.assign(n_sg, kNone);
  adam.assign(n_sg, kNone);
  host_fp32_grads.assign(n_sg, kNone);
  sg_of_param.assign(m.params.size(), kNone);
  sg_offset.assign(n_sg, 0);
  part_offset.assign(m.params.size(), 0);
  Elements at = 0;
  for (std::size_t i = 0; i < n_sg; ++i) {
    sg_offset[i] = at;
    for (auto p : plan.sub_groups[i].params)
      if (p < sg_of_param.size()) {
        sg_of_param[p] = static_cast<std::uint32_t>(i);
        part_offset[p] = at;
        at += plan.s3[p].partition;
      }
  }
  Elements frozen_at = 0;
  for (std::uint32_t p = 0; p < m.params.size(); ++p)
    if (sg_of_param[p] == kNone) {
      part_offset[p] = frozen_at;
      frozen_at += plan.s3[p].partition;
    }
  grad_buf.assign(m.params.size(), kNone);
  full_buf.assign(m.params.size(), kNone);
  padded_buf.assign(m.params.size(), kNone);
  for (std::uint32_t p = 0; p < m.params.size(); ++p) {
    const std::string& name = m.params[p].name;
    if (m.params[p].trainable)
      grad_buf[p] = named_buffer(e, "grad:" + name, BufferCategory::Grad, lp, n(p));
    full_buf[p] = named_buffer(e, "gathered:" + name, BufferCategory::GatheredParam, lp, n(p));
    // A persistent param's gathered copy stays resident from every POST_STEP on, program end
    // included.
    padded_buf[p] = named_buffer(e, "gathered (W*c):" + name, BufferCategory::GatheredParam, lp,
                                 c(p) * world, persistent(p));
  }
  const auto act = layer_activation_bytes(m, in.training, lp);
  act_buf.assign(m.layers.size(), kNone);
  for (std::size_t l = 0; l < act.size() && l < m.layers.size(); ++l)
    if (act[l] > 0)
      act_buf[l] = named_buffer(e, "activations:" + m.layers[l].name, BufferCategory::Activation,
                                DType::UInt8, act[l]);
}

bool Context::sg_on_cpu(std::size_t sg) const {
  if (!offload_opt) return false;
  const double count = static_cast<double>(plan.sub_groups.size());
  const auto on_gpu =
      static_cast<std::size_t>(std::floor((1.0 - z.offload_optimizer.ratio) * count));
  return sg >= on_gpu;
}

std::uint32_t Context::collective(CollectiveKind k, Elements numel, Elements out, DType dt,
                                  ReduceOp r, Stream st, std::string label, DepList deps,
                                  std::uint32_t root, Region src, Region dst, double scale) {
  return e.collective({.kind = k,
                       .dtype = dt,
                       .numel = numel,
                       .out_numel = out,
                       .op = r,
                       .root = root,
                       .src = src,
                       .dst = dst,
                       .scale = scale,
                       .stream = st,
                       .deps = std::move(deps),
                       .label = std::move(label)});
}

std::uint32_t Context::data_op(OpKind k, Stream st, Elements elements, DType dt, Region src,
                               Region dst, std::string label, DepList deps, CopyMode mode) {
  return e.copy({.kind = k,
                 .stream = st,
                 .dtype = dt,
                 .elements = elements,
                 .src = src,
                 .dst = dst,
                 .mode = mode,
                 .deps = std::move(deps),
                 .label = std::move(label)});
}

std::uint32_t Context::trace_ids(Elements length) {
  auto [it, fresh] = trace_id_buffers.try_emplace(length, kNone);
  if (fresh)
    it->second = e.scratch("trace check ids (" + std::to_string(length) + ", scratch)", length,
                           kTraceIdDType);
  return it->second;
}

namespace {

constexpr const char* kSource = "schedule";

// Sizes the builder multiplies: Σn (n_available is signed), W·Σc and 2·Σc must fit.
void check_sizes(const ScheduleInput& in, Diagnostics& d) {
  Elements sum_n = 0, sum_c = 0;
  bool ok = true;
  for (std::size_t p = 0; p < in.model->params.size() && ok; ++p) {
    const auto a = checked_add(sum_n, in.model->params[p].numel);
    const auto b = checked_add(sum_c, in.plan->s3[p].partition);
    ok = a && b;
    sum_n = a.value_or(0);
    sum_c = b.value_or(0);
  }
  const std::uint64_t factor = std::max<std::uint64_t>(in.plan->world, 2);
  if (!ok || sum_n > static_cast<Elements>(std::numeric_limits<std::int64_t>::max()) ||
      !checked_mul(sum_c, factor))
    d.error(kSource, "/model",
            "expected parameter sizes whose gathered total fits in 63 bits, got a larger model");
}

Diagnostics check_input(const ScheduleInput& in) {
  Diagnostics d;
  if (in.model == nullptr || in.plan == nullptr || in.ds == nullptr) {
    d.error(kSource, "",
            "expected a model, a partition plan and a DeepSpeed config, got a missing input");
    return d;
  }
  const auto n = in.model->params.size();
  if (in.plan->stage != 3 || in.plan->s3.size() != n)
    d.error(kSource, "/plan",
            "expected a stage 3 partition plan of " + std::to_string(n) + " params, got a stage " +
                std::to_string(in.plan->stage) + " plan of " + std::to_string(in.plan->s3.size()));
  if (in.plan->world == 0 || in.plan->world != in.cluster.world_size())
    d.error(kSource, "/plan/world",
            "expected the plan's world size to equal the cluster's " +
                std::to_string(in.cluster.world_size()) + " ranks, got " +
                std::to_string(in.plan->world));
  if (in.steps == 0) d.error(kSource, "/steps", "expected at least 1 optimizer step, got 0");
  if (in.ds->grad_accum_steps == 0 || in.ds->grad_accum_steps > 0xFFFFFFFFull)
    d.error(kSource, "/gradient_accumulation_steps",
            "expected 1..4294967295 micro-steps per step, got " +
                std::to_string(in.ds->grad_accum_steps));
  if (!d.has_errors()) check_sizes(in, d);
  return d;
}

void fill_meta(Schedule& s, const ScheduleInput& in, const Walk& w) {
  const DsConfig& ds = *in.ds;
  ScheduleMeta& meta = s.meta;
  meta.model = in.model->name;
  meta.mode = "deepspeed";
  meta.deepspeed_version = in.version;
  meta.optimizer = "DeepSpeedZeroOptimizer_Stage3";
  meta.stage = 3;
  meta.world = in.plan->world;
  meta.nodes = static_cast<std::uint32_t>(std::min<std::uint64_t>(in.cluster.nodes, 0xFFFFFFFFu));
  meta.gpus_per_node =
      static_cast<std::uint32_t>(std::min<std::uint64_t>(in.cluster.gpus_per_node, 0xFFFFFFFFu));
  meta.steps = in.steps;
  meta.grad_accum = static_cast<std::uint32_t>(ds.grad_accum_steps);
  meta.lp = ds.lp_dtype();
  meta.master = ds.master_dtype();
  meta.grad_accum_dtype = ds.grad_accum();
  meta.comm = ds.comm_dtype();
  auto& notes = meta.notes;
  // Settings that change the answer and are not modelled (DsConfig::warnings): simulate prints
  // the "warning: " notes on its first screen.
  for (const std::string& warning : ds.warnings) notes.push_back("warning: " + warning);
  // Where the config's values came from (a trainer config, "auto" entries), as stage 0-2 say it.
  notes.insert(notes.end(), ds.notes.begin(), ds.notes.end());
  notes.push_back("DeepSpeedZeroOptimizer_Stage3 as at DeepSpeed " +
                  std::string(deepspeed_version_name(in.version)));
  notes.push_back(
      in.training.zero_init
          ? "zero.Init on: each param is broadcast once and partitioned as it is constructed; the "
            "engine broadcast is skipped"
          : "zero.Init off (the default; --zero-init or training.zero_init turns it on): every GPU "
            "holds the whole model at init and every param is broadcast twice (engine, then "
            "conversion)");
  notes.push_back(w.mapping);
  notes.push_back(
      "iteration 1 records the module trace (no prefetch, every param released after use); "
      "prefetching starts in iteration 2");
  notes.push_back(overflow_note(in.overflow_steps) +
                  "; optimizer states counted as Adam (2 per element)");
  if (w.modules.empty()) notes.push_back("the model has no params: nothing is gathered or reduced");
  notes.push_back(
      "not modelled: the discovering iteration's synchronous gather of each external param at "
      "its first read (every iteration fetches it with its module), ZeRO++ and MiCS, NVMe "
      "swapping");
}

void compute_op(s3::Context& cx, OpKind k, const s3::HookEvent& ev, double flops,
                const char* what) {
  std::string label = cx.e.label(what, " ", cx.m.layers[ev.index].name);
  if (cx.e.labels() && ev.module != kNone && ev.module < cx.walk.modules.size())
    label += " [" + cx.walk.modules[ev.module].name + "]";
  cx.e.compute({k, ev.index, flops * ev.share, std::move(label)});
}

void replay_event(s3::Context& cx, s3::Coordinator& co, s3::Reducer& red, const s3::HookEvent& ev,
                  const TrainingSettings& t) {
  const std::uint32_t i = ev.index;
  switch (ev.kind) {
    case s3::HookKind::Fetch:
      co.fetch(i, ev.backward);
      break;
    case s3::HookKind::Release:
      co.release(i);
      break;
    case s3::HookKind::Forward:
      if (ev.first && cx.act_buf[i] != kNone) cx.e.alloc(cx.act_buf[i]);
      compute_op(cx, OpKind::Forward, ev, layer_forward_flops(cx.m, i, t), "fwd");
      break;
    case s3::HookKind::Recompute:
      compute_op(cx, OpKind::Recompute, ev, layer_forward_flops(cx.m, i, t), "recompute");
      break;
    case s3::HookKind::Backward:
      compute_op(cx, OpKind::Backward, ev, layer_backward_flops(cx.m, i, t), "bwd");
      if (ev.last && cx.act_buf[i] != kNone) cx.e.free(cx.act_buf[i]);
      break;
    case s3::HookKind::GradReady: {
      cx.e.alloc(cx.grad_buf[i]);
      // Autograd read the param from its gathered storage (a fresh gradient each micro-step:
      // the previous one was reduced and dropped).
      red.on_grad(i, cx.e.grad_ready({.param = i,
                                      .elements = cx.n(i),
                                      .dtype = cx.lp,
                                      .src = region(co.storage(i), 0, cx.n(i)),
                                      .dst = region(cx.grad_buf[i]),
                                      .label = cx.e.label("grad ready ", cx.m.params[i].name)}));
      break;
    }
  }
}

// One forward + backward + epilogue (§12 items 1–3).
void run_iteration(s3::Context& cx, s3::Coordinator& co, s3::Reducer& red,
                   const TrainingSettings& t) {
  const bool v0_14_4 = cx.version == DeepSpeedVersion::V0_14_4;
  cx.e.set_phase(Phase::Forward);
  if (!v0_14_4) co.reset_step();  // edaa722: the root module's forward pre-hook
  for (const auto& ev : cx.walk.events) {
    if (ev.backward && cx.e.phase() == Phase::Forward) cx.e.set_phase(Phase::Backward);
    replay_event(cx, co, red, ev, t);
  }
  cx.e.set_phase(Phase::Backward);
  if (v0_14_4) co.reset_step();  // v0.14.4: the optimizer's backward(), after loss.backward()
  cx.e.set_phase(Phase::Epilogue);
  if (!v0_14_4)  // edaa722's epilogue sweeps modules whose post-backward hook never fired
    for (auto mod : cx.walk.leftover) co.release(mod);
  red.epilogue();
}

}  // namespace
}  // namespace s3

Result<Schedule> build_stage3(const ScheduleInput& in) {
  Diagnostics d = s3::check_input(in);
  if (d.has_errors()) return d;
  std::vector<bool> persistent(in.model->params.size(), false);
  for (std::size_t p = 0; p < persistent.size(); ++p) persistent[p] = in.plan->s3[p].persistent;
  auto walk = s3::build_walk(*in.model, in.training.activation_checkpointing, persistent);
  if (!walk.ok()) return walk.diagnostics();
  Schedule s;
  s3::fill_meta(s, in, walk.value());
  s3::Context cx(s, in, walk.value());
  cx.e.reserve_ops(in.model->params.size());
  s3::emit_init(cx);
  s3::Coordinator co(cx);
  s3::Reducer red(cx);
  const auto gas = static_cast<std::uint32_t>(in.ds->grad_accum_steps);
  for (std::uint32_t k = 0; k < in.steps; ++k) {
    for (std::uint32_t j = 0; j < gas; ++j) {
      cx.micro = j;
      cx.boundary = j + 1 == gas;
      cx.e.set_step(k, j);
      s3::run_iteration(cx, co, red, in.training);
      if (cx.boundary)
        s3::emit_step(cx, co,
                      std::binary_search(in.overflow_steps.begin(), in.overflow_steps.end(), k));
    }
  }
  if (cx.internal.has_errors()) return cx.internal;
  fill_tensor_table(s, in, cx.grad_buf);
  RankRole all;
  all.ranks = {{0, in.plan->world - 1}};
  all.representative = 0;
  s.roles.push_back(std::move(all));
  return s;
}

}  // namespace zerosim::schedule
