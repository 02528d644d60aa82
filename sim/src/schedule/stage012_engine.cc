// The paths where the DeepSpeed engine, not the ZeRO optimizer, reduces gradients
// (deepspeed_zero.md §3.4, §3.5, §9 G21): stage 0 (bare optimizer for fp32, FP16_Optimizer for
// fp16/bf16) and the BF16_Optimizer reroute of stage 1 + bf16 + fp32 gradient accumulation. Both
// reduce once per optimizer step, at the GA boundary, with buffered_allreduce_fallback's fixed
// 5e8-element CHUNK_GT rule. Also the init-time module parameters and _broadcast_model shared by
// every stage 0/1/2 program.
#include <algorithm>
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
// tensor already in CD, reduced in place in `items[i]`), all-reduced in CD, post-scaled, copied
// back: the flatten reads the chunk's items as one list, the copy-back writes the same list.
void engine_allreduce(Ctx& c, const std::vector<Elements>& sizes, const std::vector<Region>& items,
                      DType item_dt) {
  for (const auto& [b, e] : chunk_gt(sizes, kEngineChunk)) {
    Elements total = 0;
    for (std::size_t i = b; i < e; ++i) total += sizes[i];
    const bool flatten = e - b > 1 || c.cd != item_dt;
    std::uint32_t tmp = kNone;
    Region chunk;
    if (flatten) {
      std::vector<Piece> pieces;
      for (std::size_t i = b; i < e; ++i)
        pieces.push_back({items[i].buffer, items[i].offset, sizes[i]});
      chunk = list_region(c.e.list(std::move(pieces)));
      tmp = c.e.temp("engine all-reduce flatten", total, c.cd);
      c.e.alloc(tmp);
      c.e.copy({.dtype = c.cd,
                .elements = total,
                .src = chunk,
                .dst = region(tmp),
                .label = "flatten grads for the engine all-reduce"});
    }
    c.e.collective(
        {.dtype = c.cd,
         .numel = total,
         .out_numel = total,
         .op = ReduceOp::Sum,
         .src = flatten ? region(tmp) : items[b],
         .scale = c.average,  // post-scaled by 1/W (§3.5)
         .label = collective_label("engine all-reduce", CollectiveKind::AllReduce, total, total)});
    if (flatten) {
      c.e.copy({.dtype = item_dt,
                .elements = total,
                .src = region(tmp),
                .dst = chunk,
                .label = "copy reduced grads back"});
      c.e.free(tmp);
    }
  }
}

// Stage 0: every trainable param's grad in named_parameters order (zeros for params without one).
void stage0_reduce(Ctx& c) {
  std::vector<Elements> sizes;
  std::vector<Region> items;
  for (std::uint32_t p = 0; p < c.m.params.size(); ++p) {
    if (!c.m.params[p].trainable) continue;
    c.alloc_grad(p, true);  // a param without a grad gets a zero grad (no-op when it has one)
    sizes.push_back(c.m.params[p].numel);
    items.push_back(region(c.grad_buf[p]));
  }
  engine_allreduce(c, sizes, items, c.lp);
}

// BF16_Optimizer: the fp32 gradient buffer of each group (Pal_g elements).
void bf16_reduce(Ctx& c) {
  std::vector<Elements> sizes;
  std::vector<Region> items;
  for (std::size_t g = 0; g < c.plan.groups.size(); ++g) {
    sizes.push_back(c.plan.groups[g].aligned);
    items.push_back(region(g < c.fp32_grads.size() ? c.fp32_grads[g] : kNone));
  }
  engine_allreduce(c, sizes, items, c.ga);
}

Elements grads_in_groups(const Ctx& c) {
  Elements total = 0;
  for (const FlatGroup& fg : c.plan.groups) total += fg.numel;
  return total;
}

// The local statistics step() reads, after the engine's all-reduce (so every rank computes the
// same values and no collective follows): one squared norm per param group into `norms`
// (FP16_Optimizer's get_flattened_grad_norm over the fp32 flat grads, read here from the 16-bit
// grads they are cast from exactly; BF16_Optimizer's get_global_norm_of_tensors over the fp32
// gradient buffer; the bare optimizer's clip_grad_norm_ over p.grad), and FP16_Optimizer's
// CheckOverflow.has_overflow over the fp16 grads (runtime/utils.py: no all-reduce without model
// parallelism, MoE or zero_reduce_scatter), or-ed over the groups into the flag. `skip`: an
// overflow step, whose step() returns after the check, before any norm.
void stage0_grad_stats(Ctx& c, bool skip) {
  const bool bf16opt = c.path == OptimizerPath::Bf16Optimizer;
  const bool check = c.path == OptimizerPath::Fp16Optimizer && c.lp == DType::Float16;
  if (c.norms == kNone) {
    c.norms = c.e.scratch("grad norms (scratch)", c.plan.groups.size(), DType::Float32);
    if (check) c.overflow_flag = c.e.scratch("overflow flag (scratch)", 1, DType::UInt8);
  }
  for (const OpKind kind : {OpKind::GradOverflow, OpKind::GradNorm}) {
    const bool norm = kind == OpKind::GradNorm;
    if ((!norm && !check) || (norm && skip)) continue;
    bool first = true;
    for (std::size_t g = 0; g < c.plan.groups.size(); ++g) {
      const FlatGroup& fg = c.plan.groups[g];
      if (fg.numel == 0) continue;
      Region src;
      DType dt = c.lp;
      if (bf16opt) {
        src = region(c.fp32_grads[g], 0, fg.numel);
        dt = c.ga;
      } else {
        std::vector<Piece> grads;
        for (std::uint32_t p : fg.flat_order)
          grads.push_back({c.grad_buf[p], 0, c.m.params[p].numel});
        src = list_region(c.e.list(std::move(grads)));
      }
      c.e.grad_stat(
          {.kind = kind,
           .dtype = dt,
           .elements = fg.numel,
           .src = src,
           .dst = norm ? region(c.norms, g, 1) : region(c.overflow_flag, 0, 1),
           .mode = norm || first ? CopyMode::Assign : CopyMode::Add,
           .label = std::string(norm ? "local squared grad norm" : "local inf/nan check") +
                    " group " + std::to_string(g)});
      first = false;
    }
  }
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
    flatten_module_params(c, fg, c.b1.back(), bf16opt,
                          "flat LP params [" + std::to_string(g) + "]");
  }
  c.e.free(module);
  for (std::size_t g = 0; g < c.plan.groups.size(); ++g) {
    const FlatGroup& fg = c.plan.groups[g];
    const std::string gs = std::to_string(g);
    const Elements master = bf16opt ? fg.partition : fg.numel;
    c.b2.push_back(c.e.buffer(
        engine_buffer("fp32 master [" + gs + "]", BufferCategory::Param32, c.mw, master, true)));
    c.e.alloc(c.b2.back());
    // X3: the master is the 16-bit values cast up: FP16_Optimizer's
    // fp16_groups_flat[i].clone().float() (fp16/fused_optimizer.py), BF16_Optimizer's
    // bf16_partitioned_groups[i].clone().float() of the rank's partition (bf16_optimizer.py).
    if (master > 0)
      c.e.copy({.dtype = c.mw,
                .elements = master,
                .src = bf16opt ? rank_slice(c.b1[g], master) : region(c.b1[g], 0, master),
                .dst = region(c.b2.back()),
                .label = "fp32 master from the LP params of group " + gs});
    if (bf16opt) {
      fp32_grads.push_back(c.e.buffer(engine_buffer("fp32 gradient buffer (full) [" + gs + "]",
                                                    BufferCategory::Grad, c.ga, fg.aligned, true)));
      c.e.alloc(fp32_grads.back(), Stream::Compute, kNone, true);  // torch.zeros
    } else {  // FP16_Optimizer runs a dummy step at init: Adam states exist from the start
      c.b3.push_back(c.e.buffer(engine_buffer("optimizer states [" + gs + "]",
                                              BufferCategory::OptimState, c.mw, 2 * master, true)));
      c.e.alloc(c.b3.back(), Stream::Compute, kNone,
                /*zero_fill=*/true);  // Adam states: torch.zeros_like
    }
  }
  c.fp32_grads = fp32_grads;
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
  // FP16_Optimizer.step() (deepspeed/runtime/fp16/fused_optimizer.py:246-275 at DeepSpeed
  // 38327e07f): has_overflow over the fp16 grads, _update_scale, and on overflow p.grad = None for
  // every param and return: no flatten, norm, update or write-back. Only fp16 checks (the
  // builder refuses overflow steps for stage 0 otherwise).
  const bool skip =
      c.lp == DType::Float16 && c.path == OptimizerPath::Fp16Optimizer &&
      std::binary_search(c.in.overflow_steps.begin(), c.in.overflow_steps.end(), step);
  stage0_grad_stats(c, skip);
  if (skip) {
    c.e.marker("overflow: step skipped, loss scale lowered");
    c.e.set_phase(Phase::PostStep);
    c.e.marker("zero_grad");
    for (std::uint32_t p = 0; p < c.m.params.size(); ++p) c.free_grad(p);
    return;
  }
  const Region norms = region(c.norms, 0, c.plan.groups.size());
  const Region overflow = c.overflow_flag == kNone ? Region{} : region(c.overflow_flag, 0, 1);
  if (c.path == OptimizerPath::Plain) {
    // A bare torch optimizer over the module's params: Adam states appear at its first step.
    const Elements n = grads_in_groups(c);
    if (step == 0) {
      c.b3.push_back(c.e.buffer(
          engine_buffer("optimizer states", BufferCategory::OptimState, c.mw, 2 * n, true)));
      c.e.alloc(c.b3.back(), Stream::Compute, kNone,
                /*zero_fill=*/true);  // Adam states: torch.zeros_like
    }
    // Master and gradients are the module's separate tensors, in group order: the update
    // writes the weights in place (lp_out = master).
    std::vector<Piece> weights, grads;
    for (const FlatGroup& fg : c.plan.groups)
      for (std::uint32_t p : fg.params) {
        weights.push_back({c.lp_home[p].buffer, c.lp_home[p].offset, c.m.params[p].numel});
        grads.push_back({c.grad_buf[p], 0, c.m.params[p].numel});
      }
    UpdateCall call;
    call.master = list_region(c.e.list(std::move(weights)));
    call.grad = list_region(c.e.list(std::move(grads)));
    call.exp_avg = region(c.b3.front(), 0, n);
    call.exp_avg_sq = region(c.b3.front(), n, n);
    call.lp_out = call.master;
    call.norms = norms;
    c.e.optimizer_step({.dtype = c.mw, .elements = n, .call = call, .label = "optimizer step"});
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
      std::vector<Piece> grads;  // the group's grads in flat order
      for (std::uint32_t p : fg.flat_order)
        grads.push_back({c.grad_buf[p], 0, c.m.params[p].numel});
      c.e.copy({.dtype = c.mw,
                .elements = n,
                .src = list_region(c.e.list(std::move(grads))),
                .dst = region(tmp),
                .label = "flatten and cast grads"});
    } else if (step == 0) {  // indexed by group (a group without elements has none)
      c.b3.resize(c.plan.groups.size(), kNone);
      c.b3[g] = c.e.buffer(engine_buffer("optimizer states [" + std::to_string(g) + "]",
                                         BufferCategory::OptimState, c.mw, 2 * n, true, "B3"));
      c.e.alloc(c.b3[g], Stream::Compute, kNone,
                /*zero_fill=*/true);  // Adam states: torch.zeros_like
    }
    UpdateCall call;
    call.master = region(c.b2[g]);
    call.grad = bf16opt ? rank_slice(c.fp32_grads[g], n) : region(tmp);
    call.exp_avg = region(c.b3[g], 0, n);
    call.exp_avg_sq = region(c.b3[g], n, n);
    call.lp_out = bf16opt ? rank_slice(c.b1[g], n) : region(c.b1[g]);
    call.norms = norms;
    call.overflow = overflow;
    c.e.optimizer_step({.dtype = c.mw,
                        .elements = n,
                        .call = call,
                        .label = "optimizer step group " + std::to_string(g)});
    if (tmp != kNone) c.e.free(tmp);
    c.e.copy({.kind = OpKind::WriteBack,
              .dtype = c.lp,
              .elements = n,
              .src = region(c.b2[g]),
              .dst = bf16opt ? rank_slice(c.b1[g], n) : region(c.b1[g]),
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

void flatten_module_params(Ctx& c, const FlatGroup& fg, std::uint32_t flat, bool aligned,
                           const std::string& name) {
  const Elements n = aligned ? fg.aligned : fg.numel;
  if (n == 0) return;
  // The module's tensors in flat order, each at its flat offset, then the zero padding
  // (flatten_dense_tensors_aligned pads with torch.zeros; FP16_Optimizer's plain
  // _flatten_dense_tensors has none).
  std::vector<Piece> from, into;
  for (std::size_t i = 0; i < fg.flat_order.size(); ++i) {
    const std::uint32_t p = fg.flat_order[i];
    const Elements np = c.m.params[p].numel;
    from.push_back({c.lp_home[p].buffer, c.lp_home[p].offset, np});
    into.push_back({flat, fg.flat_offset[i], np});
    c.lp_home[p] = region(flat, fg.flat_offset[i], np);  // p's 16-bit values now live in B1
  }
  if (aligned && fg.padding > 0) {
    from.push_back({kNone, 0, fg.padding});
    into.push_back({flat, fg.numel, fg.padding});
  }
  c.e.copy({.dtype = c.lp,
            .elements = n,
            .src = list_region(c.e.list(std::move(from))),
            .dst = list_region(c.e.list(std::move(into))),
            .label = "flatten module params into " + name});
}

std::uint32_t emit_module_params(Ctx& c, bool trainable_persistent) {
  Elements flattened = 0, total = 0;
  for (const FlatGroup& fg : c.plan.groups) flattened += fg.numel;
  for (const ParamTensor& p : c.m.params) total += p.numel;
  const std::uint32_t module = c.e.buffer(engine_buffer(
      "module params (optimized)", BufferCategory::Param16, c.lp, flattened, trainable_persistent));
  c.e.alloc(module);
  std::uint32_t rest = kNone;
  if (total > flattened) {  // frozen params and params in no optimizer group keep their storage
    rest = c.e.buffer(engine_buffer("module params (not optimized)", BufferCategory::Param16, c.lp,
                                    total - flattened, true));
    c.e.alloc(rest);
  }
  // The module's storage as two concatenations: group params in group order, then the others in
  // declaration order.
  Elements at = 0, rest_at = 0;
  std::vector<bool> grouped(c.m.params.size(), false);
  for (const FlatGroup& fg : c.plan.groups)
    for (std::uint32_t p : fg.params) {
      grouped[p] = true;
      c.lp_home[p] = region(module, at, c.m.params[p].numel);
      at += c.m.params[p].numel;
    }
  for (std::uint32_t p = 0; p < c.m.params.size(); ++p)
    if (!grouped[p]) {
      c.lp_home[p] = region(rest, rest_at, c.m.params[p].numel);
      rest_at += c.m.params[p].numel;
    }
  // engine _broadcast_model: every param from rank 0, in module.parameters() order (§7.1 item 1).
  for (std::uint32_t p = 0; p < c.m.params.size(); ++p)
    c.e.collective({.kind = CollectiveKind::Broadcast,
                    .dtype = c.lp,
                    .numel = c.m.params[p].numel,
                    .out_numel = c.m.params[p].numel,
                    .root = 0,
                    .src = c.lp_home[p],
                    .label = collective_label("broadcast " + c.pname(p), CollectiveKind::Broadcast,
                                              c.m.params[p].numel, c.m.params[p].numel, 0)});
  return module;
}

void emit_engine_allreduce_program(Ctx& c) {
  c.e.set_phase(Phase::Init);
  c.e.set_step(0, 0);
  c.e.marker("init");
  emit_engine_init(c);
  const bool bf16opt = c.path == OptimizerPath::Bf16Optimizer;
  for (std::uint32_t step = 0; step < c.in.steps; ++step) {
    for (std::uint32_t micro = 0; micro < c.gas; ++micro) {
      c.e.set_step(step, micro);
      const bool boundary = c.managed && micro + 1 == c.gas;
      emit_forward_backward(c.e, c.m, c.in.training, c.activation, c.ready_layer,
                            [&](std::uint32_t p) {
                              // Later micro-steps accumulate into p.grad; BF16_Optimizer
                              // zeroes the grads at each backward prologue (§3.4).
                              const bool add = c.grad_live[p] && !bf16opt;
                              if (micro == 0)
                                c.alloc_grad(p);  // later micro-steps accumulate into p.grad
                              c.e.grad_ready({.param = p,
                                              .src = c.lp_home[p],
                                              .dst = region(c.grad_buf[p], 0, c.m.params[p].numel),
                                              .mode = add ? CopyMode::Add : CopyMode::Assign,
                                              .scale = c.loss_scale_gas,
                                              .label = "grad ready " + c.pname(p)});
                            });
      if (bf16opt) {  // backward epilogue: every bf16 grad is added into the fp32 buffer
        c.e.set_phase(Phase::Epilogue);
        // Each grad into its group's fp32 buffer at its flat offset.
        std::vector<Piece> grads, into;
        for (std::size_t g = 0; g < c.plan.groups.size(); ++g) {
          const FlatGroup& fg = c.plan.groups[g];
          for (std::size_t i = 0; i < fg.flat_order.size(); ++i) {
            const std::uint32_t p = fg.flat_order[i];
            grads.push_back({c.grad_buf[p], 0, c.m.params[p].numel});
            into.push_back({c.fp32_grads[g], fg.flat_offset[i], c.m.params[p].numel});
          }
        }
        // DeepSpeed zeroes the buffer after each step and adds into it: the first micro-step's
        // add is an assign (0 + g), the later ones accumulate.
        c.e.copy({.dtype = c.ga,
                  .elements = grads_in_groups(c),
                  .src = list_region(c.e.list(std::move(grads))),
                  .dst = list_region(c.e.list(std::move(into))),
                  .mode = micro == 0 ? CopyMode::Assign : CopyMode::Add,
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
