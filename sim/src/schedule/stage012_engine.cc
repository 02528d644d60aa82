// The paths where the DeepSpeed engine, not the ZeRO optimizer, reduces gradients
// (deepspeed_zero.md §3.4, §3.5, §9 G21): stage 0 (bare optimizer for fp32, FP16_Optimizer for
// fp16/bf16) and the BF16_Optimizer reroute of stage 1 + bf16 + fp32 gradient accumulation. Both
// reduce once per optimizer step, at the GA boundary, with buffered_allreduce_fallback's fixed
// 5e8-element CHUNK_GT rule. This file holds the engine's side (EngineAllReduce, the micro-step
// loop of emit_engine_program) and what the three optimizers share (EngineOptimizer); the
// optimizers themselves are in stage012_engine_opt.cc.
#include <string>
#include <vector>

#include "schedule/stage012_pieces.h"

namespace zerosim::schedule::s12 {
namespace {

/// MEMORY_OPT_ALLREDUCE_SIZE (engine.py:160): the engine's chunk limit, whatever reduce_bucket_size
/// says.
constexpr Elements kEngineChunk = 500000000;

}  // namespace

// buffered_allreduce_fallback: CHUNK_GT(5e8) over `sizes`; each chunk flattened (a copy unless one
// tensor already in CD, reduced in place in `items[i]`), all-reduced in CD, post-scaled, copied
// back: the flatten reads the chunk's items as one list, the copy-back writes the same list.
void EngineAllReduce::reduce(const std::vector<Elements>& sizes, const std::vector<Region>& items,
                             DType item_dt) {
  for (const auto& [b, e] : chunk_gt(sizes, kEngineChunk)) {
    Elements total = 0;
    for (std::size_t i = b; i < e; ++i) total += sizes[i];
    const bool flatten = e - b > 1 || cfg_.cd != item_dt;
    std::uint32_t tmp = kNone;
    Region chunk;
    if (flatten) {
      std::vector<Piece> pieces;
      for (std::size_t i = b; i < e; ++i)
        pieces.push_back({items[i].buffer, items[i].offset, sizes[i]});
      chunk = list_region(e_.list(std::move(pieces)));
      tmp = e_.temp("engine all-reduce flatten", total, cfg_.cd);
      e_.alloc(tmp);
      e_.copy({.dtype = cfg_.cd,
               .elements = total,
               .src = chunk,
               .dst = region(tmp),
               .label = "flatten grads for the engine all-reduce"});
    }
    e_.collective(
        {.dtype = cfg_.cd,
         .numel = total,
         .out_numel = total,
         .op = ReduceOp::Sum,
         .src = flatten ? region(tmp) : items[b],
         .scale = cfg_.average,  // post-scaled by 1/W (§3.5)
         .label = collective_label("engine all-reduce", CollectiveKind::AllReduce, total, total)});
    if (flatten) {
      e_.copy({.dtype = item_dt,
               .elements = total,
               .src = region(tmp),
               .dst = chunk,
               .label = "copy reduced grads back"});
      e_.free(tmp);
    }
  }
}

// The local statistics step() reads, after the engine's all-reduce (so every rank computes the
// same values and no collective follows): one squared norm per param group into the norms scratch
// (FP16_Optimizer's get_flattened_grad_norm over the fp32 flat grads, read here from the 16-bit
// grads they are cast from exactly; BF16_Optimizer's get_global_norm_of_tensors over the fp32
// gradient buffer; the bare optimizer's clip_grad_norm_ over p.grad), and FP16_Optimizer's
// CheckOverflow.has_overflow over the fp16 grads (runtime/utils.py: no all-reduce without model
// parallelism, MoE or zero_reduce_scatter), or-ed over the groups into the flag. `skip`: an
// overflow step, whose step() returns after the check, before any norm.
void EngineOptimizer::local_grad_stats(bool check, bool skip) {
  if (norms_ == kNone) {
    norms_ = e_.scratch("grad norms (scratch)", cfg_.plan.groups.size(), DType::Float32);
    if (check) overflow_ = e_.scratch("overflow flag (scratch)", 1, DType::UInt8);
  }
  for (const OpKind kind : {OpKind::GradOverflow, OpKind::GradNorm}) {
    const bool norm = kind == OpKind::GradNorm;
    if ((!norm && !check) || (norm && skip)) continue;
    bool first = true;
    for (std::size_t g = 0; g < cfg_.plan.groups.size(); ++g) {
      const FlatGroup& fg = cfg_.plan.groups[g];
      if (fg.numel == 0) continue;
      DType dt = cfg_.lp;
      const Region src = stat_source(g, dt);
      e_.grad_stat({.kind = kind,
                    .dtype = dt,
                    .elements = fg.numel,
                    .src = src,
                    .dst = norm ? region(norms_, g, 1) : region(overflow_, 0, 1),
                    .mode = norm || first ? CopyMode::Assign : CopyMode::Add,
                    .label = std::string(norm ? "local squared grad norm" : "local inf/nan check") +
                             " group " + std::to_string(g)});
      first = false;
    }
  }
}

Region EngineOptimizer::stat_source(std::size_t g, DType& dt) {
  dt = cfg_.lp;
  return group_grads(cfg_.plan.groups[g]);
}

Region EngineOptimizer::group_grads(const FlatGroup& fg) {
  std::vector<Piece> grads;
  for (std::uint32_t p : fg.flat_order)
    grads.push_back({module_.grad(p), 0, cfg_.m.params[p].numel});
  return list_region(e_.list(std::move(grads)));
}

std::uint32_t EngineOptimizer::adam_states(const std::string& name, Elements numel,
                                           const std::string& spec) {
  Buffer b;
  b.name = name;
  b.spec_id = spec;
  b.category = BufferCategory::OptimState;
  b.dtype = cfg_.mw;
  b.numel = numel;
  b.persistent = true;
  const std::uint32_t id = e_.buffer(std::move(b));
  e_.alloc(id, Stream::Compute, kNone, /*zero_fill=*/true);  // Adam states: torch.zeros_like
  return id;
}

void emit_engine_program(const Config& cfg, Emitter& e, EngineModule& module,
                         EngineOptimizer& opt) {
  e.set_phase(Phase::Init);
  e.set_step(0, 0);
  e.marker("init");
  opt.init();
  for (std::uint32_t step = 0; step < cfg.in.steps; ++step) {
    for (std::uint32_t micro = 0; micro < cfg.gas; ++micro) {
      e.set_step(step, micro);
      const bool boundary = cfg.managed && micro + 1 == cfg.gas;
      emit_forward_backward(e, cfg.m, cfg.in.training, module.activations(), module.ready_layer(),
                            [&](std::uint32_t p) {
                              // Later micro-steps accumulate into p.grad (unless the optimizer
                              // zeroes it).
                              const bool add = module.grad_live(p) && opt.accumulates_in_grad();
                              if (micro == 0) module.alloc_grad(p);
                              e.grad_ready({.param = p,
                                            .src = module.home(p),
                                            .dst = region(module.grad(p), 0, cfg.m.params[p].numel),
                                            .mode = add ? CopyMode::Add : CopyMode::Assign,
                                            .scale = cfg.loss_scale_gas,
                                            .label = e.label("grad ready ", cfg.pname(p))});
                            });
      opt.backward_epilogue(micro);
      if (!boundary) continue;
      e.set_phase(Phase::BoundaryReduce);
      e.marker("allreduce_gradients");
      opt.allreduce_gradients();
    }
    // engine.step() -> _take_model_step (engine.py:3326): the optimizer's step, then zero_grad.
    e.set_step(step, cfg.gas - 1);
    e.set_phase(Phase::Step);
    e.marker("step");
    if (!cfg.managed) opt.allreduce_gradients();  // unmanaged: the reduction is inside step()
    opt.step(step);
    e.marker("zero_grad");
    module.zero_grad();
  }
}

}  // namespace zerosim::schedule::s12
