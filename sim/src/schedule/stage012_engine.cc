// The paths where the DeepSpeed engine, not the ZeRO optimizer, reduces gradients
// (deepspeed_zero.md §3.4, §3.5, §9 G21): stage 0 (bare optimizer for fp32, FP16_Optimizer for
// fp16/bf16) and the BF16_Optimizer reroute of stage 1 + bf16 + fp32 gradient accumulation. Both
// reduce once per optimizer step, at the GA boundary, with buffered_allreduce_fallback's fixed
// 5e8-element CHUNK_GT rule. Also the init-time module parameters and _broadcast_model shared by
// every stage 0/1/2 program.
#include <string>
#include <vector>

#include "schedule/stage012_internal.h"

namespace zerosim::schedule::s12 {
namespace {

/// MEMORY_OPT_ALLREDUCE_SIZE (engine.py:160): the engine's chunk limit, whatever reduce_bucket_size
/// says.
constexpr Elements kEngineChunk = 500000000;

Buffer engine_buffer(std::string name, BufferCategory cat, DType dt, Elements numel,
                     bool persistent, std::string spec = "") {
  Buffer b;
  b.name = std::move(name);
  b.spec_id = std::move(spec);
  b.category = cat;
  b.dtype = dt;
  b.numel = numel;
  b.persistent = persistent;
  return b;
}

// buffered_allreduce_fallback: CHUNK_GT(5e8) over `sizes`; each chunk flattened (a copy unless one
// tensor already in CD), all-reduced in CD, post-scaled, copied back.
void engine_allreduce(Ctx& c, const std::vector<Elements>& sizes, DType item_dt) {
  for (const auto& [b, e] : chunk_gt(sizes, kEngineChunk)) {
    Elements total = 0;
    for (std::size_t i = b; i < e; ++i) total += sizes[i];
    const bool flatten = e - b > 1 || c.cd != item_dt;
    std::uint32_t tmp = kNone;
    if (flatten) {
      tmp = c.e.temp("engine all-reduce flatten", total, c.cd);
      c.e.alloc(tmp);
      c.e.copy({.dtype = c.cd,
                .elements = total,
                .buffer = tmp,
                .label = "flatten grads for the engine all-reduce"});
    }
    c.e.collective(
        {.dtype = c.cd,
         .numel = total,
         .out_numel = total,
         .op = ReduceOp::Sum,
         .buffer = tmp,
         .label = collective_label("engine all-reduce", CollectiveKind::AllReduce, total, total)});
    if (flatten) {
      c.e.copy({.dtype = item_dt, .elements = total, .label = "copy reduced grads back"});
      c.e.free(tmp);
    }
  }
}

// Stage 0: every trainable param's grad in named_parameters order (zeros for params without one).
void stage0_reduce(Ctx& c) {
  std::vector<Elements> sizes;
  for (std::uint32_t p = 0; p < c.m.params.size(); ++p) {
    if (!c.m.params[p].trainable) continue;
    c.alloc_grad(p);  // a param without a grad gets a zero grad (no-op when it has one)
    sizes.push_back(c.m.params[p].numel);
  }
  engine_allreduce(c, sizes, c.lp);
}

// BF16_Optimizer: the fp32 gradient buffer of each group (Pal_g elements).
void bf16_reduce(Ctx& c) {
  std::vector<Elements> sizes;
  for (const FlatGroup& fg : c.plan.groups) sizes.push_back(fg.aligned);
  engine_allreduce(c, sizes, c.ga);
}

Elements grads_in_groups(const Ctx& c) {
  Elements total = 0;
  for (const FlatGroup& fg : c.plan.groups) total += fg.numel;
  return total;
}

// Init: module params, broadcasts, then the wrapper's flat buffers (§3.4, §3.5).
std::vector<std::uint32_t> emit_engine_init(Ctx& c) {
  const bool plain = c.path == OptimizerPath::Plain;
  const std::uint32_t module = emit_module_params(c, plain);
  std::vector<std::uint32_t> fp32_grads;
  if (plain) return fp32_grads;
  const bool bf16opt = c.path == OptimizerPath::Bf16Optimizer;
  for (std::size_t g = 0; g < c.plan.groups.size(); ++g) {
    const FlatGroup& fg = c.plan.groups[g];
    // FP16_Optimizer flattens without alignment padding; BF16_Optimizer pads to 2W.
    c.b1.push_back(c.e.buffer(
        engine_buffer("flat LP params [" + std::to_string(g) + "]", BufferCategory::Param16, c.lp,
                      bf16opt ? fg.aligned : fg.numel, true, bf16opt ? "B1" : "")));
    c.e.alloc(c.b1.back());
  }
  c.e.free(module);
  for (std::size_t g = 0; g < c.plan.groups.size(); ++g) {
    const FlatGroup& fg = c.plan.groups[g];
    const std::string gs = std::to_string(g);
    const Elements master = bf16opt ? fg.partition : fg.numel;
    c.b2.push_back(c.e.buffer(
        engine_buffer("fp32 master [" + gs + "]", BufferCategory::Param32, c.mw, master, true)));
    c.e.alloc(c.b2.back());
    if (bf16opt) {
      fp32_grads.push_back(c.e.buffer(engine_buffer("fp32 gradient buffer (full) [" + gs + "]",
                                                    BufferCategory::Grad, c.ga, fg.aligned, true)));
      c.e.alloc(fp32_grads.back());
    } else {  // FP16_Optimizer runs a dummy step at init: Adam states exist from the start
      c.b3.push_back(c.e.buffer(engine_buffer("optimizer states [" + gs + "]",
                                              BufferCategory::OptimState, c.mw, 2 * master, true)));
      c.e.alloc(c.b3.back());
    }
  }
  return fp32_grads;
}

void emit_engine_step(Ctx& c, std::uint32_t step) {
  c.e.set_step(step, c.gas - 1);
  c.e.set_phase(Phase::Step);
  c.e.marker("step");
  if (!c.managed) {  // unmanaged accumulation: the reduction happens inside step()
    if (c.path == OptimizerPath::Bf16Optimizer)
      bf16_reduce(c);
    else
      stage0_reduce(c);
  }
  if (c.path == OptimizerPath::Plain) {
    // A bare torch optimizer over the module's params: Adam states appear at its first step.
    const Elements n = grads_in_groups(c);
    if (step == 0) {
      c.b3.push_back(c.e.buffer(
          engine_buffer("optimizer states", BufferCategory::OptimState, c.mw, 2 * n, true)));
      c.e.alloc(c.b3.back());
    }
    c.e.optimizer_step({.dtype = c.mw, .elements = n, .label = "optimizer step"});
  }
  for (std::size_t g = 0; g < c.plan.groups.size() && c.path != OptimizerPath::Plain; ++g) {
    const FlatGroup& fg = c.plan.groups[g];
    const bool bf16opt = c.path == OptimizerPath::Bf16Optimizer;
    const Elements n = bf16opt ? fg.partition : fg.numel;
    if (n == 0) continue;
    std::uint32_t tmp = kNone;
    if (!bf16opt) {  // FP16_Optimizer: flat fp32 copy of the group's grads
      tmp = c.e.temp("fp32 flat grads [" + std::to_string(g) + "]", n, c.mw);
      c.e.alloc(tmp);
      c.e.copy({.dtype = c.mw, .elements = n, .buffer = tmp, .label = "flatten and cast grads"});
    } else if (step == 0) {
      c.b3.push_back(
          c.e.buffer(engine_buffer("optimizer states [" + std::to_string(g) + "]",
                                   BufferCategory::OptimState, c.mw, 2 * n, true, "B3")));
      c.e.alloc(c.b3.back());
    }
    c.e.optimizer_step({.dtype = c.mw,
                        .elements = n,
                        .buffer = c.b2[g],
                        .label = "optimizer step group " + std::to_string(g)});
    if (tmp != kNone) c.e.free(tmp);
    c.e.copy({.kind = OpKind::WriteBack,
              .dtype = c.lp,
              .elements = n,
              .buffer = c.b1[g],
              .label = "master -> LP params of group " + std::to_string(g)});
  }
  if (c.path == OptimizerPath::Bf16Optimizer) {
    emit_param_all_gather(c);
  } else {
    c.e.set_phase(Phase::PostStep);
  }
  c.e.marker("zero_grad");
  for (std::uint32_t p = 0; p < c.m.params.size(); ++p) c.free_grad(p);
}

}  // namespace

std::uint32_t emit_module_params(Ctx& c, bool trainable_persistent) {
  Elements flattened = 0, total = 0;
  for (const FlatGroup& fg : c.plan.groups) flattened += fg.numel;
  for (const ParamTensor& p : c.m.params) total += p.numel;
  const std::uint32_t module = c.e.buffer(engine_buffer(
      "module params (optimized)", BufferCategory::Param16, c.lp, flattened, trainable_persistent));
  c.e.alloc(module);
  if (total > flattened) {  // frozen params and params in no optimizer group keep their storage
    const std::uint32_t rest = c.e.buffer(engine_buffer(
        "module params (not optimized)", BufferCategory::Param16, c.lp, total - flattened, true));
    c.e.alloc(rest);
  }
  // engine _broadcast_model: every param from rank 0, in module.parameters() order (§7.1 item 1).
  for (std::uint32_t p = 0; p < c.m.params.size(); ++p)
    c.e.collective({.kind = CollectiveKind::Broadcast,
                    .dtype = c.lp,
                    .numel = c.m.params[p].numel,
                    .out_numel = c.m.params[p].numel,
                    .root = 0,
                    .label = collective_label("broadcast " + c.pname(p), CollectiveKind::Broadcast,
                                              c.m.params[p].numel, c.m.params[p].numel, 0)});
  return module;
}

void emit_engine_allreduce_program(Ctx& c) {
  c.e.set_phase(Phase::Init);
  c.e.set_step(0, 0);
  c.e.marker("init");
  const std::vector<std::uint32_t> fp32_grads = emit_engine_init(c);
  const bool bf16opt = c.path == OptimizerPath::Bf16Optimizer;
  for (std::uint32_t step = 0; step < c.in.steps; ++step) {
    for (std::uint32_t micro = 0; micro < c.gas; ++micro) {
      c.e.set_step(step, micro);
      const bool boundary = c.managed && micro + 1 == c.gas;
      emit_forward_backward(c.e, c.m, c.in.training, c.activation, c.ready_layer,
                            [&](std::uint32_t p) {
                              c.e.grad_ready({.param = p, .label = "grad ready " + c.pname(p)});
                              if (micro == 0)
                                c.alloc_grad(p);  // later micro-steps accumulate into p.grad
                            });
      if (bf16opt) {  // backward epilogue: every bf16 grad is added into the fp32 buffer
        c.e.set_phase(Phase::Epilogue);
        c.e.copy({.dtype = c.ga,
                  .elements = grads_in_groups(c),
                  .buffer = fp32_grads.empty() ? kNone : fp32_grads.front(),
                  .label = "add bf16 grads into the fp32 gradient buffer"});
      }
      if (!boundary) continue;
      c.e.set_phase(Phase::BoundaryReduce);
      c.e.marker("allreduce_gradients");
      if (bf16opt)
        bf16_reduce(c);
      else
        stage0_reduce(c);
    }
    emit_engine_step(c, step);
  }
}

}  // namespace zerosim::schedule::s12
