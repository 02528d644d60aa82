// The three optimizers the DeepSpeed engine reduces gradients for itself (deepspeed_zero.md §3.4,
// §3.5), each after its DeepSpeed class at edaa722:
//   TorchOptimizer  a bare torch optimizer over the module's params (fp32 stage 0: the engine's
//                   _take_model_step, engine.py:3326, calls optimizer.step() directly);
//   Fp16Optimizer   FP16_Optimizer (runtime/fp16/fused_optimizer.py:33): flat 16-bit groups
//                   without padding, a whole-group fp32 master, Adam states from a dummy step at
//                   init, step() (:245) on a flat fp32 copy of the grads;
//   Bf16Optimizer   BF16_Optimizer (runtime/bf16_optimizer.py:37): flat groups padded to 2W, the
//                   rank's fp32 master partition, a full fp32 gradient buffer the backward epilogue
//                   adds every bf16 grad into (backward_epilogue :351, update_hp_grads :386),
//                   step() (:303) on the partition, then all_gather_dp_groups.
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "schedule/stage012_pieces.h"

namespace zerosim::schedule::s12 {
namespace {

Buffer wrapper_buffer(std::string name, BufferCategory cat, DType dt, Elements numel,
                      std::string spec = "") {
  return make_buffer(std::move(name), std::move(spec), cat, MemoryPool::Device, dt, numel, true);
}

// The wrapper's fp32 master of group g, allocated and (when it has elements) copied from `src`,
// its slice of the flat 16-bit params: FP16_Optimizer's and BF16_Optimizer's __init__ alike.
std::uint32_t master_from_lp(Emitter& e, const Config& cfg, std::size_t g, Elements master,
                             Region src) {
  const std::string gs = std::to_string(g);
  const std::uint32_t b =
      e.buffer(wrapper_buffer("fp32 master [" + gs + "]", BufferCategory::Param32, cfg.mw, master));
  e.alloc(b);
  if (master > 0)
    e.copy({.dtype = cfg.mw,
            .elements = master,
            .src = src,
            .dst = region(b),
            .label = "fp32 master from the LP params of group " + gs});
  return b;
}

// Stage 0 (FP16_Optimizer and the bare optimizer): every trainable param's grad in
// named_parameters order, zeros for params without one.
void allreduce_module_grads(const Config& cfg, EngineModule& module, EngineAllReduce& allreduce) {
  std::vector<Elements> sizes;
  std::vector<Region> items;
  for (std::uint32_t p = 0; p < cfg.m.params.size(); ++p) {
    if (!cfg.m.params[p].trainable) continue;
    module.alloc_grad(p, true);  // a param without a grad gets a zero grad (no-op with one)
    sizes.push_back(cfg.m.params[p].numel);
    items.push_back(region(module.grad(p)));
  }
  allreduce.reduce(sizes, items, cfg.lp);
}

class TorchOptimizer final : public EngineOptimizer {
 public:
  TorchOptimizer(const Config& cfg, Emitter& e, EngineModule& module)
      : EngineOptimizer(cfg, e, module) {}

  void init() override { module_.emit_params(true); }  // the params are never flattened

  void allreduce_gradients() override { allreduce_module_grads(cfg_, module_, allreduce_); }

  void step(std::uint32_t step) override {
    local_grad_stats(false, false);
    // Adam states appear at the optimizer's first step.
    const Elements n = cfg_.grads_in_groups();
    if (step == 0) adam_ = adam_states("optimizer states", 2 * n, "");
    // Master and gradients are the module's separate tensors, in group order: the update
    // writes the weights in place (lp_out = master).
    std::vector<Piece> weights, grads;
    for (const FlatGroup& fg : cfg_.plan.groups)
      for (std::uint32_t p : fg.params) {
        weights.push_back({module_.home(p).buffer, module_.home(p).offset, cfg_.m.params[p].numel});
        grads.push_back({module_.grad(p), 0, cfg_.m.params[p].numel});
      }
    UpdateCall call;
    call.master = list_region(e_.list(std::move(weights)));
    call.grad = list_region(e_.list(std::move(grads)));
    call.exp_avg = region(adam_, 0, n);
    call.exp_avg_sq = region(adam_, n, n);
    call.lp_out = call.master;
    call.norms = norms();
    e_.optimizer_step({.dtype = cfg_.mw, .elements = n, .call = call, .label = "optimizer step"});
    e_.set_phase(Phase::PostStep);
  }

 private:
  std::uint32_t adam_ = kNone;
};

class Fp16Optimizer final : public EngineOptimizer {
 public:
  Fp16Optimizer(const Config& cfg, Emitter& e, EngineModule& module)
      : EngineOptimizer(cfg, e, module) {}

  // __init__ (fused_optimizer.py:40): flat groups without alignment padding, the fp32 master of
  // each whole group (X3: fp16_groups_flat[i].clone().float()), and a dummy step at init, so Adam
  // states exist from the start.
  void init() override {
    const std::uint32_t module = module_.emit_params(false);
    for (std::size_t g = 0; g < cfg_.plan.groups.size(); ++g) {
      const FlatGroup& fg = cfg_.plan.groups[g];
      const std::string name = "flat LP params [" + std::to_string(g) + "]";
      flat_.push_back(e_.buffer(wrapper_buffer(name, BufferCategory::Param16, cfg_.lp, fg.numel)));
      e_.alloc(flat_.back());
      module_.flatten_into(fg, flat_.back(), false, name);
    }
    e_.free(module);
    for (std::size_t g = 0; g < cfg_.plan.groups.size(); ++g) {
      const Elements master = cfg_.plan.groups[g].numel;
      const std::string gs = std::to_string(g);
      master_.push_back(master_from_lp(e_, cfg_, g, master, region(flat_[g], 0, master)));
      adam_.push_back(adam_states("optimizer states [" + gs + "]", 2 * master, ""));
    }
  }

  void allreduce_gradients() override { allreduce_module_grads(cfg_, module_, allreduce_); }

  // step() (fused_optimizer.py:245): per group a flat fp32 copy of the grads, the update of the
  // whole group and the copy back into the flat 16-bit params.
  void step(std::uint32_t step) override {
    // FP16_Optimizer.step() (deepspeed/runtime/fp16/fused_optimizer.py:246-275 at DeepSpeed
    // 38327e07f): has_overflow over the fp16 grads, _update_scale, and on overflow p.grad = None
    // for every param (the engine program's zero_grad) and return: no flatten, norm, update or
    // write-back. Only fp16 checks (the builder refuses overflow steps for stage 0 otherwise).
    const bool check = cfg_.lp == DType::Float16;
    const bool skip = check && std::binary_search(cfg_.in.overflow_steps.begin(),
                                                  cfg_.in.overflow_steps.end(), step);
    local_grad_stats(check, skip);
    if (skip) {
      e_.marker("overflow: step skipped, loss scale lowered");
      e_.set_phase(Phase::PostStep);
      return;
    }
    for (std::size_t g = 0; g < cfg_.plan.groups.size(); ++g) {
      const FlatGroup& fg = cfg_.plan.groups[g];
      const Elements n = fg.numel;
      if (n == 0) continue;
      const std::uint32_t tmp = e_.temp("fp32 flat grads [" + std::to_string(g) + "]", n, cfg_.mw);
      e_.alloc(tmp);
      e_.copy({.dtype = cfg_.mw,
               .elements = n,
               .src = group_grads(fg),  // the group's grads in flat order
               .dst = region(tmp),
               .label = "flatten and cast grads"});
      UpdateCall call;
      call.master = region(master_[g]);
      call.grad = region(tmp);
      call.exp_avg = region(adam_[g], 0, n);
      call.exp_avg_sq = region(adam_[g], n, n);
      call.lp_out = region(flat_[g]);
      call.norms = norms();
      call.overflow = overflow();
      e_.optimizer_step({.dtype = cfg_.mw,
                         .elements = n,
                         .call = call,
                         .label = "optimizer step group " + std::to_string(g)});
      e_.free(tmp);
      e_.copy({.kind = OpKind::WriteBack,
               .dtype = cfg_.lp,
               .elements = n,
               .src = region(master_[g]),
               .dst = region(flat_[g]),
               .label = "master -> LP params of group " + std::to_string(g)});
    }
    e_.set_phase(Phase::PostStep);
  }

 private:
  std::vector<std::uint32_t> flat_, master_, adam_;  ///< per group
};

class Bf16Optimizer final : public EngineOptimizer {
 public:
  Bf16Optimizer(const Config& cfg, Emitter& e, EngineModule& module)
      : EngineOptimizer(cfg, e, module), adam_(cfg.plan.groups.size(), kNone) {}

  // __init__ (bf16_optimizer.py:39): flat groups padded to 2W (B1), the rank's fp32 master
  // partition (X3: bf16_partitioned_groups[i].clone().float()), the full fp32 gradient buffer of
  // each group as zeros.
  void init() override {
    const std::uint32_t module = module_.emit_params(false);
    for (std::size_t g = 0; g < cfg_.plan.groups.size(); ++g) {
      const FlatGroup& fg = cfg_.plan.groups[g];
      const std::string name = "flat LP params [" + std::to_string(g) + "]";
      flat_.push_back(
          e_.buffer(wrapper_buffer(name, BufferCategory::Param16, cfg_.lp, fg.aligned, "B1")));
      e_.alloc(flat_.back());
      module_.flatten_into(fg, flat_.back(), true, name);
    }
    e_.free(module);
    for (std::size_t g = 0; g < cfg_.plan.groups.size(); ++g) {
      const FlatGroup& fg = cfg_.plan.groups[g];
      const std::string gs = std::to_string(g);
      const Elements master = fg.partition;
      master_.push_back(master_from_lp(e_, cfg_, g, master, rank_slice(flat_[g], master)));
      fp32_grads_.push_back(e_.buffer(wrapper_buffer("fp32 gradient buffer (full) [" + gs + "]",
                                                     BufferCategory::Grad, cfg_.ga, fg.aligned)));
      e_.alloc(fp32_grads_.back(), Stream::Compute, kNone, true);  // torch.zeros
    }
  }

  /// backward_prologue zeroes the grads: every backward's autograd gradient is assigned.
  bool accumulates_in_grad() const override { return false; }

  // backward_epilogue -> update_hp_grads: every bf16 grad is added into its group's fp32 buffer
  // at its flat offset. DeepSpeed zeroes the buffer after each step and adds into it: the first
  // micro-step's add is an assign (0 + g), the later ones accumulate.
  void backward_epilogue(std::uint32_t micro) override {
    e_.set_phase(Phase::Epilogue);
    std::vector<Piece> grads, into;
    for (std::size_t g = 0; g < cfg_.plan.groups.size(); ++g) {
      const FlatGroup& fg = cfg_.plan.groups[g];
      for (std::size_t i = 0; i < fg.flat_order.size(); ++i) {
        const std::uint32_t p = fg.flat_order[i];
        grads.push_back({module_.grad(p), 0, cfg_.m.params[p].numel});
        into.push_back({fp32_grads_[g], fg.flat_offset[i], cfg_.m.params[p].numel});
      }
    }
    e_.copy({.dtype = cfg_.ga,
             .elements = cfg_.grads_in_groups(),
             .src = list_region(e_.list(std::move(grads))),
             .dst = list_region(e_.list(std::move(into))),
             .mode = micro == 0 ? CopyMode::Assign : CopyMode::Add,
             .label = "add bf16 grads into the fp32 gradient buffer"});
  }

  // The fp32 gradient buffer of each group (Pal_g elements).
  void allreduce_gradients() override {
    std::vector<Elements> sizes;
    std::vector<Region> items;
    for (std::size_t g = 0; g < cfg_.plan.groups.size(); ++g) {
      sizes.push_back(cfg_.plan.groups[g].aligned);
      items.push_back(region(g < fp32_grads_.size() ? fp32_grads_[g] : kNone));
    }
    allreduce_.reduce(sizes, items, cfg_.ga);
  }

  // step() (bf16_optimizer.py:303): the update of the rank's partition (Adam states created by the
  // first step, indexed by group: a group without elements has none), the write-back into the
  // rank's slice of the flat params, then all_gather_dp_groups.
  void step(std::uint32_t step) override {
    local_grad_stats(false, false);
    for (std::size_t g = 0; g < cfg_.plan.groups.size(); ++g) {
      const Elements n = cfg_.plan.groups[g].partition;
      if (n == 0) continue;
      if (step == 0)
        adam_[g] = adam_states("optimizer states [" + std::to_string(g) + "]", 2 * n, "B3");
      UpdateCall call;
      call.master = region(master_[g]);
      call.grad = rank_slice(fp32_grads_[g], n);
      call.exp_avg = region(adam_[g], 0, n);
      call.exp_avg_sq = region(adam_[g], n, n);
      call.lp_out = rank_slice(flat_[g], n);
      call.norms = norms();
      call.overflow = overflow();
      e_.optimizer_step({.dtype = cfg_.mw,
                         .elements = n,
                         .call = call,
                         .label = "optimizer step group " + std::to_string(g)});
      e_.copy({.kind = OpKind::WriteBack,
               .dtype = cfg_.lp,
               .elements = n,
               .src = region(master_[g]),
               .dst = rank_slice(flat_[g], n),
               .label = "master -> LP params of group " + std::to_string(g)});
    }
    all_gather_dp_groups(cfg_, e_, flat_);
  }

 protected:
  // get_global_norm_of_tensors over the fp32 gradient buffer.
  Region stat_source(std::size_t g, DType& dt) override {
    dt = cfg_.ga;
    return region(fp32_grads_[g], 0, cfg_.plan.groups[g].numel);
  }

 private:
  std::vector<std::uint32_t> flat_, master_, fp32_grads_, adam_;  ///< per group
};

}  // namespace

std::unique_ptr<EngineOptimizer> make_engine_optimizer(const Config& cfg, Emitter& e,
                                                       EngineModule& module) {
  switch (cfg.path) {
    case OptimizerPath::Fp16Optimizer:
      return std::make_unique<Fp16Optimizer>(cfg, e, module);
    case OptimizerPath::Bf16Optimizer:
      return std::make_unique<Bf16Optimizer>(cfg, e, module);
    default:
      return std::make_unique<TorchOptimizer>(cfg, e, module);
  }
}

}  // namespace zerosim::schedule::s12
