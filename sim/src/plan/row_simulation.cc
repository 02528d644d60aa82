// simulate_row and the exact micro-batch search (row_simulation.h).
#include "zerosim/row_simulation.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <string_view>

#include "memory/exact_math.h"
#include "schedule/builders.h"
#include "zerosim/calibration.h"
#include "zerosim/engine.h"
#include "zerosim/scenario.h"
#include "zerosim/schedule_builder.h"
#include "zerosim/schedule_graph.h"

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

// Bytes of each ledger buffer in `pool` (device, or host and pinned) live on `role` after events
// [0, last]: the state at a peak (MemoryPeak::event). O(events up to `last`).
std::vector<Bytes> live_by_buffer(const MemoryLedger& l, std::uint32_t role, std::uint64_t last,
                                  bool device) {
  std::vector<Bytes> live(l.buffers().size(), 0);
  const auto& events = l.events();
  for (std::size_t i = 0; i < events.size() && i <= last; ++i) {
    const MemoryLedger::Event& e = events[i];
    const LedgerBuffer& b = l.buffers()[e.buffer];
    if ((b.pool == MemoryPool::Device) != device) continue;
    live[e.buffer] = e.alloc ? b.bytes_for(role) : 0;
  }
  return live;
}

// The name shared by a family of buffers: "grad:model.layers.0.mlp.up_proj.weight" -> "grad:*",
// "ipg[1]" -> "ipg[*]", "grads_in_partition (backward flush 3)" -> "... flush *"; digits that
// belong to a word ("fp32", "bfloat16", "bit16_groups_flat") stay.
std::string family_of(std::string_view name) {
  if (const std::size_t colon = name.find(':'); colon != std::string_view::npos)
    return std::string(name.substr(0, colon + 1)) + "*";
  std::string out;
  for (std::size_t i = 0; i < name.size();) {
    const bool digit = name[i] >= '0' && name[i] <= '9';
    const bool in_word = i > 0 && std::isalpha(static_cast<unsigned char>(name[i - 1])) != 0;
    if (!digit || in_word) {
      // Keep a whole word-attached digit run ("fp32"), not only its first digit.
      do out.push_back(name[i++]);
      while (digit && i < name.size() && name[i] >= '0' && name[i] <= '9');
      continue;
    }
    out.push_back('*');
    while (i < name.size() && name[i] >= '0' && name[i] <= '9') ++i;
  }
  return out;
}

// One item per buffer family live at a peak (same spec id, category and family name), by layer
// and then in the order the schedule declares the families: "bit16_groups_flat[0] (B1)", "grad:*
// (T1), 580 buffers". The items add up to the peak's bytes.
void itemise(MemoryReport& r, const Schedule& sched, const std::vector<Bytes>& live,
             const std::string& layer_override, const std::string& phase) {
  struct Family {
    std::string label;
    std::string spec;
    BufferCategory category;
    Bytes bytes = 0;
    std::size_t count = 0;
  };
  std::vector<Family> families;
  std::map<std::string, std::size_t, std::less<>> index;
  for (std::size_t i = 0; i < live.size() && i < sched.buffers.size(); ++i) {
    if (live[i] == 0) continue;
    const Buffer& b = sched.buffers[i];
    std::string family = family_of(b.name);
    std::string key = b.spec_id + "\x1f" + std::string(category_name(b.category)) + "\x1f" + family;
    auto [it, added] = index.try_emplace(std::move(key), families.size());
    if (added) families.push_back({b.name, b.spec_id, b.category, 0, 0});
    Family& f = families[it->second];
    if (f.count == 1) f.label = std::move(family);  // a second member: name the family
    f.bytes = memory::sat_add(f.bytes, live[i]);
    ++f.count;
  }
  // Model states first, in the table's column order, then buffers and activations.
  auto rank = [](BufferCategory c) {
    const std::string_view l = layer_of(c);
    for (int i = 0; const char* x : {"params", "grads", "optimizer_states", "buffers"}) {
      if (l == x) return i;
      ++i;
    }
    return 4;
  };
  std::stable_sort(families.begin(), families.end(), [&](const Family& a, const Family& b) {
    return rank(a.category) < rank(b.category);
  });
  for (Family& f : families) {
    std::string label = std::move(f.label);
    if (!f.spec.empty()) label += " (" + f.spec + ")";
    if (f.count > 1) label += ", " + std::to_string(f.count) + " buffers";
    r.items.push_back({layer_override.empty() ? layer_of(f.category) : layer_override,
                       std::move(label), f.bytes, phase});
  }
}

MemoryReport report_of(const RowSimulation& row, const OverheadParams& o) {
  MemoryReport r;
  r.peak_phase = peak_phase_name(row.phase);
  const std::string phase = r.peak_phase;
  for (BufferCategory c : kAllCategories)
    add_layer(r, c, row.whole_run.by_category[static_cast<std::size_t>(c)]);
  // The buffers live at the worst role's whole-run peak, and at the largest host peak.
  const RolePeakSummary* peak_role = nullptr;
  if (const Summary& s = row.sim.summary; s.peak_role < s.peaks.size())
    peak_role = &s.peaks[s.peak_role];
  if (peak_role && row.whole_run.bytes > 0)
    itemise(r, row.schedule,
            live_by_buffer(row.sim.ledger, peak_role->role, row.whole_run.event, true), "", phase);
  r.phases.push_back({"whole run (init included)", row.whole_run.bytes});
  r.phases.push_back({"steady state (last step)", row.steady.bytes});
  auto overhead = [&r](std::string name, Bytes b) {
    if (b == 0) return;
    r.overhead = memory::sat_add(r.overhead, b);
    r.items.push_back({"overhead", std::move(name), b, "persistent"});
  };
  overhead("CUDA context, kernels and library workspaces", o.cuda_context);
  overhead("NCCL communicator buffers", o.nccl_buffers);
  overhead("bitsandbytes quantization state (absmax, codes; every rank)", o.quantization_state);
  overhead("bitsandbytes dequantized weight (largest, one backward matmul)", o.dequantized_weight);
  if (o.fragmentation > 0)
    overhead("allocator fragmentation (" + std::to_string(static_cast<int>(o.fragmentation * 100)) +
                 " % of tensor bytes)",
             memory::floor_scaled(row.whole_run.bytes, 1, o.fragmentation));
  if (row.host_peak > 0) {
    r.host_bytes = row.host_peak;
    std::uint32_t host_role = 0;
    const std::vector<RoleMemory>& m = row.sim.memory;
    for (std::uint32_t k = 1; k < m.size(); ++k)
      if (m[k].host.bytes > m[host_role].host.bytes) host_role = k;
    itemise(r, row.schedule,
            live_by_buffer(row.sim.ledger, host_role, m[host_role].host.event, false), "host",
            phase);
  }
  return r;
}

// Activation buffer sizes for `micro_batch`, by schedule buffer (kNoResize for other buffers).
constexpr Bytes kNoResize = ~Bytes{0};
std::vector<Bytes> activation_sizes(const Schedule& schedule, const RowInput& in,
                                    std::uint64_t micro_batch) {
  TrainingSettings t = in.training;
  t.micro_batch = micro_batch;
  const std::vector<Bytes> per_layer =
      schedule::layer_activation_bytes(*in.model, t, in.ds->lp_dtype());
  std::map<std::string, std::size_t, std::less<>> layer_index;
  for (std::size_t l = 0; l < in.model->layers.size(); ++l)
    layer_index.emplace(in.model->layers[l].name, l);
  std::vector<Bytes> out(schedule.buffers.size(), kNoResize);
  for (std::size_t i = 0; i < schedule.buffers.size(); ++i) {
    const Buffer& b = schedule.buffers[i];
    if (b.category != BufferCategory::Activation || b.name.rfind(kActivationPrefix, 0) != 0)
      continue;
    auto it = layer_index.find(
        std::string_view(b.name).substr(std::string_view(kActivationPrefix).size()));
    if (it != layer_index.end() && it->second < per_layer.size()) out[i] = per_layer[it->second];
  }
  return out;
}

ScheduleInput schedule_input_of(const RowInput& in) {
  ScheduleInput si;
  si.model = in.model;
  si.plan = in.plan;
  si.ds = in.ds;
  si.cluster = in.cluster;
  si.training = in.training;
  si.steps = kDefaultSteps;
  si.mode = in.mode;
  si.version = in.version;
  si.self_check = std::nullopt;  // simulate() lowers it (schedule_builder.h)
  si.labels = false;             // a row shows no op (its --verbose items name buffers, not ops)
  return si;
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
  b = memory::sat_add(b, memory::sat_add(o.quantization_state, o.dequantized_weight));
  if (o.fragmentation > 0)
    b = memory::sat_add(b, memory::floor_scaled(tensor_bytes, 1, o.fragmentation));
  return b;
}

Result<RowSimulation> simulate_row(const RowInput& in) {
  auto sched = build_schedule(schedule_input_of(in));
  if (!sched.ok()) return Result<RowSimulation>(sched.diagnostics());
  RowSimulation row;
  row.schedule = std::move(sched.value());
  EngineOptions eo;
  // The GPU was checked when the calibration was read (the CLI refuses another GPU's).
  if (in.calibration) (void)apply_calibration(*in.calibration, in.cluster.gpu, eo);
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

namespace {

Bytes peak_at(const Schedule& schedule, const MemoryLedger& src, const RowInput& in,
              std::uint64_t micro_batch) {
  const std::vector<Bytes> act = activation_sizes(schedule, in, micro_batch);
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

std::uint64_t max_fitting(const Schedule& schedule, const MemoryLedger& ledger, const RowInput& in,
                          Bytes capacity, std::uint64_t max_micro_batch) {
  auto fits = [&](std::uint64_t b) {
    const Bytes peak = peak_at(schedule, ledger, in, b);
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

}  // namespace

Bytes whole_run_peak_at(const RowSimulation& row, const RowInput& in, std::uint64_t micro_batch) {
  return peak_at(row.schedule, row.sim.ledger, in, micro_batch);
}

std::uint64_t max_fitting_micro_batch(const RowSimulation& row, const RowInput& in, Bytes capacity,
                                      std::uint64_t max_micro_batch) {
  return max_fitting(row.schedule, row.sim.ledger, in, capacity, max_micro_batch);
}

Result<RowMemory> simulate_row_memory(const RowInput& in) {
  auto sched = build_schedule(schedule_input_of(in));
  if (!sched.ok()) return Result<RowMemory>(sched.diagnostics());
  RowMemory row;
  row.schedule = std::move(sched.value());
  // simulate()'s lowering and its checks, then its ledger without the event loop.
  auto graph = lower_schedule(row.schedule, "schedule", LayoutCheck::References);
  if (!graph.ok()) return Result<RowMemory>(graph.diagnostics());
  auto ledger = memory_ledger(row.schedule, graph.value());
  if (!ledger.ok()) return Result<RowMemory>(ledger.diagnostics());
  row.ledger = std::move(ledger.value());
  for (const RoleMemory& m : row.ledger.analyze(0)) {
    row.whole_run = std::max(row.whole_run, m.device.bytes);
    row.host_peak = std::max(row.host_peak, m.host.bytes);
  }
  row.total = memory::sat_add(row.whole_run, overhead_bytes(row.whole_run, in.overheads));
  return Result<RowMemory>(std::move(row));
}

std::uint64_t max_fitting_micro_batch(const RowMemory& row, const RowInput& in, Bytes capacity,
                                      std::uint64_t max_micro_batch) {
  return max_fitting(row.schedule, row.ledger, in, capacity, max_micro_batch);
}

}  // namespace zerosim
