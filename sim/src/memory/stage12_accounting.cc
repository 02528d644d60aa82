// DeepSpeed accounting for stage 1 and 2 (DeepSpeedZeroOptimizer, deepspeed_zero.md §3.1–§3.3):
// persistent B1–B3 (B4–B8 with optimizer offload), backward-time T1–T3/T5 and step-time T3/T6/T7,
// for the worst rank (the largest grads_in_partition, §2.1 step 10).
#include <algorithm>

#include "memory/accounting.h"
#include "memory/exact_math.h"

namespace zerosim::memory {

namespace {

struct Stage12 {
  const AccountingInput& in;
  const ZeroConfig& z;
  int stage;
  DType lp, mw, ga, cd;
  Elements pal, s, s_max, t3, p, n_max;
  bool offload, contiguous;
  std::uint64_t states;

  Stage12(const AccountingInput& input, ReportBuilder& rb)
      : in(input),
        z(input.ds.zero),
        stage(input.ds.zero.stage),
        lp(input.ds.lp_dtype()),
        mw(input.ds.master_dtype()),
        ga(input.ds.grad_accum()),
        cd(input.ds.comm_dtype()),
        pal(input.plan.aligned_numel()),
        s(input.plan.partition_numel()),
        s_max(0),
        t3(input.plan.max_grads_in_partition()),
        p(0),
        n_max(largest_trainable_param(input.model)),
        offload(input.ds.zero.offload_optimizer.enabled()),
        // Optimizer offload forces contiguous_gradients on (§3.3).
        contiguous(input.ds.zero.contiguous_gradients || input.ds.zero.offload_optimizer.enabled()),
        states(optimizer_state_count(input.ds.optimizer_type, rb)) {
    for (const auto& g : in.plan.groups) {
      s_max = std::max(s_max, g.partition);
      p += g.numel;
    }
  }
  Elements bucket() const { return std::min<Elements>(z.reduce_bucket_size, p); }
};

void add_persistent(const Stage12& c, ReportBuilder& rb) {
  const Elements frozen = c.in.model.num_parameters() - c.in.model.num_trainable();
  rb.persistent(Layer::Params, "flat LP params (B1): Pal = " + elements_text(c.pal),
                bytes_of(c.pal, c.lp));
  rb.persistent(Layer::Params, "frozen params (requires_grad=False)", bytes_of(frozen, c.lp));
  const std::string states = std::to_string(c.states) + " x S";
  if (!c.offload) {
    rb.persistent(Layer::OptimizerStates, "fp32 master partition (B2): S = " + elements_text(c.s),
                  bytes_of(c.s, c.mw));
    rb.persistent(Layer::OptimizerStates,
                  "optimizer states (B3): " + states + ", from the first step",
                  sat_mul(c.states, bytes_of(c.s, c.mw)));
    return;
  }
  rb.host("fp32 master partition (B2): S = " + elements_text(c.s), bytes_of(c.s, c.mw));
  rb.host("optimizer states (B3): " + states, sat_mul(c.states, bytes_of(c.s, c.mw)));
  rb.host("fp32 gradient partition (B4): S", bytes_of(c.s, c.mw));
  rb.host("LP staging for the copy back (B5): S", bytes_of(c.s, c.lp));
  rb.host("pinned gradient staging (B7): largest param " + elements_text(c.n_max),
          bytes_of(c.n_max, c.lp));
  // Stage 2 only: at stage 1 the one reduction, at the boundary, runs with micro_step_id 0 and
  // never reaches async_accumulate_grad_in_cpu_via_gpu (stage_1_and_2.py:1656 at edaa722; v0.14.4
  // allocates them at stage 1 too, see stage012_buckets.cc).
  if (c.in.ds.grad_accum_steps > 1 && c.stage == 2)
    rb.host("CPU gradient accumulators (B8): in-partition params " + elements_text(c.t3),
            bytes_of(c.t3, c.lp));
  rb.persistent(Layer::Buffers,
                "GPU gradient staging (B6): largest param " + elements_text(c.n_max),
                bytes_of(c.n_max, c.lp));
}

// Gradients the autograd engine holds during backward (T1), by stage.
void add_autograd_grads(const Stage12& c, ReportBuilder& rb) {
  if (c.stage == 2) {
    rb.during(kBackward, Layer::Buffers,
              "autograd gradient of the largest param (T1): " + elements_text(c.n_max),
              bytes_of(c.n_max, c.lp));
    return;
  }
  if (c.ga != c.lp) {
    // Grad-accum-attribute mode (§3.2): p.grad_accum (GA, full) lives until the next forward.
    for (const char* phase : {kBackward, kStep})
      rb.during(phase, Layer::Grads,
                "p.grad_accum, full gradient in GA (T1, grad-accum mode): " + elements_text(c.p),
                bytes_of(c.p, c.ga));
    rb.during(kBackward, Layer::Buffers, "LP copy of one gradient (T1): " + elements_text(c.n_max),
              bytes_of(c.n_max, c.lp));
    return;
  }
  rb.during(kBackward, Layer::Grads,
            "full LP gradients p.grad (T1; stage 1 keeps the whole gradient, like DDP): " +
                elements_text(c.p),
            bytes_of(c.p, c.lp));
}

void add_backward(const Stage12& c, ReportBuilder& rb) {
  const std::uint64_t buffers = c.z.overlap_comm ? 2 : 1;
  if (c.contiguous)
    rb.during(kBackward, Layer::Buffers,
              "IPG buckets (T2): " + std::to_string(buffers) + " x " +
                  elements_text(c.z.reduce_bucket_size),
              sat_mul(buffers, bytes_of(c.z.reduce_bucket_size, c.lp)));
  add_autograd_grads(c, rb);
  // T5: the owner-slice all-reduce flattens a bucket's slices into a temporary (CD) unless it is
  // one slice; reduce_scatter=false all-reduces in place (a copy only to change dtype).
  const bool flatten = c.in.world > 1 && c.z.reduce_scatter;
  if (flatten || c.cd != c.lp || !c.contiguous)
    rb.during(kBackward, Layer::Buffers,
              "reduction temporary (T5): one bucket " + elements_text(c.bucket()),
              bytes_of(c.bucket(), c.cd));
  if (c.offload) return;
  const std::string t3 = "grads_in_partition (T3), worst rank: " + elements_text(c.t3);
  if (!c.contiguous) {
    // Owned grads stay as full autograd tensors; a bucket's grads wait for their reduction.
    if (c.stage == 2) {
      rb.during(kBackward, Layer::Grads,
                "owned full gradients (no contiguous_gradients): " + elements_text(c.t3),
                bytes_of(c.t3, c.lp));
      rb.during(kBackward, Layer::Buffers,
                "unreduced bucket gradients: " + std::to_string(buffers) + " x " +
                    elements_text(c.bucket()),
                sat_mul(buffers, bytes_of(c.bucket(), c.lp)));
    }
    return;
  }
  if (c.stage == 2) {
    rb.during(kBackward, Layer::Grads, t3, bytes_of(c.t3, c.lp));
    if (c.in.ds.grad_accum_steps > 1)
      rb.during(kBackward, Layer::Buffers, "second grads_in_partition (T3, GA > 1 micro-steps)",
                bytes_of(c.t3, c.lp));
  }
  // Stage 1: T3 fills from storage that p.grad releases as each param moves into a bucket (§4.5),
  // so it is not counted on top of the full gradient.
}

void add_step(const Stage12& c, ReportBuilder& rb) {
  if (c.offload) {
    rb.during(kStep, Layer::Buffers, "optimizer step runs on the CPU (no GPU temporaries)", 0);
    return;
  }
  rb.during(kStep, Layer::Grads,
            std::string(c.contiguous ? "grads_in_partition (T3), worst rank: "
                                     : "owned full gradients (no contiguous_gradients): ") +
                elements_text(c.t3),
            bytes_of(c.t3, c.lp));
  rb.during(kStep, Layer::Buffers,
            "flat gradient partition (T6): largest S_g " + elements_text(c.s_max),
            bytes_of(c.s_max, c.ga));
  if (c.ga != c.mw)
    rb.during(kStep, Layer::Buffers,
              "MW gradient of the master partition (T7): " + elements_text(c.s_max),
              bytes_of(c.s_max, c.mw));
}

}  // namespace

void add_stage12_terms(const AccountingInput& in, ReportBuilder& rb) {
  Stage12 c(in, rb);
  add_persistent(c, rb);
  add_backward(c, rb);
  add_step(c, rb);
  if (c.stage == 1 && c.contiguous && !c.offload)
    rb.note(
        "stage 1: grads_in_partition (T3) is filled from the p.grad storage freed as gradients "
        "move "
        "into the IPG bucket, so it is not counted on top of the full LP gradient");
}

}  // namespace zerosim::memory
