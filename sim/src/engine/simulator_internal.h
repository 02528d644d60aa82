// Private pieces of simulate() (engine.h), split over simulator*.cc:
//   simulator_compile.cc  checks what the engine relies on and compiles the schedule into compact
//                         arrays (one pass over the ops: costs, deps, lanes, Sync gates);
//   simulator.cc          the event loop (streams, deps, Sync, the EventQueue) and the memory
//                         ledger filled from its times;
//   simulator_summary.cc  the summary (steps, exposed communication, traffic, peaks, OOM) and the
//                         in-memory trace (spans, comm records, counters, metadata);
//   simulator_run.cc      simulate() itself and the metadata notes.
// Ops are large (labels, deps vectors); every later pass reads the compact Program instead, which
// keeps a simulated step of Llama-2-70B (15k ops) in cache.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "zerosim/engine.h"

namespace zerosim::sim {

/// What the event loop and the summary need of one op (48 bytes).
struct CompiledOp {
  SimTime duration_ns = 0;
  std::uint32_t deps_begin = 0;  ///< [deps_begin, deps_end) in Program::deps
  std::uint32_t deps_end = 0;
  std::uint32_t gate = kNone;  ///< the latest Sync before this op
  std::uint32_t prev_call =
      kNone;  ///< collectives: the previous collective on the same communicator
  std::uint32_t step = 0;
  std::uint32_t buffer = kNone;
  OpKind kind = OpKind::Marker;
  Stream stream = Stream::Compute;
  Phase phase = Phase::Forward;
};

/// One collective call and its cost.
struct CollectiveCall {
  std::uint32_t op = 0;
  CollectiveKind kind = CollectiveKind::AllReduce;
  CollectiveCost cost;
};

struct Program {
  std::vector<CompiledOp> ops;
  std::vector<std::uint32_t> deps;
  std::array<std::vector<std::uint32_t>, kStreamCount> lanes;  ///< op indices per stream
  std::vector<std::uint32_t> memory_ops;                       ///< Alloc/Free op indices
  std::vector<CollectiveCall> collectives;                     ///< program order
  std::vector<Bytes> bytes;                                    ///< per op: bytes touched or S
};

/// The timing role: element-wise max of every role's slot values.
std::vector<Elements> timing_slots(const Schedule& s);

/// Checks the ops (buffer, slot and stream indices, deps pointing backwards) and compiles them with
/// their costs for the timing role's `slots`. Every problem is reported.
Result<Program> compile(const Schedule& s, const CostModel& cost,
                        const std::vector<Elements>& slots);

/// What the event loop measured.
struct LoopOutput {
  std::vector<OpTiming> ops;
  std::vector<SimTime> blocked_ns;     ///< per op on the compute stream: idle time before it
  std::vector<std::uint32_t> blocker;  ///< the op it waited for last (kNone: none)
  MemoryLedger ledger;                 ///< one buffer per schedule buffer (same index)
};

/// Runs the event loop, then fills the ledger with every Alloc/Free in program order
/// (record_memory in simulator.cc says why). Errors: a deadlock, time overflow, ledger misuse.
Result<LoopOutput> run_event_loop(const Schedule& s, const Program& p);

/// The trace of a simulation, which summarize() (trace.h) turns into its summary. Spans and comm
/// records come from the loop's times; ranks are every role's representative with its ledger peaks
/// and OOM (RankPeaks), without memory curves. `full` adds every span with its name (in start
/// order); otherwise only the spans that the summary's numbers depend on are kept (compute, waits
/// on the compute stream, collectives on it, each step's and the init phase's last span), which
/// keeps a simulation without a trace as cheap as it was. Ranks are added by add_trace_ranks.
Trace make_trace(const Schedule& s, const Program& p, const LoopOutput& loop, const TraceMeta& meta,
                 bool full);
/// Adds one rank per role (role order) with its peaks and OOM.
void add_trace_ranks(const Schedule& s, const std::vector<RoleMemory>& memory, Trace& t);
/// The written trace: keeps the ranks of the traced roles (role 0, the peak role, then the lowest
/// others, up to max_roles; ascending by rank) with their memory curves, without RankPeaks (the
/// curves carry them).
void keep_traced_ranks(const LoopOutput& loop, const std::vector<RoleMemory>& memory,
                       std::uint32_t max_roles, Trace& t);

}  // namespace zerosim::sim
