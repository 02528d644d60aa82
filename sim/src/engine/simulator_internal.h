// Private pieces of simulate() (engine.h), split over simulator*.cc:
//   simulator_compile.cc  costs the lowered schedule (schedule_graph.h) into compact per-op
//                         records the loop reads;
//   simulator.cc          the event loop (streams, deps, Sync, a pending completion per stream)
//                         and the memory ledger filled from its times;
//   simulator_summary.cc  the summary (steps, exposed communication, traffic, peaks, OOM) and the
//                         in-memory trace (spans, comm records, counters, metadata);
//   simulator_run.cc      simulate() itself and the metadata notes.
// Ops are large (labels, deps vectors, operands); every later pass reads the compact Program and
// the graph's per-op arrays instead, which keeps a simulated step of Llama-2-70B (16k ops) in
// cache.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "zerosim/engine.h"
#include "zerosim/schedule_graph.h"

namespace zerosim::sim {

/// What the event loop and the summary need of one op besides the graph's per-op arrays (gates,
/// communicator order, deps: the loop reads those in place): 16 bytes. Trivial (no member
/// initialisers): compile() writes every field of every op, so nothing is zeroed first.
struct CompiledOp {
  SimTime duration_ns;
  OpKind kind;
  Stream stream;
  Phase phase;
  std::uint32_t step;
};

/// A fixed-size array whose elements start uninitialised, for per-op arrays that are written in
/// full: a std::vector would zero (or construct) every element first, and a push_back per op pays a
/// capacity test, which together were a quarter of compile().
template <class T>
class OpArray {
 public:
  OpArray() = default;
  explicit OpArray(std::size_t n) : data_(std::make_unique_for_overwrite<T[]>(n)), size_(n) {}
  std::size_t size() const { return size_; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }

 private:
  std::unique_ptr<T[]> data_;
  std::size_t size_ = 0;
};

/// One collective call and its cost.
struct CollectiveCall {
  std::uint32_t op = 0;
  CollectiveKind kind = CollectiveKind::AllReduce;
  CollectiveCost cost;
};

/// The lowered schedule (schedule_graph.h: lanes, deps, gates, communicator order, memory ops)
/// with every op's cost. `graph` must outlive the program.
struct Program {
  const ScheduleGraph* graph = nullptr;
  OpArray<CompiledOp> ops;
  const std::vector<std::uint32_t>& deps() const { return graph->deps; }
  const std::array<std::vector<std::uint32_t>, kStreamCount>& lanes() const { return graph->lanes; }
  const std::vector<std::uint32_t>& memory_ops() const { return graph->memory_ops; }
  std::vector<CollectiveCall> collectives;  ///< program order
  OpArray<Bytes> bytes;                     ///< per op: bytes touched or S
};

/// Costs every op of the lowered schedule for the timing role (graph.max_slots). Errors: a cost
/// the models cannot give (every one is reported).
Result<Program> compile(const Schedule& s, const ScheduleGraph& graph, const CostModel& cost);

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

/// The trace of a simulation: a span per op (Alloc/Free excepted; in start order) and a comm record
/// per collective, from the loop's times. Ranks come from traced_ranks.
Trace make_trace(const Schedule& s, const Program& p, const LoopOutput& loop,
                 const TraceMeta& meta);
/// Feeds the same spans and comm records to `b` (the fields the summary reads: SpanTiming,
/// CommTiming), without building a Trace.
void add_ops(const Schedule& s, const Program& p, const LoopOutput& loop, SummaryBuilder& b);
/// Feeds one rank per role (role order): its representative with the ledger's peaks and OOM.
void add_roles(const Schedule& s, const std::vector<RoleMemory>& memory, SummaryBuilder& b);
/// The written trace's ranks: role 0, the peak role, then the lowest other roles, up to max_roles,
/// ascending by rank, with their memory curves and OOM (no RankPeaks: the curves carry them).
std::vector<TraceRank> traced_ranks(const Schedule& s, const LoopOutput& loop,
                                    const std::vector<RoleMemory>& memory, std::uint32_t max_roles);

}  // namespace zerosim::sim
