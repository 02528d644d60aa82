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

/// A per-op array whose elements start uninitialised, for arrays that are written in full: a
/// std::vector would zero (or construct) every element first, and a push_back per op pays a
/// capacity test, which together were a quarter of compile(). resize_for_overwrite keeps the
/// storage when it is large enough, so a workspace's arrays (EngineWorkspace) are allocated once.
template <class T>
class OpArray {
 public:
  OpArray() = default;
  explicit OpArray(std::size_t n) { resize_for_overwrite(n); }
  /// n elements, unspecified values (the old ones where the storage is kept).
  void resize_for_overwrite(std::size_t n) {
    if (n > capacity_) {
      data_ = std::make_unique_for_overwrite<T[]>(n);
      capacity_ = n;
    }
    size_ = n;
  }
  std::size_t size() const { return size_; }
  std::size_t capacity() const { return capacity_; }
  T* data() { return data_.get(); }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }

 private:
  std::unique_ptr<T[]> data_;
  std::size_t size_ = 0, capacity_ = 0;
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

/// The collectives compile() has costed, by call (kind, sizes, dtype, communicator): an
/// open-addressing table in one array (no heap node per entry), cleared per compile().
struct CallKey {
  CollectiveKind kind;
  Elements numel;
  Elements out_numel;
  DType dtype;
  std::uint32_t comm;
  friend bool operator==(const CallKey&, const CallKey&) = default;
};
class SeenCalls {
 public:
  void clear();
  /// The index stored for `key`, or nullptr. Inline: compile() asks once per collective.
  const std::size_t* find(const CallKey& key) const {
    for (std::size_t at = home(key);; at = (at + 1) & mask_) {
      const Slot& x = slots_[at];
      if (!x.used) return nullptr;
      if (x.key == key) return &x.index;
    }
  }
  void insert(const CallKey& key, std::size_t index);

 private:
  struct Slot {
    CallKey key;
    std::size_t index;
    bool used;
  };
  // Fibonacci hashing of the fields (the sizes differ in few low bits): the product's top bits.
  std::size_t home(const CallKey& k) const {
    const std::uint64_t h =
        (k.numel ^ (k.out_numel << 7) ^ (std::uint64_t{k.comm} << 40) ^
         (static_cast<std::uint64_t>(k.kind) << 48) ^ (static_cast<std::uint64_t>(k.dtype) << 56)) *
        0x9E3779B97F4A7C15ULL;
    return static_cast<std::size_t>(h >> shift_);
  }
  std::vector<Slot> slots_;  // 2^(64 - shift_) slots, at most a quarter used
  std::size_t mask_ = 0;
  unsigned shift_ = 64;
  std::size_t used_ = 0;
};

/// compile()'s scratch, kept by the workspace.
struct CompileScratch {
  SeenCalls seen;
  std::vector<std::uint32_t> compute_ops;
};

/// Costs every op of the lowered schedule for the timing role (graph.max_slots) into `p` (its
/// arrays reused). Errors: a cost the models cannot give (every one is reported).
Diagnostics compile(const Schedule& s, const ScheduleGraph& graph, const CostModel& cost,
                    Program& p, CompileScratch& scratch);

/// What the event loop measured.
struct LoopOutput {
  std::vector<OpTiming> ops;  ///< moved into the result (EngineWorkspace::recycle hands it back)
  /// A compute-stream op that found the stream idle: the idle time before it and the op it waited
  /// for last (kNone: none). Ascending op index (the compute stream runs in program order); every
  /// other op waited 0 (readers walk it with a cursor: no per-op array to clear or write).
  struct Wait {
    std::uint32_t op;
    std::uint32_t blocker;
    SimTime blocked_ns;
  };
  std::vector<Wait> waits;
  MemoryLedger ledger;  ///< one buffer per schedule buffer (same index); moved into the result
  /// The event loop's per-op "finished" flags (scratch). An enum, not a uint8_t: stores through a
  /// character type may alias every member, so the compiler would reload them all after each one.
  enum class Done : std::uint8_t { No, Yes };
  std::vector<Done> done;
};

/// Runs the event loop into `out` (its arrays reused), then fills the ledger with every Alloc/Free
/// in program order (record_memory in simulator.cc says why). Errors: a deadlock, time overflow,
/// ledger misuse.
Diagnostics run_event_loop(const Schedule& s, const Program& p, LoopOutput& out);

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

namespace zerosim {

/// What EngineWorkspace (engine.h) keeps from call to call.
struct EngineWorkspace::Impl {
  ScheduleGraph graph;  ///< simulate() without a graph lowers into it
  sim::Program program;
  sim::CompileScratch compile;
  sim::LoopOutput loop;
};

}  // namespace zerosim
