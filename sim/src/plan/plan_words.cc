// The words around the planner's rows (planner_internal.h): the memory rule's recommendation,
// the time model and the notes, and the refusal of a saturated size.
#include <algorithm>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>

#include "plan/planner_internal.h"
#include "zerosim/calibration.h"
#include "zerosim/engine.h"
#include "zerosim/saturating.h"
#include "zerosim/scenario.h"
#include "zerosim/time_model.h"
#include "zerosim/time_model_notes.h"

namespace zerosim::plan {
namespace {

std::string gib(Bytes b) { return format_gib(b); }

}  // namespace

void recommend(PlanResult& out) {
  // The lowest stage that fits without offload: lower stages issue fewer and larger collectives and
  // no parameter gathers on the critical path, and host offload slows every step. Offload rows are
  // recommended only when nothing fits without offload.
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < out.rows.size(); ++i) {
    const auto& r = out.rows[i];
    if (!r.fits) continue;
    auto key = [](const PlanRow& x) {
      return std::make_tuple(x.offload != OffloadVariant::None, x.stage);
    };
    if (!best || key(r) < key(out.rows[*best])) best = i;
  }
  const auto& req = out.request;
  std::ostringstream os;
  if (best) {
    const auto& r = out.rows[*best];
    os << "ZeRO stage " << r.stage;
    if (r.offload != OffloadVariant::None)
      os << " with " << offload_name(r.offload) << " offload to CPU";
    os << ": the lowest stage that fits"
       << (r.offload != OffloadVariant::None ? " (nothing fits without offload)"
                                             : " without offload")
       << ", with " << gib(static_cast<Bytes>(std::max<std::int64_t>(r.headroom_bytes, 0)))
       << " headroom; " << gib(r.comm_bytes_per_step)
       << " sent per GPU per step; largest micro-batch " << r.max_micro_batch;
    out.recommended = best;
  } else {
    std::optional<std::uint64_t> fewest;
    for (const auto& r : out.rows)
      if (r.min_gpus && (!fewest || *r.min_gpus < *fewest)) fewest = r.min_gpus;
    os << "nothing fits on " << req.cluster.world_size() << " x " << req.cluster.gpu.name
       << " at micro-batch " << req.training.micro_batch;
    if (fewest)
      os << "; the smallest power-of-two GPU count that fits is " << *fewest;
    else
      os << " even at " << req.sweep_max_gpus << " GPUs";
    os << (req.training.activation_checkpointing ? ""
                                                 : "; activation checkpointing would also help");
  }
  out.recommendation = os.str();
}

// The time model of the timed rows, as `simulate` states it for the request's micro-batch: the
// same builder (time_model_notes.h) from the same options the rows are simulated with
// (row_simulation.cc, plan_speed.cc: the calibration, the links the cluster flags gave). Stage 3
// when the plan has stage 3 rows, so the hook costs those rows pay are listed.
void add_time_model(PlanResult& out) {
  const PlanRequest& req = out.request;
  bool timed = false;
  for (const PlanRow& r : out.rows) timed = timed || r.simulated || r.speed || r.speed_checkpointed;
  if (!timed) return;
  EngineOptions o;
  o.links_basis = req.links_basis;
  // The GPU was checked when the calibration was read (the CLI refuses another GPU's).
  if (req.calibration) (void)apply_calibration(*req.calibration, req.cluster.gpu, o);
  const GemmShape gemm = req.model.arch ? GemmShape{req.model.arch->hidden,
                                                    req.training.micro_batch * req.training.seq_len}
                                        : GemmShape{};
  const DType lp = req.base.lp_dtype();
  const ComputeRate rate = compute_rate(req.cluster.gpu, lp, gemm, o.compute_efficiency,
                                        o.calibrated_compute ? &*o.calibrated_compute : nullptr);
  out.time_model = time_model_notes(req.cluster.gpu, lp, std::min(req.max_stage, 3), rate, o);
  // Which rows each figure times: the notes are for the request's micro-batch and list every cost,
  // but a row pays only those of its stage and offload.
  out.notes.push_back(
      std::string("the time model's figures are those at micro-batch ") +
      std::to_string(req.training.micro_batch) +
      (req.mode == Accounting::DeepSpeed ? " (every row's step time)"
                                         : " (paper accounting times only the predicted speeds)") +
      "; a predicted speed at another micro-batch takes the compute efficiency of the same curve "
      "at its GEMM size; the stage-3 hook costs apply to stage 3 rows only, and the host and PCIe "
      "bandwidths time the offload rows' CPU optimizer step and copies");
}

void add_notes(PlanResult& out) {
  const auto& req = out.request;
  for (const auto& n : req.base.notes) out.notes.push_back(n);
  if (const std::string why = stage0_refusal(req); !why.empty())
    out.notes.push_back("no stage 0 row: DeepSpeed " +
                        std::string(deepspeed_version_name(req.version)) +
                        " refuses this config without ZeRO (" + why + ")");
  if (!req.model.arch)
    out.notes.push_back(
        "activations are not modelled for this model (no transformer shape); "
        "use a zoo model or --hf-config for activation memory");
  if (req.mode == Accounting::DeepSpeed) {
    out.notes.push_back(
        "every row is simulated: memory, traffic and step time are what `zerosim simulate` gives "
        "for the same inputs (" +
        std::to_string(kDefaultSteps) +
        " steps: a warm-up step, then the steady step), plus the overhead layer no schedule "
        "allocates");
    const Bytes whole_model =
        checked_mul(req.model.num_parameters(), dtype_size(req.base.lp_dtype()))
            .value_or(kBytesOverflow);
    // A bitsandbytes base is built outside zero.Init (its own note says so, and --zero-init is
    // refused): advising --zero-init there contradicted it.
    const bool quantized = std::any_of(req.model.params.begin(), req.model.params.end(),
                                       [](const ParamTensor& t) { return t.quant_bits != 0; });
    if (req.training.zero_init)
      out.notes.push_back(
          "stage 3 rows: the model is built under deepspeed.zero.Init (--zero-init), so each "
          "parameter is partitioned as it is constructed; stages 0-2 have no zero.Init");
    else if (!quantized && req.max_stage >= 3)
      out.notes.push_back(
          "stage 3 rows without --zero-init: every GPU first holds the whole " +
          std::string(req.base.lp_dtype() == DType::Float32 ? "fp32" : "16-bit") + " model (" +
          format_gib(whole_model) +
          ") before partitioning, as DeepSpeed does for a model built outside "
          "deepspeed.zero.Init; pass --zero-init if it is (HF Trainer does so for stage 3)");
    out.notes.push_back(
        "stage 1 keeps the full 16-bit gradient on every GPU (like plain data parallel); "
        "only stage 2 and 3 partition gradients");
    out.notes.push_back(
        "DeepSpeed's stage 1/2 all-reduce gradient buckets (no reduce-scatter), so their "
        "gradient traffic equals plain data parallel's; the parameter all-gather comes on top");
  } else {
    out.notes.push_back(
        "paper accounting: model states as in the ZeRO paper (16Ψ, 4Ψ+12Ψ/N, 2Ψ+14Ψ/N, "
        "16Ψ/N); runtime buffers are not counted, and there are no offload rows (the paper keeps "
        "every state on the GPU; --mode deepspeed plans offload)");
    if (req.ds_config_given &&
        (req.base.zero.offload_optimizer.enabled() || req.base.zero.offload_param.enabled()))
      out.notes.push_back(
          "paper accounting: the ds_config's offload is not in the paper's "
          "formulas, so its row is stage " +
          std::to_string(req.base.zero.stage) + " without offload");
  }
}

// A size that saturated at kBytesOverflow is "more than 2^64 - 1 bytes", not a size: the plan is
// refused with the inputs that produced it instead of printing 17179869184.00 GiB (or comparing
// it as a real total). DeepSpeed's estimator is quoted, not zerosim's answer: a saturated
// estimate is shown as "overflow" (JSON null) and does not refuse the plan.
bool refuse_saturated(const PlanResult& out, Diagnostics& diags) {
  for (const PlanRow& r : out.rows) {
    const MemoryReport& m = r.memory;
    const std::pair<const char*, Bytes> sizes[] = {
        {"activations", m.activations},
        {"model states", saturating_add(saturating_add(m.params, m.grads), m.optimizer_states)},
        {"buffers", m.buffers},
        {"overhead", m.overhead},
        {"total", total_of(m)},
        {"steady total", r.steady_total_bytes},
        {"host memory", m.host_bytes},
        {"traffic per step", r.comm_bytes_per_step},
        {"init traffic", r.init_bytes_sent},
    };
    for (const auto& [what, bytes] : sizes) {
      if (bytes != kBytesOverflow) continue;
      const PlanRequest& q = out.request;
      diags.error("zerosim plan", "",
                  "expected sizes per GPU below 2^64 bytes (16 EiB), got more for the " +
                      std::string(what) + " of stage " + std::to_string(r.stage) + " (offload " +
                      std::string(offload_name(r.offload)) + ") from " + q.model.name + " (" +
                      std::to_string(q.model.num_parameters()) + " parameters), --seq-len " +
                      std::to_string(q.training.seq_len) + ", --micro-batch " +
                      std::to_string(q.training.micro_batch) + ", --gpus " +
                      std::to_string(q.cluster.world_size()));
      return true;
    }
  }
  return false;
}

}  // namespace zerosim::plan
