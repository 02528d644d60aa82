// AveragedGradients (stage012_pieces.h): what DeepSpeedZeroOptimizer keeps from the reductions to
// step() without CPU offload — the grads_in_partition pieces (T3, stage_1_and_2.py:1678 at
// edaa722), the autograd grads kept without contiguous gradients, and the averaged_gradients lists
// the boundary epilogue builds (:946) with their padding zeros (T4). step() drops them all when it
// sets averaged_gradients[i] = None (:2372); an overflowing step drops them without an update.
#include <string>
#include <utility>
#include <vector>

#include "schedule/stage012_pieces.h"

namespace zerosim::schedule::s12 {
namespace {

Buffer kept_buffer(std::string name, std::string spec, DType dt, std::uint32_t slot) {
  return make_buffer(std::move(name), std::move(spec), BufferCategory::Grad, MemoryPool::Device, dt,
                     0, false, slot);
}

}  // namespace

void AveragedGradients::hold(std::uint32_t buffer, std::uint32_t set) {
  (set == 0 ? step_frees_ : epilogue_frees_).push_back(buffer);
}

void AveragedGradients::release() {
  for (std::uint32_t b : step_frees_) e_.free(b);
  step_frees_.clear();
}

void AveragedGradients::epilogue(IpgPass& pass, std::uint32_t set, bool boundary) {
  // The whole grads_in_partition of a set (contiguous: the only kind the pass has).
  const auto gip = [&](std::uint32_t k) {
    return pass.grad_pass == kNone
               ? Region{}
               : e_.derived(
                     {.kind = DerivedKind::PartitionGrads, .pass = pass.grad_pass, .set = k});
  };
  if (set == 1) {  // stage 2, later micro-step: add grads_in_partition #2 into #1, free #2
    e_.copy({.dtype = cfg_.lp,
             .slot = pass.all_slot,
             .src = gip(1),
             .dst = gip(0),
             .mode = CopyMode::Add,  // accumulator[i] += new_g[i] (§4.7 step 4)
             .label = "add this micro-step's partition grads into the accumulator"});
    for (std::uint32_t b : epilogue_frees_) e_.free(b, Stream::Compute);
    epilogue_frees_.clear();
  }
  if (cfg_.stage == 1 && !cfg_.contiguous) {  // p.grad = None: only the rank's own grads stay
    if (kept_stage1_buf_ == kNone) {
      kept_stage1_buf_ =
          e_.buffer(kept_buffer("kept autograd grads (stage 1)", "T1", cfg_.lp, pass.all_slot));
      // X6: the touching grads of the whole pass, packed in insertion order (one plan of every
      // flush's entries), are what averaged_gradients views (get_flat_partition over the kept
      // p.grad in the epilogue, stage_1_and_2.py:936-953, :2106-2190 at edaa722).
      FlushPlan all;
      for (const auto& entries : pass.entries)
        all.entries.insert(all.entries.end(), entries.begin(), entries.end());
      kept_stage1_plan_ = e_.flush_plan(std::move(all));
      GradPass gp;
      gp.flush_plans = pass.flush_plan;
      gp.t3.assign(1, std::vector<std::uint32_t>(pass.flush_plan.size(), kept_stage1_buf_));
      pass.grad_pass = e_.grad_pass(std::move(gp));
    }
    for (std::uint32_t p : pass.params) module_.free_grad(p);
    e_.adopt(kept_stage1_buf_, kept_stage1_plan_);  // what the frees released, at no cost
    step_frees_.push_back(kept_stage1_buf_);
  }
  if (boundary) {
    averaged_pass_ = pass.grad_pass;  // averaged_gradients views this pass's T3
    if (padding_buf_ == kNone)
      padding_buf_ = e_.buffer(
          kept_buffer("averaged_gradients padding zeros", "T4", cfg_.ga, slots_.padding()));
    e_.alloc(padding_buf_, Stream::Compute, kNone, true);  // torch.zeros
    step_frees_.push_back(padding_buf_);
  }
}

}  // namespace zerosim::schedule::s12
