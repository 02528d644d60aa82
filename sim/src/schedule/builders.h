// Private interface between build_schedule (the dispatcher) and the per-stage builders, and the
// compute helpers they share (compute.cc); ops are appended through the emitter (emitter.h).
#pragma once

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "schedule/emitter.h"
#include "zerosim/schedule.h"
#include "zerosim/schedule_builder.h"

namespace zerosim::schedule {

/// DeepSpeed mode, stage 0 (engine all-reduce), stage 1/2 (DeepSpeedZeroOptimizer) and the
/// BF16_Optimizer reroute (deepspeed_zero.md §3.4, §3.5, §4, §5, §6).
Result<Schedule> build_stage012(const ScheduleInput& in);
/// DeepSpeed mode, stage 3 (deepspeed_zero.md §7).
Result<Schedule> build_stage3(const ScheduleInput& in);
/// Paper mode: the textbook ZeRO schedule (reduce-scatter of gradients, all-gather of parameters).
Result<Schedule> build_paper(const ScheduleInput& in);

/// Fills s.tensors and s.layout (schedule.h) from the model, the plan and the ds_config's stage 3
/// partition options; `grad_buf[p]` is param p's gradient buffer (shorter or kNone: none). Call
/// after meta is filled (a tensor's dtype is meta.lp).
void fill_tensor_table(Schedule& s, const ScheduleInput& in,
                       const std::vector<std::uint32_t>& grad_buf);

/// The schedule note on fp16/bf16 overflow: which steps skip their update, or that none does.
std::string overflow_note(const std::vector<std::uint32_t>& overflow_steps);

/// Forward FLOPs of one layer for a micro-batch (fwd_flops_per_token x tokens + attention term).
double layer_forward_flops(const ModelDesc& m, std::uint32_t layer, const TrainingSettings& t);
/// Backward: twice the forward (input and weight gradients), less the frozen weights' gradients.
double layer_backward_flops(const ModelDesc& m, std::uint32_t layer, const TrainingSettings& t);

/// Activation bytes held from a layer's forward to its backward, per layer, summing to
/// activation_bytes(model, t, lp): transformer blocks share the per-block term, the rest goes to
/// the head (logits). Empty activations for models without ArchInfo.
std::vector<Bytes> layer_activation_bytes(const ModelDesc& m, const TrainingSettings& t, DType lp);

/// Layer (index into model.layers) whose backward makes each param's gradient ready: the earliest
/// forward use (tied weights are ready at their last backward use). kNone for params no layer uses.
std::vector<std::uint32_t> grad_ready_layer(const ModelDesc& m);

/// As emit_forward_backward (below), calling `before_backward()` between the forward and the
/// backward (where the optimizer's backward() runs before loss.backward(), e.g. the v0.14.4 IPG
/// allocation).
template <class BeforeBackward, class OnGrad>
void emit_forward_backward_with(Emitter& e, const ModelDesc& m, const TrainingSettings& t,
                                const std::vector<std::uint32_t>& activation_buffers,
                                const std::vector<std::uint32_t>& ready_layer,
                                BeforeBackward&& before_backward, OnGrad&& on_grad) {
  const auto n_layers = static_cast<std::uint32_t>(m.layers.size());
  e.set_phase(Phase::Forward);
  for (std::uint32_t l = 0; l < n_layers; ++l) {
    if (l < activation_buffers.size() && activation_buffers[l] != kNone)
      e.alloc(activation_buffers[l]);
    e.compute({OpKind::Forward, l, layer_forward_flops(m, l, t), "fwd " + m.layers[l].name});
  }
  e.set_phase(Phase::Backward);
  before_backward();
  std::uint32_t next = n_layers;  // layers [next, n_layers) already ran backward
  auto run_down_to = [&](std::uint32_t target) {
    while (next > target) {
      --next;
      if (t.activation_checkpointing) {
        e.compute({OpKind::Recompute, next, layer_forward_flops(m, next, t),
                   "recompute " + m.layers[next].name});
      }
      e.compute(
          {OpKind::Backward, next, layer_backward_flops(m, next, t), "bwd " + m.layers[next].name});
      if (next < activation_buffers.size() && activation_buffers[next] != kNone)
        e.free(activation_buffers[next]);
    }
  };
  for (std::uint32_t p : m.grad_order) {
    if (!m.params[p].trainable) continue;
    if (ready_layer[p] != kNone) run_down_to(ready_layer[p]);
    on_grad(p);
  }
  run_down_to(0);
}

/// Emits the forward and backward compute of one micro-step for builders without per-module hooks
/// (stage 0/1/2, paper). Forward: every layer in order, allocating `activation_buffers[layer]`
/// (kNone: none). Backward: walks model.grad_order exactly; before a param's GradReady it emits the
/// backward of every not-yet-run layer down to the param's ready layer (freeing its activations),
/// then calls `on_grad(param_id)`, which emits GradReady and whatever the hook does. Remaining
/// layers run last.
template <class OnGrad>
void emit_forward_backward(Emitter& e, const ModelDesc& m, const TrainingSettings& t,
                           const std::vector<std::uint32_t>& activation_buffers,
                           const std::vector<std::uint32_t>& ready_layer, OnGrad&& on_grad) {
  emit_forward_backward_with(
      e, m, t, activation_buffers, ready_layer, [] {}, std::forward<OnGrad>(on_grad));
}

}  // namespace zerosim::schedule
