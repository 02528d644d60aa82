// ScheduleGraph: the one lowering of a Schedule (schedule.h) into what anything that runs it needs
// — the discrete-event engine, the host backend, the CUDA backend — and the one well-formedness
// check of the IR. A schedule that lowers is one every consumer can run; a schedule that does not
// lower is reported with every problem at once, each as "source: /ops/12/deps/0: expected ...,
// got ..." (pointers into the schedule JSON, so a file's reader and a builder's bug read alike).
//
// The ordering rules of a schedule, in one place (engine.h states them as a timing model):
//   * lanes: the ops of one stream run one at a time in program order;
//   * deps: an op starts after every op in its `deps` (earlier op indices) has finished;
//   * Sync gates: a Sync starts once every earlier op (all streams) has finished, and no later op
//     starts before the latest Sync before it (`gate`): cudaDeviceSynchronize blocks the host;
//   * communicator order: collectives of one communicator run one at a time in launch (program)
//     order, whatever their streams (`prev_call`): NCCL makes every launch wait on the
//     communicator's internal device stream (src/enqueue.cc, ncclStrongStreamWaitStream);
//   * memory ops: Alloc/Free in issue (program) order, as the CUDA caching allocator sees them.
// An executor walks its lanes honouring deps, gates and prev_call; a simulator times them.
//
// Cost: O(ops + deps + buffers + roles × slots + rank ranges × log) time and memory; no rank loop.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "zerosim/diagnostic.h"
#include "zerosim/schedule.h"

namespace zerosim {

struct ScheduleGraph {
  std::uint32_t op_count = 0;
  /// Op indices per stream (indexed by Stream), program order.
  std::array<std::vector<std::uint32_t>, kStreamCount> lanes;
  /// CSR of the cross-stream dependencies: op i waits on deps[dep_offsets[i] .. dep_offsets[i+1]).
  std::vector<std::uint32_t> dep_offsets;  ///< op_count + 1 entries
  std::vector<std::uint32_t> deps;
  /// Per op: the latest Sync before it (kNone: none). A Sync's own gate is the Sync before it.
  std::vector<std::uint32_t> gate;
  /// Per op: the previous collective on the same communicator (kNone: first, or not a collective).
  std::vector<std::uint32_t> prev_call;
  /// Alloc/Free op indices in issue order.
  std::vector<std::uint32_t> memory_ops;
  /// Collective op indices in launch order.
  std::vector<std::uint32_t> collectives;
  /// The timing role's slot values: the element-wise maximum over the roles (the slowest rank gates
  /// every collective; engine.h).
  std::vector<Elements> max_slots;

  std::span<const std::uint32_t> deps_of(std::uint32_t op) const {
    return {deps.data() + dep_offsets[op], deps.data() + dep_offsets[op + 1]};
  }
  /// Bytes the graph holds (benchmarks show it does not grow with ranks).
  std::size_t footprint_bytes() const;
};

/// The communicator a collective runs on, as the ordering rules see it: its Schedule::comms index.
std::uint32_t communicator_of(const Op& op);

/// Checks the schedule and lowers it. Rules (every problem is reported, `source` names the file or
/// the builder): meta (world, steps, micro-steps >= 1); rank roles (one slot value per slot name,
/// sorted disjoint ranges starting at the representative, covering 0..world-1 exactly once);
/// buffers (slot in range; the largest role's sizes sum to at most 2^64-1 bytes); ops (buffer,
/// slot and stream in range, Alloc/Free name a buffer, deps point backwards, step and micro-step
/// within meta); communicators (comms[0] the data-parallel world, each one's groups tiling
/// first..world-1); collectives (a known communicator, a reduce op exactly for the reducing kinds,
/// a root index in the group exactly for reduce and broadcast); lifetimes (no double Alloc, no
/// Free of a dead buffer, only persistent buffers live at the end); and, with LayoutCheck::Replan
/// (what build_schedule and a file must pass: executors read these), the operands — every region,
/// list, flush plan and optimizer update against its buffers for every role — and the tensor
/// table's layout against plan_partition of the table. Those sweeps cost a partition plan and
/// O(roles x operands), so the simulator, which reads neither, lowers schedules that
/// build_schedule or the reader have already checked with LayoutCheck::References (structure and
/// ordering only).
enum class LayoutCheck : std::uint8_t { Replan, References };
Result<ScheduleGraph> lower_schedule(const Schedule& s, const std::string& source = "schedule",
                                     LayoutCheck layout = LayoutCheck::Replan);
/// The same into `out`, whose vectors keep their storage (simulate()'s workspace, engine.h, lowers
/// every schedule into one graph): `out` is the lowering when no error is returned, unspecified
/// otherwise.
Diagnostics lower_schedule_into(const Schedule& s, ScheduleGraph& out,
                                const std::string& source = "schedule",
                                LayoutCheck layout = LayoutCheck::Replan);

}  // namespace zerosim
