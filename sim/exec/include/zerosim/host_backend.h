// The host backend: every rank of a schedule is a thread of this process, executing its view of
// the schedule through the executor (executor.h) on a HostDevice.
//
// Modes:
//   * count-only (`--no-data`): every op is issued and every
//     Alloc/Free goes through the rank's tracking allocator, nothing is backed by memory, and every
//     collective is a real rendezvous of its communicator's ranks — each rank arrives with its own
//     call, the calls must agree (kind, counts, dtype, reduce op, root, in the same launch order on
//     every rank), and each rank's bytes sent and received are counted from the ring algorithm's
//     chunk plan (ring_plan.h), the same plan the data path moves bytes with. A rank's ops run in
//     program order on its thread, which satisfies every dependency, Sync gate and communicator
//     order of the graph. So a 70B model at 64 ranks is checked for memory, traffic and collective
//     order on a laptop.
//   * data mode (HostOptions::data): the same walk and counting, and the buffers are real
//     allocations holding data, every data op and collective runs on its resolved operands, the
//     model is replaced by stand-ins and the optimizer is AdamW with DeepSpeed's loss scaling
//     (host_data.h). A schedule that does not carry an operand data mode needs is refused before
//     any rank starts (data_mode_refusal: the op index, its label and the operand).
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

/// Data mode's stand-ins and hyper-parameters (what a real model and ds_config would give).
struct DataOptions {
  std::uint64_t seed = 1;  ///< synthetic gradients and initial weights
  /// The stand-in backward's gradient: synthetic_grad(...) (in [-1, 1)) rounded to a multiple of
  /// 2^-quantum_bits when quantum_bits > 0 (so sums of a few of them are exact in 16 bits), times
  /// grad_scale and the loss scale.
  std::uint32_t quantum_bits = 0;
  double grad_scale = 1.0 / 4096;
  double initial_loss_scale = 65536;  ///< fp16: DeepSpeed's 2^initial_scale_power (16)
  double gradient_clipping = 0;       ///< ds_config gradient_clipping (0: off)
  /// AdamW (torch.optim.AdamW's defaults but weight decay; training_math.h adamw_step).
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.01f;
  /// Steps whose backward produces an inf (rank 0, the first gradient of micro-step 0): the
  /// schedule's --overflow-steps, so the data overflows exactly where the schedule skips.
  std::vector<std::uint32_t> overflow_steps;
  /// Every rank's buffers together (0: no cap); the ranks' page caches get what the buffers'
  /// peaks leave under it (data_check.h page_cache_limit).
  Bytes memory_cap = Bytes{16} << 30;
  bool keep_buffers = false;  ///< HostRankResult::buffers (tests)
};

struct HostOptions {
  /// Data mode: real buffers, real ring collectives, real numerics (see the file comment).
  bool data = false;
  DataOptions data_options;
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
  /// Data mode with DataOptions::keep_buffers: every buffer's bytes at the end (empty: not live).
  std::vector<std::vector<unsigned char>> buffers;
  double loss_scale = 1;            ///< data mode: the loss scale after the last step
  std::uint64_t skipped_steps = 0;  ///< data mode: steps the overflow check skipped
};

struct HostRun {
  std::vector<HostRankResult> ranks;  ///< every rank, ascending
  std::int64_t wall_ns = 0;           ///< host steady clock, the whole run
  Trace trace;                        ///< measured trace (meta.backend = "host")
};

/// Data mode only: why `s` cannot run with real data (the first op that lacks an operand or reads
/// what nothing wrote, naming the op index, its label and the operand; or more memory than
/// DataOptions::memory_cap), nullopt when it can. run_host refuses with it before any rank starts.
std::optional<Diagnostic> data_mode_refusal(const Schedule& s, const HostOptions& options);

/// The most ranks the host backend runs: one thread each. At 8192 a toy model's count-only run
/// takes about 3 s on 2 cores; at 16384 its ranks could not all reach the first collective within
/// the stall timeout, and the run failed after a minute as "stalled".
inline constexpr std::uint32_t kMaxHostRanks = 8192;

/// Runs every rank of `s` (lowered as `g`). Refuses more than kMaxHostRanks ranks up front. Errors:
/// data mode requested, a rank's failure, a stall, mismatched collectives — each naming the rank,
/// the op and the time.
Result<HostRun> run_host(const Schedule& s, const ScheduleGraph& g, const HostOptions& options);

/// Writes the measured collective log: the same JSON-lines format as `zerosim schedule
/// --collectives-out` (scenarios/README.md "Collective log"), every rank in ascending order, each
/// rank's collectives in the order it executed them.
void write_measured_collective_log(const Schedule& s, const HostRun& run, std::ostream& out);

}  // namespace zerosim::exec
