// build_stage012: the DeepSpeed-mode schedule of stage 0, 1 and 2 (deepspeed_zero.md §3–§6, §12),
// and ZeroOptimizer, the piece that plays DeepSpeedZeroOptimizer as the engine drives it
// (stage_1_and_2.py at edaa722): its __init__ (flat buffers, master partitions, offload buffers,
// :146), the gradient hooks (:1152), every micro-step with its forward/backward, the stage-1
// boundary pass (reduce_gradients, :861) and the backward epilogue, then step(). The bucket, the
// averaged gradients, the offload copies, step() and the stage-0/BF16 paths are the other pieces
// (stage012_pieces.h).
#include <string>
#include <utility>
#include <vector>

#include "schedule/stage012_pieces.h"

namespace zerosim::schedule {
namespace s12 {

ZeroOptimizer::ZeroOptimizer(const Config& cfg, Emitter& e, SlotTable& slots, EngineModule& module)
    : cfg_(cfg),
      e_(e),
      module_(module),
      offload_(cfg, e, slots),
      averaged_(cfg, e, slots, module),
      buckets_(cfg, e, slots, module, offload_, averaged_),
      step_(cfg, e, slots, module, flat_, offload_, averaged_) {}

// §3.1: B1 (flat LP params, replacing the module's storage), B2 (fp32 master partition, cloned from
// the rank's LP slice), and with optimizer offload B4–B7 (and pinned offload's init-time host
// transients, CpuOffload).
void ZeroOptimizer::init() {
  const std::uint32_t module = module_.emit_params(false);
  for (std::size_t g = 0; g < cfg_.plan.groups.size(); ++g) {
    const FlatGroup& fg = cfg_.plan.groups[g];
    const std::string name = "bit16_groups_flat[" + std::to_string(g) + "]";
    flat_.bit16_flat.push_back(e_.buffer(make_buffer(
        name, "B1", BufferCategory::Param16, MemoryPool::Device, cfg_.lp, fg.aligned, true)));
    e_.alloc(flat_.bit16_flat.back());
    module_.flatten_into(fg, flat_.bit16_flat.back(), true, name);
  }
  e_.free(module);
  for (std::size_t g = 0; g < cfg_.plan.groups.size(); ++g) {
    const Elements s = cfg_.plan.groups[g].partition;
    const std::string gs = std::to_string(g);
    const std::uint32_t clone = e_.temp("init clone of the rank's LP slice", s, cfg_.lp);
    e_.alloc(clone);
    // Pinned offload: the unpinned fp32 copy pin_memory copies B2 from (CpuOffload).
    const std::uint32_t unpinned = cfg_.offload ? offload_.unpinned_master(g, s) : kNone;
    flat_.fp32_partition.push_back(e_.buffer(
        make_buffer("single_partition_of_fp32_groups[" + gs + "]", "B2", BufferCategory::Param32,
                    cfg_.offload ? cfg_.host_pool : MemoryPool::Device, cfg_.mw, s, true)));
    e_.alloc(flat_.fp32_partition.back());
    e_.copy({.dtype = cfg_.mw,
             .elements = s,
             .src = rank_slice(flat_.bit16_flat[g], s),
             .dst = region(flat_.fp32_partition.back()),
             .label = "master partition from the LP slice"});
    e_.free(clone);
    if (cfg_.offload) offload_.create_group(g, s, unpinned);
  }
  if (cfg_.offload) {
    offload_.create_staging();
    offload_.init_returns();
  }
}

void ZeroOptimizer::lp_copy_of_grad_accum(std::uint32_t p) {
  module_.alloc_grad(p);
  e_.copy({.dtype = cfg_.lp,
           .elements = cfg_.m.params[p].numel,
           .src = region(module_.grad_accum(p)),
           .dst = region(module_.grad(p)),
           .label = e_.label("LP copy of grad_accum")});
}

// The hook side of one gradient (§4.2): SETUP_BUCKETS, autograd storage, GA-attribute move, insert.
void ZeroOptimizer::on_grad(IpgPass& pass, std::size_t& cursor, std::uint32_t p, bool boundary,
                            std::uint32_t micro, std::uint32_t set) {
  // Stage 1 accumulates into the p.grad of the earlier micro-steps; stage 2 (and the GA
  // attribute mode, which moves p.grad away) gets a fresh one, allocated before autograd writes
  // it. A param in no optimizer group has no hook and no modelled grad storage (no dst).
  const bool grouped = cfg_.plan.param_group[p] != PartitionPlan::kNoGroup;
  const bool first = micro == 0;
  const CopyMode mode = module_.grad_live(p) ? CopyMode::Add : CopyMode::Assign;
  if (grouped && (cfg_.stage == 2 || first || cfg_.ga_attr)) module_.alloc_grad(p);
  e_.grad_ready({.param = p,
                 .src = module_.home(p),
                 .dst = grouped ? region(module_.grad(p), 0, cfg_.m.params[p].numel) : Region{},
                 .mode = mode,
                 .scale = cfg_.loss_scale_gas,
                 .label = e_.label("grad ready ", cfg_.pname(p))});
  if (!grouped) return;  // no optimizer group: no hook
  buckets_.on_first_hook();
  if (cfg_.ga_attr && module_.grad(p) != kNone) {
    const bool first_accum = !module_.grad_accum_live(p);  // p.grad_accum is None: it is assigned
    module_.alloc_grad_accum(p);
    e_.copy({.dtype = cfg_.ga,
             .elements = cfg_.m.params[p].numel,
             .src = region(module_.grad(p)),
             .dst = region(module_.grad_accum(p)),
             .mode = first_accum ? CopyMode::Assign : CopyMode::Add,
             .label = e_.label("grad_accum += grad")});
    module_.free_grad(p);
  }
  const bool inserts = (cfg_.stage == 2 || cfg_.overlap) && (cfg_.stage == 2 || boundary);
  if (!inserts || cursor >= pass.inserts.size() || pass.inserts[cursor].param != p) return;
  if (cfg_.ga_attr) lp_copy_of_grad_accum(p);  // a temporary LP copy of grad_accum is bucketed
  buckets_.insert(pass, cursor++, set, boundary, micro);
}

void ZeroOptimizer::micro_step(std::uint32_t step, std::uint32_t micro) {
  e_.set_step(step, micro);
  const bool boundary = cfg_.managed && micro + 1 == cfg_.gas;
  const std::uint32_t set = cfg_.stage == 2 && micro > 0 ? 1 : 0;
  if (micro == 0) module_.free_grad_accums();  // grad_accum survives until the next forward
  std::size_t cursor = 0;
  emit_forward_backward_with(
      e_, cfg_.m, cfg_.in.training, module_.activations(), module_.ready_layer(),
      [&] {
        // v0.14.4: the optimizer's backward() sets the buckets up before loss.backward().
        if (cfg_.v0144 && cfg_.contiguous) buckets_.setup();
      },
      [&](std::uint32_t p) { on_grad(passes_.backward, cursor, p, boundary, micro, set); });
  if (cfg_.stage == 1 && boundary && passes_.has_boundary) {
    e_.set_phase(Phase::BoundaryReduce);
    e_.marker("reduce_gradients");
    for (std::size_t i = 0; i < passes_.boundary.inserts.size(); ++i) {
      if (cfg_.ga_attr) lp_copy_of_grad_accum(passes_.boundary.inserts[i].param);
      buckets_.insert(passes_.boundary, i, 0, boundary, micro);
    }
  }
  if (cfg_.stage == 2 || boundary) {
    IpgPass& pass = cfg_.stage == 1 && passes_.has_boundary ? passes_.boundary : passes_.backward;
    buckets_.epilogue(pass, set, boundary, micro);
  }
}

// Gradient-ready order restricted to hooked params, and the stage-1 group-order pass.
void ZeroOptimizer::plan_passes() {
  const ModelDesc& m = cfg_.m;
  std::vector<std::uint32_t> hooked;
  std::vector<bool> has_grad(m.params.size(), false);
  for (std::uint32_t p : m.grad_order)
    if (m.params[p].trainable && cfg_.plan.param_group[p] != PartitionPlan::kNoGroup) {
      hooked.push_back(p);
      has_grad[p] = true;
    }
  if (cfg_.stage == 2 || (cfg_.overlap && cfg_.managed)) {  // the hooks insert into the bucket
    passes_.backward =
        plan_ipg_pass(m, hooked, cfg_.r, cfg_.contiguous, cfg_.contiguous && cfg_.overlap);
    buckets_.prepare(passes_.backward, "backward");
  }
  if (cfg_.stage == 1 && (!cfg_.overlap || !cfg_.managed)) {
    std::vector<std::uint32_t> order;  // original group order (not the round-robin flat order)
    for (const FlatGroup& fg : cfg_.plan.groups)
      for (std::uint32_t p : fg.params)
        if (has_grad[p]) order.push_back(p);
    passes_.boundary = plan_ipg_pass(m, order, cfg_.r, cfg_.contiguous, false);
    buckets_.prepare(passes_.boundary, "reduce_gradients");
    passes_.has_boundary = true;
  }
}

void ZeroOptimizer::emit_program() {
  e_.set_phase(Phase::Init);
  e_.set_step(0, 0);
  e_.marker("init");
  init();
  buckets_.create_buffers();
  plan_passes();
  for (std::uint32_t step = 0; step < cfg_.in.steps; ++step) {
    for (std::uint32_t micro = 0; micro < cfg_.gas; ++micro) micro_step(step, micro);
    if (buckets_.stopped()) return;  // refused by compute_roles (SlotTable::cap)
    if (!cfg_.managed) {
      // Unmanaged accumulation: no backward is a boundary; stage 1 reduces inside step() (§6).
      e_.set_step(step, cfg_.gas - 1);
      if (cfg_.stage == 1) {
        e_.set_phase(Phase::Step);
        for (std::size_t i = 0; i < passes_.boundary.inserts.size(); ++i)
          buckets_.insert(passes_.boundary, i, 0, true, cfg_.gas - 1);
        buckets_.epilogue(passes_.boundary, 0, true, cfg_.gas - 1);
      }
    }
    step_.step(step);
  }
  e_.set_phase(Phase::PostStep);
  module_.free_grad_accums();  // at the next forward, after the program
}

namespace {

std::string optimizer_name(OptimizerPath p) {
  switch (p) {
    case OptimizerPath::Plain:
      return "torch optimizer (no wrapper)";
    case OptimizerPath::Fp16Optimizer:
      return "FP16_Optimizer";
    case OptimizerPath::Bf16Optimizer:
      return "BF16_Optimizer";
    case OptimizerPath::ZeroStage1And2:
      return "DeepSpeedZeroOptimizer";
    case OptimizerPath::ZeroStage3:
      return "DeepSpeedZeroOptimizer_Stage3";
  }
  return "unknown";
}

void fill_meta(const Config& c, Schedule& s) {
  ScheduleMeta& meta = s.meta;
  meta.model = c.m.name;
  meta.mode = "deepspeed";
  meta.deepspeed_version = c.in.version;
  meta.optimizer = optimizer_name(c.path);
  meta.stage = c.stage;
  meta.world = c.world;
  meta.nodes = static_cast<std::uint32_t>(c.in.cluster.nodes);
  meta.gpus_per_node = static_cast<std::uint32_t>(c.in.cluster.gpus_per_node);
  meta.steps = c.in.steps;
  meta.grad_accum = c.gas;
  meta.lp = c.lp;
  meta.master = c.mw;
  meta.grad_accum_dtype = c.ga;
  meta.comm = c.cd;
  meta.notes.clear();
  // Settings that change the answer and are not modelled (DsConfig::warnings) first: simulate
  // prints the "warning: " notes on its first screen.
  for (const std::string& w : c.ds.warnings) meta.notes.push_back("warning: " + w);
  meta.notes.insert(meta.notes.end(), c.ds.notes.begin(), c.ds.notes.end());
  meta.notes.push_back(
      "DeepSpeed behaviour of " +
      (c.v0144 ? std::string("release v0.14.4") : "commit " + std::string(kDeepSpeedCommit)));
  if (c.path == OptimizerPath::Bf16Optimizer)
    meta.notes.push_back(c.stage == 0 ? "bf16 without ZeRO at v0.14.4 accumulates in fp32 and runs "
                                        "BF16_Optimizer, not FP16_Optimizer"
                                      : "bf16 + stage 1 + grad_accum_dtype fp32 runs "
                                        "BF16_Optimizer, not the ZeRO optimizer");
  if (!c.managed)
    meta.notes.push_back(
        "managed_gradient_accumulation=false: no backward is a boundary; stage 0/1 reduce in "
        "step()");
  meta.notes.push_back(
      "optimizer states modelled as Adam (2 x master elements), created at the first step");
  meta.notes.push_back(overflow_note(c.in.overflow_steps));
}

}  // namespace
}  // namespace s12

Result<Schedule> build_stage012(const ScheduleInput& in) {
  const DsConfig& ds = *in.ds;
  if (ds.zero.stage < 0 || ds.zero.stage > 2 || ds.optimizer_path() == OptimizerPath::ZeroStage3)
    return fail<Schedule>(
        "schedule", "/zero_optimization/stage",
        "expected stage 0, 1 or 2 for this builder, got " + std::to_string(ds.zero.stage));
  if (in.plan->stage == 3)
    return fail<Schedule>("schedule", "/plan/stage",
                          "expected a stage 0-2 flat layout, got a stage 3 plan");
  Schedule s;
  Emitter e(s, in.plan->world);
  e.set_labels(in.labels);
  const s12::Config cfg(in);
  s12::fill_meta(cfg, s);
  e.reserve_ops(in.model->params.size());
  s12::SlotTable slots;
  slots.cap(s12::max_slots_before_refusal(*in.model, *in.plan));
  s12::EngineModule module(cfg, e);
  if (cfg.path == OptimizerPath::ZeroStage1And2) {
    s12::ZeroOptimizer(cfg, e, slots, module).emit_program();
  } else {
    const auto opt = s12::make_engine_optimizer(cfg, e, module);
    s12::emit_engine_program(cfg, e, module, *opt);
  }
  fill_tensor_table(s, in, module.grad_buffers());
  s.meta.slot_names = slots.take_names();
  Diagnostics d;
  s.roles = s12::compute_roles(*in.model, *in.plan, slots, d);
  if (d.has_errors()) return Result<Schedule>(d);
  return s;
}

}  // namespace zerosim::schedule
