// build_stage012: the DeepSpeed-mode schedule of stage 0, 1 and 2 (deepspeed_zero.md §3–§6, §12).
// This file holds the init phase of DeepSpeedZeroOptimizer (flat buffers,
// master partitions, offload buffers), the micro-step loop with its gradient hooks, the stage-1
// boundary pass and the backward epilogue; the bucket, the step and the stage-0/BF16 paths live in
// the other stage012_*.cc files.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "schedule/stage012_internal.h"

namespace zerosim::schedule {
namespace s12 {
namespace {

Buffer make_buffer(std::string name, std::string spec, BufferCategory cat, MemoryPool pool,
                   DType dt, Elements numel, bool persistent) {
  Buffer b;
  b.name = std::move(name);
  b.spec_id = std::move(spec);
  b.category = cat;
  b.pool = pool;
  b.dtype = dt;
  b.numel = numel;
  b.persistent = persistent;
  return b;
}

// §3.1: B1 (flat LP params, replacing the module's storage), B2 (fp32 master partition, cloned from
// the rank's LP slice), and with optimizer offload B4–B7.
void emit_zero_init(Ctx& c) {
  const std::uint32_t module = emit_module_params(c, false);
  const MemoryPool host =
      c.ds.zero.offload_optimizer.pin_memory ? MemoryPool::Pinned : MemoryPool::Host;
  for (std::size_t g = 0; g < c.plan.groups.size(); ++g) {
    const FlatGroup& fg = c.plan.groups[g];
    const std::string gs = std::to_string(g);
    c.b1.push_back(
        c.e.buffer(make_buffer("bit16_groups_flat[" + gs + "]", "B1", BufferCategory::Param16,
                               MemoryPool::Device, c.lp, fg.aligned, true)));
    c.e.alloc(c.b1.back());
    flatten_module_params(c, fg, c.b1.back(), true, "bit16_groups_flat[" + gs + "]");
  }
  c.e.free(module);
  // With pinned offload the host holds transients at init (DeepSpeed edaa722
  // runtime/zero/stage_1_and_2.py:492-507): `.to(device="cpu", dtype=fp32)` makes an unpinned fp32
  // copy that pin_memory then copies into pinned memory (both live for a moment), and the LP
  // `temp_buffer_bit16` that pin_memory copies into B5 stays referenced until the next group
  // rebinds the name, the last one until __init__ returns (v0.14.4 has no temp_buffer_bit16:
  // stage_1_and_2.py:393-400 there).
  const bool pinned_offload = c.offload && host == MemoryPool::Pinned;
  std::uint32_t unpinned_lp = kNone;
  for (std::size_t g = 0; g < c.plan.groups.size(); ++g) {
    const Elements s = c.plan.groups[g].partition;
    const std::string gs = std::to_string(g);
    const std::uint32_t clone = c.e.temp("init clone of the rank's LP slice", s, c.lp);
    c.e.alloc(clone);
    std::uint32_t unpinned = kNone;
    if (pinned_offload) {
      unpinned = c.e.buffer(make_buffer("fp32 master before pin_memory [" + gs + "]", "T5",
                                        BufferCategory::Temp, MemoryPool::Host, c.mw, s, false));
      c.e.alloc(unpinned);
    }
    c.b2.push_back(c.e.buffer(make_buffer("single_partition_of_fp32_groups[" + gs + "]", "B2",
                                          BufferCategory::Param32,
                                          c.offload ? host : MemoryPool::Device, c.mw, s, true)));
    c.e.alloc(c.b2.back());
    c.e.copy({.dtype = c.mw,
              .elements = s,
              .src = rank_slice(c.b1[g], s),
              .dst = region(c.b2.back()),
              .label = "master partition from the LP slice"});
    c.e.free(clone);
    if (unpinned != kNone) c.e.free(unpinned);
    if (pinned_offload && !c.v0144) {
      const std::uint32_t lp =
          c.e.buffer(make_buffer("temp_buffer_bit16 [" + gs + "]", "T5", BufferCategory::Temp,
                                 MemoryPool::Host, c.lp, s, false));
      c.e.alloc(lp);
      if (unpinned_lp != kNone) c.e.free(unpinned_lp);
      unpinned_lp = lp;
    }
    if (!c.offload) continue;
    c.b4.push_back(c.e.buffer(make_buffer("fp32 grad partition [" + gs + "]", "B4",
                                          BufferCategory::Grad, host, c.mw, s, true)));
    c.e.alloc(c.b4.back(), Stream::Compute, kNone, true);  // zeros: the padding stays 0
    c.b5.push_back(
        c.e.buffer(make_buffer("param_buffer_of_bit16_for_cpu_offload_groups[" + gs + "]", "B5",
                               BufferCategory::Param16, host, c.lp, s, true)));
    c.e.alloc(c.b5.back());
  }
  if (c.offload) {
    Elements largest = 0;
    for (const FlatGroup& fg : c.plan.groups)
      for (std::uint32_t p : fg.params) largest = std::max(largest, c.m.params[p].numel);
    c.b6 = c.e.buffer(make_buffer("temp_grad_buffer_for_gpu_offload", "B6", BufferCategory::Grad,
                                  MemoryPool::Device, c.lp, largest, true));
    c.e.alloc(c.b6);
    c.b7 = c.e.buffer(make_buffer("temp_grad_buffer_for_cpu_offload", "B7", BufferCategory::Grad,
                                  host, c.lp, largest, true));
    c.e.alloc(c.b7);
  }
  if (unpinned_lp != kNone) c.e.free(unpinned_lp);  // __init__ returns
}

void alloc_ipg(Ctx& c) {
  if (c.ipg_live)
    for (std::uint32_t b : c.ipg) c.e.free(b);  // v0.14.4 replaces the list every backward
  for (std::uint32_t b : c.ipg) c.e.alloc(b);
  c.ipg_live = true;
}

void free_window_buffers(Ctx& c, std::vector<std::uint32_t>& list, Stream st) {
  for (std::uint32_t b : list) c.e.free(b, st);
  list.clear();
}

// independent_gradient_partition_epilogue (§4.7).
void emit_epilogue(Ctx& c, IpgPass& pass, std::uint32_t set, bool boundary, std::uint32_t micro) {
  c.e.set_phase(Phase::Epilogue);
  c.e.marker("epilogue");
  emit_flush(c, pass, static_cast<std::uint32_t>(pass.flushes.size() - 1), set, boundary, micro);
  if (c.overlap) c.e.sync("epilogue: synchronize");
  drop_deferred(c, Stream::Compute);
  if (!c.offload) {
    // The whole grads_in_partition of a set (contiguous: the only kind the pass has).
    const auto gip = [&](std::uint32_t k) {
      return pass.grad_pass == kNone
                 ? Region{}
                 : c.e.derived(
                       {.kind = DerivedKind::PartitionGrads, .pass = pass.grad_pass, .set = k});
    };
    if (set == 1) {  // stage 2, later micro-step: add grads_in_partition #2 into #1, free #2
      c.e.copy({.dtype = c.lp,
                .slot = pass.all_slot,
                .src = gip(1),
                .dst = gip(0),
                .mode = CopyMode::Add,  // accumulator[i] += new_g[i] (§4.7 step 4)
                .label = "add this micro-step's partition grads into the accumulator"});
      free_window_buffers(c, c.epilogue_frees, Stream::Compute);
    }
    if (c.stage == 1 &&
        !c.contiguous) {  // p.grad = None: only the rank's own grads stay referenced
      if (c.kept_stage1_buf == kNone) {
        Buffer b = make_buffer("kept autograd grads (stage 1)", "T1", BufferCategory::Grad,
                               MemoryPool::Device, c.lp, 0, false);
        b.slot = pass.all_slot;
        c.kept_stage1_buf = c.e.buffer(std::move(b));
        // X6: the touching grads of the whole pass, packed in insertion order (one plan of every
        // flush's entries), are what averaged_gradients views (get_flat_partition over the kept
        // p.grad in the epilogue, stage_1_and_2.py:936-953, :2106-2190 at edaa722).
        FlushPlan all;
        for (const auto& entries : pass.entries)
          all.entries.insert(all.entries.end(), entries.begin(), entries.end());
        c.kept_stage1_plan = c.e.flush_plan(std::move(all));
        GradPass gp;
        gp.flush_plans = pass.flush_plan;
        gp.t3.assign(1, std::vector<std::uint32_t>(pass.flush_plan.size(), c.kept_stage1_buf));
        pass.grad_pass = c.e.grad_pass(std::move(gp));
      }
      for (std::uint32_t p : pass.params) c.free_grad(p);
      c.e.adopt(c.kept_stage1_buf, c.kept_stage1_plan);  // what the frees released, at no cost
      c.step_frees.push_back(c.kept_stage1_buf);
    }
    if (boundary) {
      c.averaged_pass = pass.grad_pass;  // averaged_gradients views this pass's T3
      if (c.padding_buf == kNone) {
        Buffer b = make_buffer("averaged_gradients padding zeros", "T4", BufferCategory::Grad,
                               MemoryPool::Device, c.ga, 0, false);
        b.slot = c.slots.padding();
        c.padding_buf = c.e.buffer(std::move(b));
      }
      c.e.alloc(c.padding_buf, Stream::Compute, kNone, true);  // torch.zeros
      c.step_frees.push_back(c.padding_buf);
    }
  }
  if (c.ipg_live) {
    for (std::uint32_t b : c.ipg) c.e.free(b);
    c.ipg_live = false;
  }
  c.ready_for_gradients = false;
}

struct Passes {
  IpgPass backward;  // hook inserts in gradient-ready order
  IpgPass boundary;  // stage 1 without overlap: group order after backward
  bool has_boundary = false;
};

// The hook side of one gradient (§4.2): SETUP_BUCKETS, autograd storage, GA-attribute move, insert.
void on_grad(Ctx& c, IpgPass& pass, std::size_t& cursor, std::uint32_t p, bool boundary,
             std::uint32_t micro, std::uint32_t set) {
  // Stage 1 accumulates into the p.grad of the earlier micro-steps; stage 2 (and the GA
  // attribute mode, which moves p.grad away) gets a fresh one, allocated before autograd writes
  // it. A param in no optimizer group has no hook and no modelled grad storage (no dst).
  const bool grouped = c.plan.param_group[p] != PartitionPlan::kNoGroup;
  const bool first = micro == 0;
  const CopyMode mode = c.grad_live[p] ? CopyMode::Add : CopyMode::Assign;
  if (grouped && (c.stage == 2 || first || c.ga_attr)) c.alloc_grad(p);
  c.e.grad_ready({.param = p,
                  .src = c.lp_home[p],
                  .dst = grouped ? region(c.grad_buf[p], 0, c.m.params[p].numel) : Region{},
                  .mode = mode,
                  .scale = c.loss_scale_gas,
                  .label = "grad ready " + c.pname(p)});
  if (!grouped) return;  // no optimizer group: no hook
  if (c.hooks && !c.v0144 && !c.ready_for_gradients) {
    c.ready_for_gradients = true;
    if (c.contiguous) alloc_ipg(c);
  }
  if (c.ga_attr && c.grad_buf[p] != kNone) {
    const bool first_accum = !c.grad_accum_live[p];  // p.grad_accum is None: it is assigned
    if (!c.grad_accum_live[p]) {
      c.e.alloc(c.grad_accum_buf[p]);
      c.grad_accum_live[p] = true;
    }
    c.e.copy({.dtype = c.ga,
              .elements = c.m.params[p].numel,
              .src = region(c.grad_buf[p]),
              .dst = region(c.grad_accum_buf[p]),
              .mode = first_accum ? CopyMode::Assign : CopyMode::Add,
              .label = "grad_accum += grad"});
    c.free_grad(p);
  }
  const bool inserts = (c.stage == 2 || c.overlap) && (c.stage == 2 || boundary);
  if (!inserts || cursor >= pass.inserts.size() || pass.inserts[cursor].param != p) return;
  if (c.ga_attr) {  // a temporary LP copy of grad_accum is what gets bucketed
    c.alloc_grad(p);
    c.e.copy({.dtype = c.lp,
              .elements = c.m.params[p].numel,
              .src = region(c.grad_accum_buf[p]),
              .dst = region(c.grad_buf[p]),
              .label = "LP copy of grad_accum"});
  }
  emit_insert(c, pass, cursor++, set, boundary, micro);
}

void emit_micro_step(Ctx& c, Passes& passes, std::uint32_t step, std::uint32_t micro) {
  c.e.set_step(step, micro);
  const bool boundary = c.managed && micro + 1 == c.gas;
  const std::uint32_t set = c.stage == 2 && micro > 0 ? 1 : 0;
  if (micro == 0)  // grad_accum survives until the next forward
    for (std::uint32_t p = 0; p < c.m.params.size(); ++p)
      if (c.grad_accum_live[p]) {
        c.e.free(c.grad_accum_buf[p]);
        c.grad_accum_live[p] = false;
      }
  std::size_t cursor = 0;
  emit_forward_backward_with(
      c.e, c.m, c.in.training, c.activation, c.ready_layer,
      [&] {
        if (c.v0144 && c.contiguous) alloc_ipg(c);  // optimizer backward(), before loss.backward()
      },
      [&](std::uint32_t p) { on_grad(c, passes.backward, cursor, p, boundary, micro, set); });
  if (c.stage == 1 && boundary && passes.has_boundary) {
    c.e.set_phase(Phase::BoundaryReduce);
    c.e.marker("reduce_gradients");
    for (std::size_t i = 0; i < passes.boundary.inserts.size(); ++i) {
      const std::uint32_t p = passes.boundary.inserts[i].param;
      if (c.ga_attr) {
        c.alloc_grad(p);
        c.e.copy({.dtype = c.lp,
                  .elements = c.m.params[p].numel,
                  .src = region(c.grad_accum_buf[p]),
                  .dst = region(c.grad_buf[p]),
                  .label = "LP copy of grad_accum"});
      }
      emit_insert(c, passes.boundary, i, 0, boundary, micro);
    }
  }
  if (c.stage == 2 || boundary) {
    IpgPass& pass = c.stage == 1 && passes.has_boundary ? passes.boundary : passes.backward;
    emit_epilogue(c, pass, set, boundary, micro);
  }
}

void emit_zero12_program(Ctx& c) {
  c.e.set_phase(Phase::Init);
  c.e.set_step(0, 0);
  c.e.marker("init");
  emit_zero_init(c);
  for (std::uint32_t i = 0; i < (c.overlap ? 2u : 1u); ++i) {
    Buffer b = make_buffer("ipg[" + std::to_string(i) + "]", "T2", BufferCategory::CommBucket,
                           MemoryPool::Device, c.lp, c.r, false);
    if (c.contiguous) c.ipg.push_back(c.e.buffer(std::move(b)));
  }
  // Gradient-ready order restricted to hooked params, and the stage-1 group-order pass.
  std::vector<std::uint32_t> hooked;
  std::vector<bool> has_grad(c.m.params.size(), false);
  for (std::uint32_t p : c.m.grad_order)
    if (c.m.params[p].trainable && c.plan.param_group[p] != PartitionPlan::kNoGroup) {
      hooked.push_back(p);
      has_grad[p] = true;
    }
  Passes passes;
  if (c.stage == 2 || (c.overlap && c.managed)) {  // the hooks insert into the bucket
    passes.backward = plan_ipg_pass(c.m, hooked, c.r, c.contiguous, c.contiguous && c.overlap);
    prepare_pass(c, passes.backward, "backward");
  }
  if (c.stage == 1 && (!c.overlap || !c.managed)) {
    std::vector<std::uint32_t> order;  // original group order (not the round-robin flat order)
    for (const FlatGroup& fg : c.plan.groups)
      for (std::uint32_t p : fg.params)
        if (has_grad[p]) order.push_back(p);
    passes.boundary = plan_ipg_pass(c.m, order, c.r, c.contiguous, false);
    prepare_pass(c, passes.boundary, "reduce_gradients");
    passes.has_boundary = true;
  }
  for (std::uint32_t step = 0; step < c.in.steps; ++step) {
    for (std::uint32_t micro = 0; micro < c.gas; ++micro) emit_micro_step(c, passes, step, micro);
    if (!c.managed) {
      // Unmanaged accumulation: no backward is a boundary; stage 1 reduces inside step() (§6).
      c.e.set_step(step, c.gas - 1);
      if (c.stage == 1) {
        c.e.set_phase(Phase::Step);
        for (std::size_t i = 0; i < passes.boundary.inserts.size(); ++i)
          emit_insert(c, passes.boundary, i, 0, true, c.gas - 1);
        emit_epilogue(c, passes.boundary, 0, true, c.gas - 1);
      }
    }
    emit_zero_step(c, step);
  }
  c.e.set_phase(Phase::PostStep);
  for (std::uint32_t p = 0; p < c.m.params.size(); ++p)
    if (c.grad_accum_live[p])
      c.e.free(c.grad_accum_buf[p]);  // at the next forward, after the program
}

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

void create_shared_buffers(Ctx& c) {
  for (std::uint32_t p = 0; p < c.m.params.size(); ++p) {
    const ParamTensor& t = c.m.params[p];
    if (!t.trainable || t.numel == 0) continue;
    c.grad_buf[p] = c.e.buffer(make_buffer("grad:" + t.name, "T1", BufferCategory::Grad,
                                           MemoryPool::Device, c.lp, t.numel, false));
    if (c.ga_attr)
      c.grad_accum_buf[p] = c.e.buffer(make_buffer("grad_accum:" + t.name, "", BufferCategory::Grad,
                                                   MemoryPool::Device, c.ga, t.numel, false));
  }
  const auto bytes = layer_activation_bytes(c.m, c.in.training, c.lp);
  c.activation.assign(c.m.layers.size(), kNone);
  for (std::size_t l = 0; l < bytes.size() && l < c.m.layers.size(); ++l)
    if (bytes[l] > 0)
      c.activation[l] = c.e.buffer(make_buffer("activations:" + c.m.layers[l].name, "",
                                               BufferCategory::Activation, MemoryPool::Device,
                                               DType::UInt8, bytes[l], false));
  c.ready_layer = grad_ready_layer(c.m);
}

void fill_meta(Ctx& c, Schedule& s) {
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
      std::string(c.v0144 ? "release v0.14.4" : "commit edaa7221267243c7be7fb49c5d5f5c4fb97b4641"));
  if (c.path == OptimizerPath::Bf16Optimizer)
    meta.notes.push_back(
        "bf16 + stage 1 + grad_accum_dtype fp32 runs BF16_Optimizer, not the ZeRO optimizer");
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
  s12::Ctx c(in, e);
  s12::fill_meta(c, s);
  e.reserve_ops(in.model->params.size());
  s12::create_shared_buffers(c);
  if (c.path == OptimizerPath::ZeroStage1And2) {
    s12::emit_zero12_program(c);
  } else {
    s12::emit_engine_allreduce_program(c);
  }
  fill_tensor_table(s, in, c.grad_buf);
  for (const auto& d : c.slots.defs()) s.meta.slot_names.push_back(d.name);
  Diagnostics d;
  s.roles = s12::compute_roles(*in.model, *in.plan, c.slots, d);
  if (d.has_errors()) return Result<Schedule>(d);
  return s;
}

}  // namespace zerosim::schedule
