// DeepSpeed accounting for stage 0, stage 1/2 (DeepSpeedZeroOptimizer, with and without optimizer
// offload) and BF16_Optimizer: the buffers of deepspeed_zero.md §3 (ids B1–B8, T1–T8), each with
// the phase it is alive in. Sizes for the worst rank (largest grads_in_partition, §2.1 step 10).
#include <algorithm>
#include <cctype>

#include "memory/accounting.h"
#include "memory/exact_math.h"

namespace zerosim::memory {

namespace {

// DeepSpeed's engine all-reduce chunk (MEMORY_OPT_ALLREDUCE_SIZE, engine.py:160), elements.
constexpr Elements kEngineChunk = 500000000;

Elements frozen_numel(const ModelDesc& m) { return m.num_parameters() - m.num_trainable(); }

Elements flat_numel(const PartitionPlan& plan) {
  Elements p = 0;
  for (const auto& g : plan.groups) p += g.numel;
  return p;
}

// The engine all-reduce after backward (stage 0): grads are flattened chunk by chunk (a chunk
// closes once it exceeds 5e8 elements, so it holds at most 5e8 + one param) and cast to CD when CD
// != LP.
void add_engine_allreduce(const AccountingInput& in, Elements grads, ReportBuilder& rb) {
  const Elements chunk = std::min(grads, kEngineChunk + largest_trainable_param(in.model));
  rb.during(kAllReduce, Layer::Buffers,
            "engine all-reduce flatten copy (<= 5e8 + largest param): " + elements_text(chunk),
            bytes_of(chunk, in.ds.lp_dtype()));
  if (in.ds.comm_dtype() != in.ds.lp_dtype())
    rb.during(kAllReduce, Layer::Buffers, "engine all-reduce CD copy: " + elements_text(chunk),
              bytes_of(chunk, in.ds.comm_dtype()));
}

}  // namespace

std::string elements_text(Elements n) { return std::to_string(n) + " elements"; }

Elements largest_trainable_param(const ModelDesc& model) {
  Elements n = 0;
  for (const auto& p : model.params)
    if (p.trainable) n = std::max(n, p.numel);
  return n;
}

std::uint64_t optimizer_state_count(const std::string& optimizer_type, ReportBuilder& rb) {
  std::string t;
  for (char c : optimizer_type) t += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (t.empty()) {
    rb.note("no optimizer.type in the ds_config: Adam assumed (2 states per parameter in MW)");
    return 2;
  }
  if (t.find("adagrad") != std::string::npos) return 1;  // sum of squares
  if (t.find("adam") != std::string::npos || t.find("lamb") != std::string::npos) return 2;
  if (t == "sgd" || t == "lion" || t == "muon") {
    rb.note("optimizer " + optimizer_type + ": 1 state per parameter assumed (momentum" +
            (t == "muon" ? "; Muon's AdamW part for non-matrix params is not modelled)" : ")"));
    return 1;
  }
  rb.note("optimizer " + optimizer_type +
          " is not modelled: Adam assumed (2 states per parameter)");
  return 2;
}

void add_stage0_terms(const AccountingInput& in, ReportBuilder& rb) {
  const DsConfig& ds = in.ds;
  const DType lp = ds.lp_dtype();
  const Elements p = in.model.num_trainable();
  const std::uint64_t k = optimizer_state_count(ds.optimizer_type, rb);
  rb.persistent(Layer::Params, "frozen params (requires_grad=False)",
                bytes_of(frozen_numel(in.model), lp));
  if (ds.optimizer_path() == OptimizerPath::Plain) {
    // fp32: the bare optimizer on the model's own params; states created at the first step.
    rb.persistent(Layer::Params, "params (fp32, stage 0): " + elements_text(p), bytes_of(p, lp));
    rb.persistent(Layer::OptimizerStates,
                  "optimizer states (stage 0): " + std::to_string(k) + " x P",
                  sat_mul(k, bytes_of(p, lp)));
  } else {
    // FP16_Optimizer (§3.5): flat LP params without alignment, fp32 master, states at init.
    const DType mw = ds.master_dtype();
    rb.persistent(Layer::Params,
                  "flat LP params (stage 0, no alignment padding): " + elements_text(p),
                  bytes_of(p, lp));
    rb.persistent(Layer::OptimizerStates, "fp32 master params (stage 0): " + elements_text(p),
                  bytes_of(p, mw));
    rb.persistent(Layer::OptimizerStates,
                  "optimizer states (stage 0, allocated at init): " + std::to_string(k) + " x P",
                  sat_mul(k, bytes_of(p, mw)));
    rb.during(kStep, Layer::Buffers,
              "flat fp32 gradient copy at step (stage 0): " + elements_text(p), bytes_of(p, mw));
  }
  for (const char* phase : {kBackward, kAllReduce, kStep})
    rb.during(phase, Layer::Grads, "LP gradients from autograd (stage 0): " + elements_text(p),
              bytes_of(p, lp));
  add_engine_allreduce(in, p, rb);
}

void add_bf16_optimizer_terms(const AccountingInput& in, ReportBuilder& rb) {
  const DsConfig& ds = in.ds;
  const DType lp = ds.lp_dtype(), mw = ds.master_dtype(), ga = ds.grad_accum();
  const Elements pal = in.plan.aligned_numel(), s = in.plan.partition_numel();
  const Elements p = flat_numel(in.plan);
  const std::uint64_t k = optimizer_state_count(ds.optimizer_type, rb);
  rb.persistent(Layer::Params,
                "flat bf16 params (BF16_Optimizer, §3.4): Pal = " + elements_text(pal),
                bytes_of(pal, lp));
  rb.persistent(Layer::Params, "frozen params (requires_grad=False)",
                bytes_of(frozen_numel(in.model), lp));
  rb.persistent(Layer::OptimizerStates,
                "fp32 master partition (BF16_Optimizer): S = " + elements_text(s), bytes_of(s, mw));
  rb.persistent(Layer::OptimizerStates,
                "optimizer states (BF16_Optimizer): " + std::to_string(k) + " x S",
                sat_mul(k, bytes_of(s, mw)));
  rb.persistent(Layer::Grads,
                "fp32 gradient buffer, full and not partitioned (BF16_Optimizer): Pal = " +
                    elements_text(pal),
                bytes_of(pal, ga));
  for (const char* phase : {kBackward, kAllReduce, kStep})
    rb.during(phase, Layer::Grads,
              "bf16 autograd gradients (zeroed, not freed, until zero_grad): " + elements_text(p),
              bytes_of(p, lp));
  // The engine all-reduces each group's fp32 buffer (one tensor per chunk) through a CD copy.
  Elements largest_group = 0;
  for (const auto& g : in.plan.groups) largest_group = std::max(largest_group, g.aligned);
  if (ds.comm_dtype() != ga)
    rb.during(kAllReduce, Layer::Buffers,
              "engine all-reduce CD copy of one group's fp32 gradient buffer: " +
                  elements_text(largest_group),
              bytes_of(largest_group, ds.comm_dtype()));
  else
    rb.during(kAllReduce, Layer::Buffers, "engine all-reduce (in place)", 0);
}

}  // namespace zerosim::memory
