// simulate() (engine.h): validates the schedule and the options, runs the event loop for the timing
// role, analyses memory per role, and assembles the summary, the trace and their metadata (whose
// notes state every cost-model parameter used, so a trace explains its own numbers).
#include <optional>
#include <string>
#include <utility>

#include "engine/simulator_internal.h"
#include "zerosim/time_model_notes.h"

namespace zerosim {
namespace {

// checked_mul (units.h), inline: it runs for every op and buffer.

TraceMeta make_meta(const Schedule& s, const GpuSpec& gpu, const EngineOptions& o,
                    const CostModel& cost, Bytes capacity) {
  TraceMeta m;
  m.deepspeed_version = std::string(deepspeed_version_name(s.meta.deepspeed_version));
  m.mode = s.meta.mode;
  m.model = s.meta.model;
  m.optimizer = s.meta.optimizer;
  m.gpu = gpu.name;
  m.stage = s.meta.stage;
  m.world = s.meta.world;
  m.nodes = s.meta.nodes;
  m.gpus_per_node = s.meta.gpus_per_node;
  m.steps = s.meta.steps;
  m.grad_accum = s.meta.grad_accum;
  m.timed_steps = s.meta.steps;
  m.device_capacity = capacity;
  // The time-model notes come from the builder plan uses too (time_model_notes.h).
  for (TimeModelNote& n : time_model_notes(gpu, s.meta.lp, s.meta.stage, cost.rate(), o))
    m.notes.push_back(std::move(n.text));
  m.notes.insert(
      m.notes.end(),
      {
          "timing: one timing role (element-wise max slot values of " +
              std::to_string(s.roles.size()) + " roles); every rank shares its op times",
          capacity == 0 ? std::string("memory: no device capacity limit")
                        : "memory: device capacity " + std::to_string(capacity) +
                              " bytes; an OOM is reported and the simulation continues",
          // One note split over two lines (not two notes):
          // NOLINTNEXTLINE(bugprone-suspicious-missing-comma)
          "memory counts what the schedule allocates: CUDA context, NCCL buffers and fragmentation "
          "excluded",
      });
  for (const std::string& n : s.meta.notes) m.notes.push_back("schedule: " + n);
  return m;
}

template <class T>
std::size_t vec_bytes(const std::vector<T>& v) {
  return v.capacity() * sizeof(T);
}

}  // namespace

std::size_t SimulationResult::footprint_bytes() const {
  std::size_t n = sizeof(*this) + vec_bytes(ops) + vec_bytes(timing_slots) +
                  ledger.footprint_bytes() + vec_bytes(memory) + vec_bytes(summary.steps) +
                  vec_bytes(summary.comm) + vec_bytes(summary.peaks);
  for (const RoleMemory& m : memory)
    if (m.oom) n += m.oom->buffer_name.capacity();
  n += vec_bytes(trace.spans) + vec_bytes(trace.comms) + vec_bytes(trace.ranks);
  for (const Span& s : trace.spans) n += s.name.capacity() + s.category.capacity();
  for (const TraceRank& r : trace.ranks) n += vec_bytes(r.memory);
  return n;
}

EngineWorkspace::EngineWorkspace() : impl_(std::make_unique<Impl>()) {}
EngineWorkspace::~EngineWorkspace() = default;
EngineWorkspace::EngineWorkspace(EngineWorkspace&&) noexcept = default;
EngineWorkspace& EngineWorkspace::operator=(EngineWorkspace&&) noexcept = default;

namespace {
// Whether this thread's workspace exists and is not destroyed yet. A plain bool (constant
// initialisation, trivial destructor) stays readable while the thread's other thread_local and, on
// the main thread, static objects are destroyed: a result among them frees its arrays instead.
thread_local bool this_thread_workspace_alive = false;

struct ThisThreadWorkspace {
  ThisThreadWorkspace() { this_thread_workspace_alive = true; }
  ~ThisThreadWorkspace() { this_thread_workspace_alive = false; }
  ThisThreadWorkspace(const ThisThreadWorkspace&) = delete;
  ThisThreadWorkspace& operator=(const ThisThreadWorkspace&) = delete;
  EngineWorkspace ws;
};
}  // namespace

EngineWorkspace& EngineWorkspace::this_thread() {
  thread_local ThisThreadWorkspace holder;
  return holder.ws;
}

// With glibc's default malloc settings the arrays of a dropped result went back to the kernel
// (the heap top is trimmed once more than twice the largest mmap'ed block freed so far is free at
// it) and the next simulate() faulted fresh pages in: 73 per call for Llama-2-70B stage 3 at 1024
// GPUs (bench/simulate_bench.cc). Handing them to the workspace keeps them for the next call;
// the workspace keeps only the larger of what it has and what it is given.
SimulationResult::~SimulationResult() {
  if (ops.capacity() == 0 && ledger.buffers().empty() && ledger.event_count() == 0) return;
  if (this_thread_workspace_alive) EngineWorkspace::this_thread().recycle(std::move(*this));
}

void EngineWorkspace::recycle(SimulationResult&& done) {
  if (!impl_) impl_ = std::make_unique<Impl>();
  sim::LoopOutput& loop = impl_->loop;
  // Keep the larger storage (a result from another workspace may be smaller).
  if (done.ops.capacity() > loop.ops.capacity()) loop.ops = std::move(done.ops);
  if (done.ledger.footprint_bytes() > loop.ledger.footprint_bytes())
    loop.ledger = std::move(done.ledger);
}

void EngineWorkspace::release() { impl_ = std::make_unique<Impl>(); }

std::size_t EngineWorkspace::footprint_bytes() const {
  if (!impl_) return 0;
  const Impl& w = *impl_;
  std::size_t n = sizeof(Impl) + w.graph.footprint_bytes() +
                  w.program.ops.capacity() * sizeof(sim::CompiledOp) +
                  w.program.bytes.capacity() * sizeof(Bytes) + vec_bytes(w.program.collectives) +
                  vec_bytes(w.compile.compute_ops) + vec_bytes(w.loop.ops) +
                  vec_bytes(w.loop.waits) + vec_bytes(w.loop.done);
  return n + w.loop.ledger.footprint_bytes();
}

Result<SimulationResult> simulate(const Schedule& schedule, const GpuSpec& gpu,
                                  const EngineOptions& options) {
  return simulate(schedule, gpu, options, EngineWorkspace::this_thread());
}

Result<SimulationResult> simulate(const Schedule& schedule, const ScheduleGraph& graph,
                                  const GpuSpec& gpu, const EngineOptions& options) {
  return simulate(schedule, graph, gpu, options, EngineWorkspace::this_thread());
}

Result<SimulationResult> simulate(const Schedule& schedule, const GpuSpec& gpu,
                                  const EngineOptions& options, EngineWorkspace& workspace) {
  if (!workspace.impl_) workspace.impl_ = std::make_unique<EngineWorkspace::Impl>();
  // The engine reads no tensor layout; build_schedule and the schedule reader replanned it.
  ScheduleGraph& graph = workspace.impl_->graph;
  Diagnostics d = lower_schedule_into(schedule, graph, "schedule", LayoutCheck::References);
  if (d.has_errors()) return d;
  return simulate(schedule, graph, gpu, options, workspace);
}

Result<SimulationResult> simulate(const Schedule& schedule, const ScheduleGraph& graph,
                                  const GpuSpec& gpu, const EngineOptions& options,
                                  EngineWorkspace& workspace) {
  if (!workspace.impl_) workspace.impl_ = std::make_unique<EngineWorkspace::Impl>();
  EngineWorkspace::Impl& w = *workspace.impl_;
  SimulationResult out;
  out.timing_slots = graph.max_slots;
  auto cost = CostModel::make(gpu, schedule.meta, options);
  if (!cost.ok()) return cost.diagnostics();
  sim::Program& program = w.program;
  if (Diagnostics d = sim::compile(schedule, graph, cost.value(), program, w.compile);
      d.has_errors())
    return d;
  sim::LoopOutput& loop = w.loop;
  if (Diagnostics d = sim::run_event_loop(schedule, program, loop); d.has_errors()) return d;
  const Bytes capacity = options.device_capacity ? *options.device_capacity : gpu.memory_bytes;
  // The summary is summarize() of the simulation's trace, fed record by record (SummaryBuilder) so
  // that a simulation without a trace builds none. Its steps come first: the steady state (the
  // ledger's second window) starts with the last simulated step (with two or more steps the
  // optimizer states created by the first one exist, as in the planner's steady-state report).
  const TraceMeta meta = make_meta(schedule, gpu, options, cost.value(), capacity);
  SummaryBuilder summary(meta);
  sim::add_ops(schedule, program, loop, summary);
  out.memory = loop.ledger.analyze(capacity, summary.steady_from_ns());
  for (RoleMemory& m : out.memory)  // the ledger's buffers are unnamed (make_ledger says why)
    if (m.oom && m.oom->buffer < schedule.buffers.size())
      m.oom->buffer_name = schedule.buffers[m.oom->buffer].name;
  sim::add_roles(schedule, out.memory, summary);
  out.summary = summary.finish();
  if (options.record_trace) {
    out.trace = sim::make_trace(schedule, program, loop, meta);
    out.trace.ranks = sim::traced_ranks(schedule, loop, out.memory, options.max_trace_roles);
  }
  out.ops = std::move(loop.ops);
  out.ledger = std::move(loop.ledger);
  return out;
}

}  // namespace zerosim
