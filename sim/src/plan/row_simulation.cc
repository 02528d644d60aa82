// simulate_row and the exact micro-batch search (row_simulation.h).
#include "zerosim/row_simulation.h"

#include <algorithm>
#include <map>

#include "memory/exact_math.h"
#include "schedule/builders.h"
#include "zerosim/scenario.h"
#include "zerosim/schedule_builder.h"

namespace zerosim {
namespace {

constexpr const char* kActivationPrefix = "activations:";

const char* layer_of(BufferCategory c) {
  switch (c) {
    case BufferCategory::Param16:
      return "params";
    case BufferCategory::Grad:
      return "grads";
    case BufferCategory::Param32:
    case BufferCategory::OptimState:
      return "optimizer_states";
    case BufferCategory::Activation:
      return "activations";
    case BufferCategory::CommBucket:
    case BufferCategory::GatheredParam:
    case BufferCategory::Temp:
      return "buffers";
  }
  return "buffers";
}

const char* category_meaning(BufferCategory c) {
  switch (c) {
    case BufferCategory::Param16:
      return "low-precision parameters";
    case BufferCategory::Param32:
      return "fp32 master weights";
    case BufferCategory::Grad:
      return "gradients";
    case BufferCategory::OptimState:
      return "optimizer states";
    case BufferCategory::Activation:
      return "activations";
    case BufferCategory::CommBucket:
      return "communication buckets and staging";
    case BufferCategory::GatheredParam:
      return "gathered stage-3 parameters";
    case BufferCategory::Temp:
      return "temporaries";
  }
  return "";
}

void add_layer(MemoryReport& r, BufferCategory c, Bytes b) {
  switch (c) {
    case BufferCategory::Param16:
      r.params += b;
      break;
    case BufferCategory::Grad:
      r.grads += b;
      break;
    case BufferCategory::Param32:
    case BufferCategory::OptimState:
      r.optimizer_states += b;
      break;
    case BufferCategory::Activation:
      r.activations += b;
      break;
    default:
      r.buffers += b;
  }
}

MemoryReport report_of(const RowSimulation& row, const OverheadParams& o) {
  MemoryReport r;
  r.peak_phase = peak_phase_name(row.phase);
  const std::string phase = r.peak_phase;
  for (BufferCategory c : kAllCategories) {
    const Bytes b = row.whole_run.by_category[static_cast<std::size_t>(c)];
    if (b == 0) continue;
    add_layer(r, c, b);
    r.items.push_back(
        {layer_of(c),
         std::string(category_name(c)) + ": " + category_meaning(c) + " (simulated ledger)", b,
         phase});
  }
  r.phases.push_back({"whole run (init included)", row.whole_run.bytes});
  r.phases.push_back({"steady state (last step)", row.steady.bytes});
  auto overhead = [&r](std::string name, Bytes b) {
    if (b == 0) return;
    r.overhead = memory::sat_add(r.overhead, b);
    r.items.push_back({"overhead", std::move(name), b, "persistent"});
  };
  overhead("CUDA context, kernels and library workspaces", o.cuda_context);
  overhead("NCCL communicator buffers", o.nccl_buffers);
  if (o.fragmentation > 0)
    overhead("allocator fragmentation (" + std::to_string(static_cast<int>(o.fragmentation * 100)) +
                 " % of tensor bytes)",
             memory::floor_scaled(row.whole_run.bytes, 1, o.fragmentation));
  if (row.host_peak > 0) {
    r.host_bytes = row.host_peak;
    r.items.push_back({"host", "host and pinned memory (simulated ledger)", row.host_peak, phase});
  }
  return r;
}

// Activation buffer sizes for `micro_batch`, by schedule buffer (kNoResize for other buffers).
constexpr Bytes kNoResize = ~Bytes{0};
std::vector<Bytes> activation_sizes(const RowSimulation& row, const RowInput& in,
                                    std::uint64_t micro_batch) {
  TrainingSettings t = in.training;
  t.micro_batch = micro_batch;
  const std::vector<Bytes> per_layer =
      schedule::layer_activation_bytes(*in.model, t, in.ds->lp_dtype());
  std::map<std::string, std::size_t, std::less<>> layer_index;
  for (std::size_t l = 0; l < in.model->layers.size(); ++l)
    layer_index.emplace(in.model->layers[l].name, l);
  std::vector<Bytes> out(row.schedule.buffers.size(), kNoResize);
  for (std::size_t i = 0; i < row.schedule.buffers.size(); ++i) {
    const Buffer& b = row.schedule.buffers[i];
    if (b.category != BufferCategory::Activation || b.name.rfind(kActivationPrefix, 0) != 0)
      continue;
    auto it = layer_index.find(
        std::string_view(b.name).substr(std::string_view(kActivationPrefix).size()));
    if (it != layer_index.end() && it->second < per_layer.size()) out[i] = per_layer[it->second];
  }
  return out;
}

}  // namespace

const char* peak_phase_name(PeakPhase p) {
  switch (p) {
    case PeakPhase::Init:
      return "init";
    case PeakPhase::FirstStep:
      return "first step";
    case PeakPhase::Steady:
      return "steady";
  }
  return "steady";
}

Bytes overhead_bytes(Bytes tensor_bytes, const OverheadParams& o) {
  Bytes b = memory::sat_add(o.cuda_context, o.nccl_buffers);
  if (o.fragmentation > 0)
    b = memory::sat_add(b, memory::floor_scaled(tensor_bytes, 1, o.fragmentation));
  return b;
}

Result<RowSimulation> simulate_row(const RowInput& in) {
  ScheduleInput si;
  si.model = in.model;
  si.plan = in.plan;
  si.ds = in.ds;
  si.cluster = in.cluster;
  si.training = in.training;
  si.steps = kDefaultSteps;
  si.mode = in.mode;
  auto sched = build_schedule(si);
  if (!sched.ok()) return Result<RowSimulation>(sched.diagnostics());
  RowSimulation row;
  row.schedule = std::move(sched.value());
  EngineOptions eo;
  eo.record_trace = false;
  eo.device_capacity = 0;
  auto sim = simulate(row.schedule, in.cluster.gpu, eo);
  if (!sim.ok()) return Result<RowSimulation>(sim.diagnostics());
  row.sim = std::move(sim.value());
  const Summary& s = row.sim.summary;
  if (!s.peaks.empty()) {
    row.whole_run = s.peaks[s.peak_role].device;
    row.steady = s.peaks[s.steady_peak_role].steady;
    for (const RolePeakSummary& p : s.peaks) row.host_peak = std::max(row.host_peak, p.host_peak);
  }
  row.init_ns = s.init_ns;
  row.init_bytes_sent = s.init_bytes_sent;
  if (!s.steps.empty()) {
    row.first_step_ns = s.steps.front().end_ns - s.steps.front().start_ns;
    row.steady_step_ns = s.steps.back().end_ns - s.steps.back().start_ns;
    row.steady_bytes_sent = s.steps.back().bytes_sent;
    if (row.whole_run.bytes > row.steady.bytes)
      row.phase =
          row.whole_run.t < s.steps.front().start_ns ? PeakPhase::Init : PeakPhase::FirstStep;
  }
  row.total =
      memory::sat_add(row.whole_run.bytes, overhead_bytes(row.whole_run.bytes, in.overheads));
  row.steady_total =
      memory::sat_add(row.steady.bytes, overhead_bytes(row.steady.bytes, in.overheads));
  row.report = report_of(row, in.overheads);
  return Result<RowSimulation>(std::move(row));
}

Bytes whole_run_peak_at(const RowSimulation& row, const RowInput& in, std::uint64_t micro_batch) {
  const MemoryLedger& src = row.sim.ledger;
  const std::vector<Bytes> act = activation_sizes(row, in, micro_batch);
  MemoryLedger l(src.role_count());
  l.reserve(src.buffers().size(), src.event_count());
  for (std::size_t i = 0; i < src.buffers().size(); ++i) {
    const LedgerBuffer& b = src.buffers()[i];
    if (b.per_role) {
      (void)l.add_sparse_role_buffer({}, b.category, b.pool, b.role_bytes);
    } else {
      (void)l.add_buffer({}, b.category, b.pool,
                         i < act.size() && act[i] != kNoResize ? act[i] : b.bytes);
    }
  }
  for (const MemoryLedger::Event& e : src.events())
    (void)(e.alloc ? l.allocate(e.buffer, e.t) : l.release(e.buffer, e.t));
  Bytes peak = 0;
  for (const RoleMemory& m : l.analyze(0)) peak = std::max(peak, m.device.bytes);
  return peak;
}

std::uint64_t max_fitting_micro_batch(const RowSimulation& row, const RowInput& in, Bytes capacity,
                                      std::uint64_t max_micro_batch) {
  auto fits = [&](std::uint64_t b) {
    const Bytes peak = whole_run_peak_at(row, in, b);
    return memory::sat_add(peak, overhead_bytes(peak, in.overheads)) <= capacity;
  };
  if (max_micro_batch == 0 || !fits(1)) return 0;
  std::uint64_t lo = 1, hi = 2;
  while (hi <= max_micro_batch && fits(hi)) {
    lo = hi;
    hi *= 2;
  }
  if (hi > max_micro_batch) {
    if (lo == max_micro_batch || !fits(max_micro_batch)) {
      hi = std::min(hi, max_micro_batch + 1);
    } else {
      return max_micro_batch;
    }
  }
  while (hi - lo > 1) {  // invariant: lo fits, hi does not
    const std::uint64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace zerosim
