// make_plan: evaluates every stage/offload variant with the memory model, searches the largest
// micro-batch and the smallest power-of-two GPU count, and picks a recommendation.
//
// Partition plans are cached per (world size, stage family) because every variant of a stage family
// shares one layout; that keeps the full sweep of Llama-3.1-405B (8 variants x 13 GPU counts x a
// micro-batch search) well inside the 50 ms budget measured by bench/plan_bench.cc.
#include "zerosim/planner.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <tuple>

#include "zerosim/partition_plan.h"

namespace zerosim {
namespace {

struct Variant {
  int stage;
  OffloadVariant offload;
};
constexpr Variant kVariants[] = {
    {0, OffloadVariant::None},         {1, OffloadVariant::None},
    {1, OffloadVariant::OptimizerCpu}, {2, OffloadVariant::None},
    {2, OffloadVariant::OptimizerCpu}, {3, OffloadVariant::None},
    {3, OffloadVariant::OptimizerCpu}, {3, OffloadVariant::OptimizerAndParamsCpu},
};

/// Micro-batch search stops here: beyond it the answer is "at least this" (models without a
/// transformer shape have no activation model, so memory does not grow with the batch).
constexpr std::uint64_t kMaxMicroBatch = 65536;

std::string optimizer_name(OptimizerPath p) {
  switch (p) {
    case OptimizerPath::Plain:
      return "torch optimizer (engine all-reduce)";
    case OptimizerPath::Fp16Optimizer:
      return "FP16_Optimizer";
    case OptimizerPath::Bf16Optimizer:
      return "BF16_Optimizer";
    case OptimizerPath::ZeroStage1And2:
      return "DeepSpeedZeroOptimizer";
    case OptimizerPath::ZeroStage3:
      return "DeepSpeedZeroOptimizer_Stage3";
  }
  return "?";
}

Cluster cluster_with(const Cluster& c, std::uint64_t gpus) {
  Cluster out = c;
  if (c.gpus_per_node > 0 && gpus % c.gpus_per_node == 0) {
    out.nodes = gpus / c.gpus_per_node;
  } else {
    out.nodes = 1;
    out.gpus_per_node = gpus;
  }
  return out;
}

class Evaluator {
 public:
  explicit Evaluator(const PlanRequest& r) : req_(r) {}

  /// The partition plan of a stage's config `ds` at `gpus` GPUs (cached); nullptr, with the
  /// errors in `diags`, when partitioning failed. Stages 0, 1 and 2 share the flat layout (stage 0
  /// reads only its sizes), so it is planned as stage 1, once per round-robin setting.
  const PartitionPlan* plan_for(const DsConfig& ds, std::uint64_t gpus, Diagnostics& diags) {
    PartitionOptions o = partition_options(ds, static_cast<std::uint32_t>(gpus));
    if (o.stage != 3) o.stage = 1;
    auto key = std::make_tuple(gpus, o.stage, o.round_robin);
    auto it = plans_.find(key);
    if (it != plans_.end()) return &it->second;
    auto p = plan_partition(req_.model, o);
    if (!p.ok()) {
      diags.append(p.diagnostics());
      return nullptr;
    }
    return &plans_.emplace(key, std::move(p.value())).first->second;
  }

  /// `training`: settings other than the request's (nullptr: the request's).
  MemoryReport memory(const DsConfig& ds, const PartitionPlan& plan, std::uint64_t gpus,
                      std::uint64_t micro_batch, const TrainingSettings* training = nullptr) const {
    TrainingSettings t = training ? *training : req_.training;
    t.micro_batch = micro_batch;
    return estimate_memory(req_.model, plan, ds, cluster_with(req_.cluster, gpus), t, req_.mode,
                           req_.overheads);
  }

  bool fits(const MemoryReport& m) const { return m.total() <= req_.cluster.gpu.memory_bytes; }

  /// Largest b in [1, kMaxMicroBatch] that fits (memory grows with b); 0 when b = 1 does not fit.
  std::uint64_t max_micro_batch(const DsConfig& ds, const PartitionPlan& plan, std::uint64_t gpus,
                                const TrainingSettings* t = nullptr) const {
    if (!fits(memory(ds, plan, gpus, 1, t))) return 0;
    std::uint64_t lo = 1, hi = 2;
    while (hi <= kMaxMicroBatch && fits(memory(ds, plan, gpus, hi, t))) {
      lo = hi;
      hi *= 2;
    }
    if (hi > kMaxMicroBatch) return lo;
    while (hi - lo > 1) {  // invariant: lo fits, hi does not
      std::uint64_t mid = lo + (hi - lo) / 2;
      (fits(memory(ds, plan, gpus, mid, t)) ? lo : hi) = mid;
    }
    return lo;
  }

 private:
  const PlanRequest& req_;
  std::map<std::tuple<std::uint64_t, int, bool>, PartitionPlan> plans_;
};

// The largest micro-batch with activation checkpointing, when the request has it off: the
// candidate plan_speed.cc may simulate besides the row's own.
std::uint64_t checkpointed_micro_batch(const PlanRequest& req, const Evaluator& ev,
                                       const DsConfig& ds, const PartitionPlan& plan) {
  if (!req.model.arch || req.training.activation_checkpointing) return 0;
  TrainingSettings ck = req.training;
  ck.activation_checkpointing = true;
  return ev.max_micro_batch(ds, plan, req.cluster.world_size(), &ck);
}

bool matches(const DsConfig& base, const Variant& v) {
  OffloadVariant off = OffloadVariant::None;
  if (base.zero.offload_optimizer.enabled())
    off = base.zero.offload_param.enabled() ? OffloadVariant::OptimizerAndParamsCpu
                                            : OffloadVariant::OptimizerCpu;
  return base.zero.stage == v.stage && off == v.offload;
}

std::optional<EstimatorResult> estimator_for(const PlanRequest& r, const Variant& v) {
  const Elements p = r.model.num_parameters();
  const std::uint64_t g = r.cluster.gpus_per_node, n = r.cluster.nodes;
  const bool opt = v.offload != OffloadVariant::None;
  if (v.stage == 2) return estimate_zero2_model_states_mem_needs(p, g, n, opt);
  if (v.stage == 3)
    return estimate_zero3_model_states_mem_needs(p, r.model.largest_module_params(), g, n, opt,
                                                 v.offload == OffloadVariant::OptimizerAndParamsCpu,
                                                 /*zero_init=*/true);
  return std::nullopt;
}

std::string gib(Bytes b) { return format_gib(b); }

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
       << ", with " << gib(static_cast<Bytes>(r.headroom_bytes)) << " headroom; "
       << gib(r.comm_bytes_per_step) << " sent per GPU per step; largest micro-batch "
       << r.max_micro_batch;
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

void add_notes(PlanResult& out) {
  const auto& req = out.request;
  for (const auto& n : req.base.notes) out.notes.push_back(n);
  if (!req.model.arch)
    out.notes.push_back(
        "activations are not modelled for this model (no transformer shape); "
        "use a zoo model or --hf-config for activation memory");
  if (req.mode == Accounting::DeepSpeed) {
    out.notes.push_back(
        "stage 1 keeps the full 16-bit gradient on every GPU (like plain data parallel); "
        "only stage 2 and 3 partition gradients");
    out.notes.push_back(
        "DeepSpeed's stage 1/2 all-reduce gradient buckets (no reduce-scatter), so their "
        "gradient traffic equals plain data parallel's; the parameter all-gather comes on top");
  } else {
    out.notes.push_back(
        "paper accounting: model states as in the ZeRO paper (16Ψ, 4Ψ+12Ψ/N, 2Ψ+14Ψ/N, "
        "16Ψ/N); runtime buffers are not counted");
  }
}

}  // namespace

DsConfig variant_config(const DsConfig& base, int stage, OffloadVariant offload) {
  DsConfig d = base;
  d.zero.stage = stage;
  d.zero.overlap_comm = d.zero.overlap_comm_set.value_or(stage == 3);
  d.zero.offload_optimizer.device =
      offload == OffloadVariant::None ? OffloadDevice::None : OffloadDevice::Cpu;
  d.zero.offload_param.device =
      offload == OffloadVariant::OptimizerAndParamsCpu ? OffloadDevice::Cpu : OffloadDevice::None;
  return d;
}

Result<PlanResult> make_plan(const PlanRequest& request) {
  const std::uint64_t world = request.cluster.world_size();
  if (world == 0) return fail<PlanResult>("--gpus", "", "expected at least 1 GPU, got 0");
  PlanResult out;
  out.request = request;
  Evaluator ev(out.request);
  Diagnostics diags;
  for (const auto& v : kVariants) {
    PlanRow row;
    row.stage = v.stage;
    row.offload = v.offload;
    DsConfig ds = variant_config(request.base, v.stage, v.offload);
    row.optimizer = optimizer_name(ds.optimizer_path());
    const PartitionPlan* plan = ev.plan_for(ds, world, diags);
    if (!plan) return Result<PlanResult>(diags);
    row.memory = ev.memory(ds, *plan, world, request.training.micro_batch);
    row.fits = ev.fits(row.memory);
    row.headroom_bytes = static_cast<std::int64_t>(request.cluster.gpu.memory_bytes) -
                         static_cast<std::int64_t>(row.memory.total());
    row.max_micro_batch = ev.max_micro_batch(ds, *plan, world);
    row.comm_bytes_per_step = comm_bytes_per_step(request.model, *plan, ds, world, request.mode);
    row.ds_estimate = estimator_for(request, v);
    row.matches_ds_config = request.ds_config_given && matches(request.base, v);
    row.max_micro_batch_checkpointed = checkpointed_micro_batch(request, ev, ds, *plan);
    for (std::uint64_t g = 1; g <= request.sweep_max_gpus; g *= 2) {
      const PartitionPlan* pg = ev.plan_for(ds, g, diags);
      if (!pg) return Result<PlanResult>(diags);
      MemoryReport m = ev.memory(ds, *pg, g, request.training.micro_batch);
      bool fit = ev.fits(m);
      if (fit && !row.min_gpus) row.min_gpus = g;
      if (request.full_sweep)
        out.sweep.push_back(
            {g, v.stage, v.offload, m.total(), fit, fit ? ev.max_micro_batch(ds, *pg, g) : 0});
      if (!request.full_sweep && row.min_gpus) break;
    }
    out.rows.push_back(std::move(row));
  }
  predict_speeds(out, [&](const PlanRow& r) {
    return ev.plan_for(variant_config(request.base, r.stage, r.offload), world, diags);
  });
  recommend(out);
  recommend_on_speed(out);
  add_notes(out);
  return Result<PlanResult>(std::move(out), diags);
}

}  // namespace zerosim
