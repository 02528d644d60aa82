// Private interface between build_schedule (the dispatcher) and the per-stage builders, plus the
// small emitter every builder uses to append buffers and ops.
#pragma once

#include <array>
#include <string>
#include <utility>
#include <vector>

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

/// The schedule note on fp16/bf16 overflow: which steps skip their update, or that none does.
std::string overflow_note(const std::vector<std::uint32_t>& overflow_steps);

/// Appends buffers and ops, keeping the phase/step/micro-step context so builders stay short.
class Emitter {
 public:
  explicit Emitter(Schedule& s) : s_(s) {}

  std::uint32_t buffer(Buffer b) {
    s_.buffers.push_back(std::move(b));
    return static_cast<std::uint32_t>(s_.buffers.size() - 1);
  }
  /// Appends an op with the current context; returns its index.
  std::uint32_t op(Op o) {
    o.phase = phase_;
    o.step = step_;
    o.micro_step = micro_step_;
    const auto lane = static_cast<std::size_t>(o.stream);
    s_.ops.push_back(std::move(o));
    const auto index = static_cast<std::uint32_t>(s_.ops.size() - 1);
    if (lane < kStreamCount) last_on_[lane] = index;
    return index;
  }
  /// Index of the latest op appended on stream `st` through this emitter, or kNone.
  std::uint32_t last_on(Stream st) const {
    const auto lane = static_cast<std::size_t>(st);
    return lane < kStreamCount ? last_on_[lane] : kNone;
  }
  /// Makes `waiter` wait for everything enqueued so far on `on` (torch's wait_stream): a Marker on
  /// `waiter` depending on the latest op of `on`. Emits nothing when `on` has no op yet.
  std::uint32_t wait_stream(Stream waiter, Stream on) {
    const std::uint32_t last = last_on(on);
    if (last == kNone || waiter == on) return kNone;
    Op o;
    o.kind = OpKind::Marker;
    o.stream = waiter;
    o.deps.push_back(last);
    o.label = std::string("wait ") + std::string(stream_name(on));
    return op(std::move(o));
  }
  std::uint32_t alloc(std::uint32_t buf, Stream st = Stream::Compute) {
    Op o;
    o.kind = OpKind::Alloc;
    o.stream = st;
    o.buffer = buf;
    return op(std::move(o));
  }
  std::uint32_t free(std::uint32_t buf, Stream st = Stream::Compute) {
    Op o;
    o.kind = OpKind::Free;
    o.stream = st;
    o.buffer = buf;
    return op(std::move(o));
  }
  std::uint32_t marker(std::string label, Stream st = Stream::Compute) {
    Op o;
    o.kind = OpKind::Marker;
    o.stream = st;
    o.label = std::move(label);
    return op(std::move(o));
  }
  /// A collective with the group of the whole data-parallel world.
  std::uint32_t collective(CollectiveKind k, Elements numel, Elements out_numel, DType dt,
                           ReduceOp r, Stream st, std::string label, std::int32_t dst = -1) {
    Op o;
    o.kind = OpKind::Collective;
    o.collective = k;
    o.numel = numel;
    o.out_numel = out_numel;
    o.dtype = dt;
    o.reduce_op = r;
    o.stream = st;
    o.dst = dst;
    o.group_size = s_.meta.world;
    o.label = std::move(label);
    return op(std::move(o));
  }

  void set_phase(Phase p) { phase_ = p; }
  void set_step(std::uint32_t step, std::uint32_t micro) {
    step_ = step;
    micro_step_ = micro;
  }
  Phase phase() const { return phase_; }
  Schedule& schedule() { return s_; }

 private:
  Schedule& s_;
  std::array<std::uint32_t, kStreamCount> last_on_ = [] {
    std::array<std::uint32_t, kStreamCount> a{};
    a.fill(kNone);
    return a;
  }();
  Phase phase_ = Phase::Init;
  std::uint32_t step_ = 0;
  std::uint32_t micro_step_ = 0;
};

/// Forward FLOPs of one layer for a micro-batch (fwd_flops_per_token x tokens + attention term).
double layer_forward_flops(const ModelDesc& m, std::uint32_t layer, const TrainingSettings& t);

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
    Op f;
    f.kind = OpKind::Forward;
    f.layer = l;
    f.flops = layer_forward_flops(m, l, t);
    f.label = "fwd " + m.layers[l].name;
    e.op(std::move(f));
  }
  e.set_phase(Phase::Backward);
  before_backward();
  std::uint32_t next = n_layers;  // layers [next, n_layers) already ran backward
  auto run_down_to = [&](std::uint32_t target) {
    while (next > target) {
      --next;
      if (t.activation_checkpointing) {
        Op r;
        r.kind = OpKind::Recompute;
        r.layer = next;
        r.flops = layer_forward_flops(m, next, t);
        r.label = "recompute " + m.layers[next].name;
        e.op(std::move(r));
      }
      Op b;
      b.kind = OpKind::Backward;
      b.layer = next;
      b.flops = 2 * layer_forward_flops(m, next, t);
      b.label = "bwd " + m.layers[next].name;
      e.op(std::move(b));
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
