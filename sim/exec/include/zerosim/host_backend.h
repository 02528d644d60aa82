// The host backend: every rank of a schedule is a thread of this process, executing its view of
// the schedule through the executor (executor.h) on a HostDevice.
//
// Modes:
//   * count-only (`--no-data`, the only mode of this version): every op is issued and every
//     Alloc/Free goes through the rank's tracking allocator, nothing is backed by memory, and every
//     collective is a real rendezvous of its communicator's ranks — each rank arrives with its own
//     call, the calls must agree (kind, counts, dtype, reduce op, root, in the same launch order on
//     every rank), and each rank's bytes sent and received are counted from the ring algorithm's
//     chunk plan (ring_plan.h), the same plan the data path moves bytes with. A rank's ops run in
//     program order on its thread, which satisfies every dependency, Sync gate and communicator
//     order of the graph. So a 70B model at 64 ranks is checked for memory, traffic and collective
//     order on a laptop.
//   * data mode (real buffers, real ring collectives, real numerics) needs the schedule to name
//     every op's source and destination region (Schedule IR v2 operands): refused until it does.
// Faults end the run within a bounded time: a rank that fails (an error from its device or its
// allocator, e.g. over --host-memory-limit) aborts the world, and every rank waiting in a
// collective returns; a collective whose ranks do not all arrive within the stall timeout ends
// the run with a report naming the rank, the op, the time and the ranks that never came.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zerosim/diagnostic.h"
#include "zerosim/executor.h"
#include "zerosim/schedule.h"
#include "zerosim/schedule_graph.h"
#include "zerosim/trace.h"

namespace zerosim::exec {

struct HostOptions {
  bool data = false;       ///< data mode (not yet available: see the file comment)
  Bytes memory_limit = 0;  ///< device bytes per rank; 0: no limit
  std::chrono::milliseconds stall_timeout{60000};
  /// Ranks whose op spans the measured trace carries (empty: the representative of every role).
  std::vector<std::uint32_t> trace_ranks;
  /// Fault injection for tests: this rank fails at this op (kNone: never) ...
  std::uint32_t fail_rank = kNone, fail_op = kNone;
  /// ... or stops answering at this op (sleeps past the stall timeout).
  std::uint32_t stall_rank = kNone, stall_op = kNone;
};

/// One collective as one rank executed it (a line of the measured collective log).
struct ExecutedCollective {
  std::uint32_t op = 0;
  Bytes bytes_sent = 0;
  Bytes bytes_received = 0;
};

struct HostRankResult {
  std::uint32_t rank = 0;
  std::uint32_t role = 0;
  MemoryCounters memory;
  std::vector<ExecutedCollective> collectives;  ///< launch order
  std::array<Bytes, kCollectiveKindCount> sent_by_kind{}, received_by_kind{};
};

struct HostRun {
  std::vector<HostRankResult> ranks;  ///< every rank, ascending
  std::int64_t wall_ns = 0;           ///< host steady clock, the whole run
  Trace trace;                        ///< measured trace (meta.backend = "host")
};

/// Runs every rank of `s` (lowered as `g`). Errors: data mode requested, a rank's failure, a stall,
/// mismatched collectives — each naming the rank, the op and the time.
Result<HostRun> run_host(const Schedule& s, const ScheduleGraph& g, const HostOptions& options);

/// Writes the measured collective log: the same JSON-lines format as `zerosim schedule
/// --collectives-out` (scenarios/README.md "Collective log"), every rank in ascending order, each
/// rank's collectives in the order it executed them.
void write_measured_collective_log(const Schedule& s, const HostRun& run, std::ostream& out);

}  // namespace zerosim::exec
