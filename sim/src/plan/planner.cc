// make_plan: evaluates every stage/offload variant, searches the largest micro-batch and the
// smallest power-of-two GPU count, and picks a recommendation (its words and the notes:
// plan_words.cc).
//
// Deepspeed accounting simulates every row (row_simulation.h: the schedule `zerosim simulate`
// runs), so plan and simulate give one answer for memory, traffic and step time; the micro-batch
// search replays the recorded ledger with resized activations instead of rebuilding, the row at the
// requested GPU count is reused by the GPU-count search, the cells that show no time (the sweep at
// other counts, the search with activation checkpointing) take the ledger without the event loop
// (simulate_row_memory), and a variant whose init floor (the whole 16-bit model without zero.Init)
// exceeds the GPU is not simulated at other counts nor searched with checkpointing. Paper
// accounting keeps the paper's closed forms for memory and takes the traffic of the paper schedule.
// bench/plan_bench.cc measures the Llama-3.1-405B full sweep (README "Benchmarks"; the log:
// docs/benchmarks.md).
#include "zerosim/planner.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "plan/planner_internal.h"
#include "zerosim/engine.h"
#include "zerosim/partition_plan.h"
#include "zerosim/row_simulation.h"
#include "zerosim/saturating.h"
#include "zerosim/scenario.h"

namespace zerosim {
namespace {

using plan::add_notes;
using plan::add_time_model;
using plan::recommend;
using plan::refuse_saturated;
using plan::total_of;

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

// What the ds_config offloads, as a row's variant.
OffloadVariant offload_of(const DsConfig& base) {
  const bool opt = base.zero.offload_optimizer.enabled();
  const bool params = base.zero.stage == 3 && base.zero.offload_param.enabled();
  return opt && params ? OffloadVariant::OptimizerAndParamsCpu
         : opt         ? OffloadVariant::OptimizerCpu
         : params      ? OffloadVariant::ParamsCpu
                       : OffloadVariant::None;
}

// The plan's rows: kVariants, and stage 3 with its parameters offloaded without the optimizer
// when the ds_config asks for that (DeepSpeed allows it; the row was planned as "none" before,
// and plan and simulate disagreed), before the row that offloads both.
std::vector<Variant> variants_of(const PlanRequest& r) {
  std::vector<Variant> v(std::begin(kVariants), std::end(kVariants));
  // No stage 0 row for dtypes DeepSpeed refuses without ZeRO (plan_words.cc notes why): it was
  // planned as FP16_Optimizer, which that release never runs for them.
  if (!stage0_refusal(r).empty()) v.erase(v.begin());
  if (r.ds_config_given && r.base.zero.stage == 3 &&
      offload_of(r.base) == OffloadVariant::ParamsCpu)
    v.insert(v.end() - 1, Variant{3, OffloadVariant::ParamsCpu});
  return v;
}

/// Micro-batch search stops here: beyond it the answer is "at least this" (models without a
/// transformer shape have no activation model, so memory does not grow with the batch).
constexpr std::uint64_t kMaxSearchMicroBatch = 65536;

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
  /// errors in `diags`, when partitioning failed. Each stage is planned on its own: a schedule's
  /// layout names its stage.
  const PartitionPlan* plan_for(const DsConfig& ds, std::uint64_t gpus, Diagnostics& diags) {
    const std::lock_guard<std::mutex> lock(mutex_);  // variants are evaluated in parallel
    PartitionOptions o = partition_options(ds, static_cast<std::uint32_t>(gpus));
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

  bool fits(const MemoryReport& m) const { return total_of(m) <= req_.cluster.gpu.memory_bytes; }

  /// The host side: every rank of a node is a process on that node's RAM, so the node holds
  /// GPUs per node x a rank's host peak (host_per_node). Always true without a host capacity.
  bool host_fits(Bytes host_per_rank, std::uint64_t gpus) const {
    if (!req_.cpu_memory_per_node) return true;
    return host_per_node(host_per_rank, cluster_with(req_.cluster, gpus)) <=
           *req_.cpu_memory_per_node;
  }

  /// DeepSpeed accounting: the row as `zerosim simulate` runs it (row_simulation.h). zero.Init
  /// applies to stage 3 only (DeepSpeed's zero.Init partitions at construction for stage 3).
  RowInput row_input(const DsConfig& ds, const PartitionPlan& plan, std::uint64_t gpus,
                     std::uint64_t micro_batch) const {
    RowInput in;
    in.model = &req_.model;
    in.plan = &plan;
    in.ds = &ds;
    in.cluster = cluster_with(req_.cluster, gpus);
    in.training = req_.training;
    in.training.micro_batch = micro_batch;
    in.training.zero_init = req_.training.zero_init && ds.zero.stage == 3;
    in.overheads = req_.overheads;
    in.version = req_.version;
    in.calibration = req_.calibration.get();
    return in;
  }
  Bytes capacity() const { return req_.cluster.gpu.memory_bytes; }

  /// Largest b in [1, kMaxSearchMicroBatch] that fits (memory grows with b); 0 when b = 1 does not
  /// fit.
  std::uint64_t max_micro_batch(const DsConfig& ds, const PartitionPlan& plan, std::uint64_t gpus,
                                const TrainingSettings* t = nullptr) const {
    if (!fits(memory(ds, plan, gpus, 1, t))) return 0;
    std::uint64_t lo = 1, hi = 2;
    while (hi <= kMaxSearchMicroBatch && fits(memory(ds, plan, gpus, hi, t))) {
      lo = hi;
      hi *= 2;
    }
    if (hi > kMaxSearchMicroBatch) return lo;
    while (hi - lo > 1) {  // invariant: lo fits, hi does not
      std::uint64_t mid = lo + (hi - lo) / 2;
      (fits(memory(ds, plan, gpus, mid, t)) ? lo : hi) = mid;
    }
    return lo;
  }

 private:
  const PlanRequest& req_;
  std::mutex mutex_;
  // std::map: a plan handed out stays where it is while others are added.
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
  return base.zero.stage == v.stage && offload_of(base) == v.offload;
}

/// `largest_module`: r.model.largest_module_params(), asked for stage 3 only.
std::optional<EstimatorResult> estimator_for(const PlanRequest& r, const Variant& v,
                                             const std::function<Elements()>& largest_module) {
  const Elements p = r.model.num_parameters();
  const std::uint64_t g = r.cluster.gpus_per_node, n = r.cluster.nodes;
  const bool opt = offloads_optimizer(v.offload);
  // DeepSpeed's estimators have no case for parameters offloaded without the optimizer (their
  // cpu_offload_params applies under cpu_offload only).
  if (v.offload == OffloadVariant::ParamsCpu) return std::nullopt;
  if (v.stage == 2) return estimate_zero2_model_states_mem_needs(p, g, n, opt);
  if (v.stage == 3)
    return estimate_zero3_model_states_mem_needs(p, largest_module(), g, n, opt,
                                                 offloads_params(v.offload),
                                                 /*zero_init=*/true);
  return std::nullopt;
}

}  // namespace

std::string stage0_refusal(const PlanRequest& r) {
  if (r.mode != Accounting::DeepSpeed) return {};
  return r.base.stage0_dtype_problem();
}

DsConfig variant_config(const DsConfig& base, int stage, OffloadVariant offload) {
  DsConfig d = base;
  d.zero.stage = stage;
  d.zero.overlap_comm = d.zero.overlap_comm_set.value_or(stage == 3);
  d.zero.offload_optimizer.device =
      offloads_optimizer(offload) ? OffloadDevice::Cpu : OffloadDevice::None;
  d.zero.offload_param.device = offloads_params(offload) ? OffloadDevice::Cpu : OffloadDevice::None;
  return d;
}

Result<PlanResult> make_plan(const PlanRequest& request) {
  const std::uint64_t world = request.cluster.world_size();
  if (world == 0) return fail<PlanResult>("--gpus", "", "expected at least 1 GPU, got 0");
  if (const std::string why = request.base.version_problem(request.version); !why.empty())
    return fail<PlanResult>("plan", "/deepspeed_version", why);  // as build_schedule checks it
  if (!request.base.refusals.empty()) {  // stage 3 NVMe offload (DsConfig::refusals)
    Diagnostics d;
    for (const Diagnostic& r : request.base.refusals) d.add(r);
    return d;
  }
  PlanResult out;
  out.request = request;
  Evaluator ev(out.request);
  // DeepSpeed accounting asks the simulator (one model of memory, traffic and time); paper
  // accounting is the ZeRO paper's closed form by definition.
  const bool simulated = request.mode == Accounting::DeepSpeed;
  // The largest module's params (DeepSpeed's stage 3 estimator quotes them): a map over every param
  // name, once for the three stage 3 rows instead of once each (1 % of the 405B sweep).
  std::once_flag largest_once;
  Elements largest = 0;
  const std::function<Elements()> largest_module = [&] {
    std::call_once(largest_once, [&] { largest = request.model.largest_module_params(); });
    return largest;
  };
  // The variants' configs, and whether each one's init floor (the whole 16-bit model every GPU
  // holds without zero.Init; stages 0-2 always) already exceeds the GPU: then no GPU count and no
  // micro-batch fits, whatever the checkpointing, and neither the GPU-count search nor the
  // checkpointed micro-batch search needs a simulation (plan_simulate_test checks the floor
  // against the simulated peak, and that the rows' answers are the same with the shortcut off).
  const std::vector<Variant> variants = variants_of(request);
  const std::size_t kVariantCount = variants.size();
  std::vector<DsConfig> configs;
  std::vector<Bytes> init_totals(kVariantCount, 0);
  std::vector<bool> never_fits(kVariantCount, false);
  configs.reserve(kVariantCount);
  for (std::size_t i = 0; i < kVariantCount; ++i) {
    configs.push_back(variant_config(request.base, variants[i].stage, variants[i].offload));
    const DsConfig& ds = configs.back();
    const bool whole_model_at_init = !(ds.zero.stage == 3 && request.training.zero_init);
    const Bytes init_floor =
        simulated && whole_model_at_init
            ? checked_mul(request.model.num_parameters(), dtype_size(ds.lp_dtype()))
                  .value_or(kBytesOverflow)
            : 0;
    init_totals[i] = saturating_add(init_floor, overhead_bytes(init_floor, request.overheads));
    never_fits[i] = simulated && init_totals[i] > ev.capacity();
  }
  // The ZeRO paper's formulas keep every state on the GPU (offload is ZeRO-Offload's, a later
  // paper): paper accounting has no offload rows (they were copies of the rows without offload).
  auto wanted = [&](std::size_t i) {
    return variants[i].stage <= request.max_stage &&
           (simulated || variants[i].offload == OffloadVariant::None);
  };
  // A full sweep under DeepSpeed accounting simulates every cell (variant, GPU count): the cells
  // are tasks of their own beside the rows, so the threads share a variant's cells instead of one
  // thread taking all of a stage 3 variant's (the Llama-3.1-405B --zero-init sweep: three stage 3
  // variants of 12 cells each on 2 cores left one core idle for the last fifth of the run).
  // Without --sweep the search stops at the first count that fits, so a variant's cells stay in
  // order on its own task.
  const bool cell_tasks = simulated && request.full_sweep;
  std::vector<std::uint64_t> counts;  // the sweep's GPU counts, other than the request's
  for (std::uint64_t g = 1; g <= request.sweep_max_gpus; g *= 2)
    if (g != world) counts.push_back(g);
  // One sweep cell: its memory alone (a cell shows no time), simulated or by the paper's closed
  // form; the largest micro-batch only for a full sweep (the search for the smallest fitting count
  // shows none).
  struct Cell {
    Diagnostics diags;
    bool ok = false;
    Bytes total = 0;
    bool fit = false;
    std::uint64_t max_micro_batch = 0;
  };
  std::vector<Cell> cells(cell_tasks ? kVariantCount * counts.size() : 0);
  auto evaluate_cell = [&](std::size_t i, std::uint64_t g, Cell& cell) {
    const DsConfig& ds = configs[i];
    const PartitionPlan* pg = ev.plan_for(ds, g, cell.diags);
    if (!pg) return;
    if (simulated) {
      const RowInput in = ev.row_input(ds, *pg, g, request.training.micro_batch);
      auto sim = simulate_row_memory(in);
      if (!sim.ok()) return cell.diags.append(sim.diagnostics());
      cell.total = sim->total;
      cell.fit = cell.total <= ev.capacity() && ev.host_fits(sim->host_peak, g);
      if (cell.fit && request.full_sweep)
        cell.max_micro_batch =
            max_fitting_micro_batch(sim.value(), in, ev.capacity(), kMaxSearchMicroBatch);
    } else {
      const MemoryReport m = ev.memory(ds, *pg, g, request.training.micro_batch);
      cell.total = total_of(m);
      cell.fit = ev.fits(m) && ev.host_fits(m.host_bytes, g);
      if (cell.fit && request.full_sweep) cell.max_micro_batch = ev.max_micro_batch(ds, *pg, g);
    }
    cell.ok = true;
  };
  // One variant's row; Diagnostics with an error when it failed. Variants and cells are independent
  // (pure functions of the request), so they run on parallel threads and are collected in table
  // order: the output does not depend on the thread count.
  struct Outcome {
    PlanRow row;
    std::vector<SweepCell> sweep;
    Diagnostics diags;
    bool ok = false;
  };
  auto evaluate = [&](std::size_t i, Outcome& oc) {
    const Variant& v = variants[i];
    Diagnostics& diags = oc.diags;
    PlanRow& row = oc.row;
    row.stage = v.stage;
    row.offload = v.offload;
    const DsConfig& ds = configs[i];
    row.optimizer = optimizer_name(ds.optimizer_path());
    const PartitionPlan* plan = ev.plan_for(ds, world, diags);
    if (!plan) return;
    if (simulated) {
      const RowInput in = ev.row_input(ds, *plan, world, request.training.micro_batch);
      auto sim = simulate_row(in);
      if (!sim.ok()) return diags.append(sim.diagnostics());
      row.memory = sim->report;
      row.simulated = true;
      row.steady_total_bytes = sim->steady_total;
      row.first_step_ns = sim->first_step_ns;
      row.steady_step_ns = sim->steady_step_ns;
      row.init_bytes_sent = sim->init_bytes_sent;
      row.comm_bytes_per_step = sim->steady_bytes_sent;
      row.fits = sim->total <= ev.capacity();
      // Memory grows with the micro-batch: a row that does not fit at 1 needs no search.
      const bool none_fits = !row.fits && request.training.micro_batch <= 1;
      row.max_micro_batch =
          none_fits ? 0
                    : max_fitting_micro_batch(sim.value(), in, ev.capacity(), kMaxSearchMicroBatch);
      // What activation checkpointing would unlock (the speed recommendation weighs it), from the
      // same simulation with checkpointing on, so plan keeps one model of memory.
      if (request.model.arch && !request.training.activation_checkpointing && !never_fits[i]) {
        RowInput ck = in;
        ck.training.activation_checkpointing = true;
        auto cks = simulate_row_memory(ck);  // only its memory is shown
        if (!cks.ok()) return diags.append(cks.diagnostics());
        const bool ck_none = cks->total > ev.capacity() && request.training.micro_batch <= 1;
        row.max_micro_batch_checkpointed =
            ck_none ? 0
                    : max_fitting_micro_batch(cks.value(), ck, ev.capacity(), kMaxSearchMicroBatch);
      }
    } else {
      row.memory = ev.memory(ds, *plan, world, request.training.micro_batch);
      row.fits = ev.fits(row.memory);
      row.max_micro_batch = ev.max_micro_batch(ds, *plan, world);
      // The traffic of the paper's schedule as `simulate --mode paper` runs it (one definition).
      RowInput in = ev.row_input(ds, *plan, world, request.training.micro_batch);
      in.mode = Accounting::Paper;
      in.training.zero_init = false;
      auto sim = simulate_row(in);
      if (!sim.ok()) return diags.append(sim.diagnostics());
      row.comm_bytes_per_step = sim->steady_bytes_sent;
      row.init_bytes_sent = sim->init_bytes_sent;
    }
    row.headroom_bytes = signed_difference(request.cluster.gpu.memory_bytes, total_of(row.memory));
    row.ds_estimate = estimator_for(request, v, largest_module);
    // Paper accounting has no offload rows: a ds_config that offloads is its stage's row.
    row.matches_ds_config =
        request.ds_config_given &&
        (simulated ? matches(request.base, v) : request.base.zero.stage == v.stage);
    if (!simulated)
      row.max_micro_batch_checkpointed = checkpointed_micro_batch(request, ev, ds, *plan);
    // Host memory does not grow with the micro-batch (offload buffers follow the partitions), so
    // a row whose host side does not fit fits at no micro-batch.
    row.gpu_fits = row.fits;
    row.host_fits = ev.host_fits(row.memory.host_bytes, world);
    if (!row.host_fits) {
      row.fits = false;
      row.max_micro_batch = 0;
      row.max_micro_batch_checkpointed = 0;
    }
    oc.ok = true;
  };
  // A variant's sweep in GPU-count order: the cells that never fit, the row's own count, and the
  // others from `other(g, c)` (c: g's index in `counts`), a cell task's result or one computed
  // here in order; without --sweep it stops at the first count that fits (row.min_gpus).
  auto sweep = [&](std::size_t i, Outcome& oc, const auto& other) {
    const Variant& v = variants[i];
    PlanRow& row = oc.row;
    for (std::uint64_t g = 1, c = 0; g <= request.sweep_max_gpus; g *= 2) {
      SweepCell cell{g, v.stage, v.offload, 0, false, 0, false};
      if (never_fits[i]) {
        if (!request.full_sweep) break;
        cell.total_bytes = init_totals[i];
        cell.at_least = true;
      } else if (simulated && g == world) {  // the row itself
        cell.total_bytes = total_of(row.memory);
        cell.fits = row.fits;
        cell.max_micro_batch = row.fits ? row.max_micro_batch : 0;
      } else {
        const Cell& done = other(g, c);
        oc.diags.append(done.diags);
        if (!done.ok) {
          oc.ok = false;
          return;
        }
        cell.total_bytes = done.total;
        cell.fits = done.fit;
        cell.max_micro_batch = done.max_micro_batch;
      }
      if (g != world) ++c;
      if (cell.fits && !row.min_gpus) row.min_gpus = g;
      if (request.full_sweep) oc.sweep.push_back(cell);
      if (!request.full_sweep && row.min_gpus) break;
    }
  };
  // A variant's task: its row, then (without cell tasks) its sweep, each cell computed in order.
  auto evaluate_variant = [&](std::size_t i, Outcome& oc) {
    evaluate(i, oc);
    if (!oc.ok || cell_tasks) return;  // cell tasks: swept once every task has run
    Cell scratch;
    sweep(i, oc, [&](std::uint64_t g, std::size_t) -> const Cell& {
      scratch = Cell{};
      evaluate_cell(i, g, scratch);
      return scratch;
    });
  };
  // Tasks longest first (stage 3's schedules are about twice stage 1/2's, stage 0's the shortest),
  // so the last one taken is short and no thread waits alone on a stage 3 schedule: the rows, then
  // the cells that need a simulation, stage 3's first.
  std::vector<std::size_t> longest_first;
  for (const int stage : {3, 1, 2, 0})
    for (std::size_t i = 0; i < kVariantCount; ++i)
      if (variants[i].stage == stage) longest_first.push_back(i);
  struct Task {
    std::size_t variant;
    std::size_t cell;  ///< index in `counts`; kNoCell: the variant's row
  };
  constexpr std::size_t kNoCell = ~std::size_t{0};
  std::vector<Task> tasks;
  for (std::size_t i : longest_first)
    if (wanted(i)) tasks.push_back({i, kNoCell});
  if (cell_tasks)
    for (std::size_t i : longest_first)
      if (wanted(i) && !never_fits[i])
        for (std::size_t c = 0; c < counts.size(); ++c) tasks.push_back({i, c});
  std::vector<Outcome> outcomes(kVariantCount);
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t n = next++; n < tasks.size(); n = next++) {
      const Task& t = tasks[n];
      if (t.cell == kNoCell) {
        evaluate_variant(t.variant, outcomes[t.variant]);
      } else {
        evaluate_cell(t.variant, counts[t.cell], cells[t.variant * counts.size() + t.cell]);
      }
    }
  };
  const std::size_t threads = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1,
                                                      std::max<std::size_t>(tasks.size(), 1));
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  Diagnostics diags;
  for (std::size_t i = 0; i < kVariantCount; ++i) {
    if (!wanted(i)) continue;
    Outcome& oc = outcomes[i];
    if (oc.ok && cell_tasks)
      sweep(i, oc, [&](std::uint64_t, std::size_t c) -> const Cell& {
        return cells[i * counts.size() + c];
      });
    diags.append(oc.diags);
    if (!oc.ok || diags.has_errors()) return Result<PlanResult>(diags);
    out.rows.push_back(std::move(oc.row));
    for (const SweepCell& c : oc.sweep) out.sweep.push_back(c);
  }
  if (refuse_saturated(out, diags)) return Result<PlanResult>(diags);
  predict_speeds(out, [&](const PlanRow& r) {
    return ev.plan_for(variant_config(request.base, r.stage, r.offload), world, diags);
  });
  recommend(out);
  recommend_on_speed(out);
  add_notes(out);
  add_time_model(out);
  return Result<PlanResult>(std::move(out), diags);
}

}  // namespace zerosim
