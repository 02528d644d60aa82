// Trace and summary: what a run of one training step produced, in the form every front end shares
// (DESIGN.md "Formats"; style.md §4.3 TraceSink, §4.6 item 2).
//
// A Trace holds spans (one per op that ran: rank, stream, op index, name, category, start and
// duration in integer ns, and args such as bytes, numel, algbw, busbw), memory counters (live
// device bytes per rank and category over time), comm records (one per collective: kind, numel,
// dtype, bytes, time) and run metadata (DeepSpeed behaviour, backend, GPU, zerosim version). The
// simulator times one program for all ranks, so its spans carry rank = kAllRanks ("every traced
// rank"); the backends, which measure each rank, write the rank. A Summary holds the numbers a
// person or CI compares: step time, compute time, exposed communication, bytes per collective kind,
// peak memory per rank role, OOM.
//
// Writers (all deterministic: equal inputs give byte-identical text; ts/dur come from int64 ns):
//   * zerosim trace JSON  {"format": "zerosim-trace", "version": 1, ...}, read back by
//     read_trace_json with validation (truncated text, wrong format or version, unknown names,
//     references to ranks or comm records that do not exist, times going backwards: one line each);
//   * Chrome Trace Event JSON for Perfetto (ecosystem.md §3): object form with "traceEvents" first,
//     ts/dur in µs with 3 decimals, one integer pid per traced rank ("rank N (role k, M ranks)"),
//     one tid per stream with thread_name/thread_sort_index, one `C` counter series per event name,
//     flows s/f (bp "e") from a bucket's last CopyToBucket to its first collective, never
//     displayTimeUnit, run metadata under "otherData";
//   * summary JSON {"format": "zerosim-summary", "version": 1, ...}.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "zerosim/diagnostic.h"
#include "zerosim/ir_types.h"
#include "zerosim/memory_types.h"
#include "zerosim/units.h"
#include "zerosim/version.h"  // kZerosimVersion, configured from CMake's project version

namespace zerosim {

inline constexpr const char* kTraceFormat = "zerosim-trace";
inline constexpr int kTraceVersion = 1;
inline constexpr const char* kSummaryFormat = "zerosim-summary";
inline constexpr int kSummaryVersion = 1;
/// Span/CommRecord rank meaning "every traced rank" (the simulator's one timing).
inline constexpr std::uint32_t kAllRanks = 0xFFFFFFFFu;

/// Run metadata (written as "meta" in the trace, "otherData" in the Chrome trace).
struct TraceMeta {
  std::string backend = "simulator";  ///< "simulator", "host", "cuda"
  std::string zerosim_version = kZerosimVersion;
  std::string deepspeed_version;   ///< behaviour reproduced: "edaa722" or "0.14.4"
  std::string mode = "deepspeed";  ///< "deepspeed" or "paper"
  std::string model;
  std::string optimizer;  ///< wrapper DeepSpeed runs
  std::string gpu;        ///< GPU catalog name
  int stage = 0;
  std::uint32_t world = 1;
  std::uint32_t nodes = 1;
  std::uint32_t gpus_per_node = 1;
  std::uint32_t steps = 1;
  std::uint32_t grad_accum = 1;
  Bytes device_capacity = 0;       ///< bytes per GPU the OOM check used (0: no limit)
  std::vector<std::string> notes;  ///< cost-model parameters and assumptions, one line each
};

/// A traced rank (a Chrome-trace process): the representative rank of a role.
struct TraceRank {
  std::uint32_t rank = 0;
  std::uint32_t role = 0;
  std::uint64_t rank_count = 1;      ///< ranks the role stands for
  std::vector<MemorySample> memory;  ///< device memory counter, time order (several per ns allowed)
};

/// One op that ran.
struct Span {
  std::uint32_t rank = kAllRanks;  ///< kAllRanks: every traced rank (the simulator's timing)
  Stream stream = Stream::Compute;
  std::uint32_t op = 0;  ///< index into the schedule's ops
  std::string name;      ///< the op's label
  std::string category;  ///< op kind name ("forward", "collective", ...)
  SimTime start_ns = 0;
  SimTime dur_ns = 0;
  std::uint32_t step = 0;
  std::uint32_t micro_step = 0;
  std::uint32_t layer = kNone;   ///< Forward/Backward/Recompute
  std::uint32_t bucket = kNone;  ///< flush number (CopyToBucket, Collective)
  std::uint32_t comm = kNone;    ///< index into Trace::comms (collectives)
  Bytes bytes = 0;               ///< bytes read + written, copied, or the collective's S
  Elements numel = 0;            ///< elements the op touches (collective: input per rank)
  double flops = 0;              ///< compute ops
};

/// One collective call.
struct CommRecord {
  std::uint32_t op = 0;  ///< index into the schedule's ops
  std::uint32_t rank = kAllRanks;
  CollectiveKind kind = CollectiveKind::AllReduce;
  Phase phase = Phase::Backward;
  std::uint32_t step = 0;
  std::uint32_t bucket = kNone;
  Elements numel = 0;      ///< input elements per rank
  Elements out_numel = 0;  ///< output elements per rank
  DType dtype = DType::Float16;
  std::uint32_t group_size = 1;
  Bytes bytes = 0;           ///< nccl-tests' S (the algbw numerator)
  Bytes bytes_sent = 0;      ///< per rank, ring (busiest rank for broadcast/reduce)
  Bytes bytes_received = 0;  ///< per rank, ring (busiest rank for broadcast/reduce)
  SimTime start_ns = 0;
  SimTime dur_ns = 0;
  double algbw_gbps = 0;  ///< S / t, GB/s (1e9 B/s); 0 when t = 0
  double busbw_gbps = 0;  ///< algbw × nccl-tests' factor
  std::string algorithm;  ///< "ring", "tree", "calibrated", "none"
};

struct Trace {
  TraceMeta meta;
  std::vector<TraceRank> ranks;   ///< ascending rank
  std::vector<Span> spans;        ///< by start time, then op index
  std::vector<CommRecord> comms;  ///< issue order
};

/// Per optimizer step timing. Step s runs from the end of step s-1 (step 0: the end of the init
/// phase) to the end of its last op.
struct StepSummary {
  std::uint32_t step = 0;
  SimTime start_ns = 0;
  SimTime end_ns = 0;
  SimTime compute_ns = 0;       ///< forward + backward + recompute time
  SimTime exposed_comm_ns = 0;  ///< compute stream running collectives or waiting on comm streams
  SimTime exposed_offload_ns = 0;  ///< compute stream waiting on H2D/D2H/host work
};

/// Traffic of one collective kind over the whole run, per rank.
struct CommKindSummary {
  CollectiveKind kind = CollectiveKind::AllReduce;
  std::uint64_t calls = 0;
  Bytes bytes = 0;           ///< Σ S
  Bytes bytes_sent = 0;      ///< per rank (ring)
  Bytes bytes_received = 0;  ///< per rank (ring)
  SimTime time_ns = 0;       ///< Σ durations
};

/// Peak device memory of one role.
struct RolePeakSummary {
  std::uint32_t role = 0;
  std::uint32_t rank = 0;  ///< representative
  std::uint64_t rank_count = 1;
  MemoryPeak device;  ///< whole run (init included)
  MemoryPeak steady;  ///< the last step (see Summary::steady_from_ns)
  Bytes host_peak = 0;
};

struct Summary {
  TraceMeta meta;
  SimTime init_ns = 0;   ///< end of the init phase (flat buffers, broadcast)
  SimTime total_ns = 0;  ///< end of the last op
  std::vector<StepSummary> steps;
  SimTime compute_ns = 0;       ///< Σ over steps
  SimTime exposed_comm_ns = 0;  ///< Σ over steps
  SimTime exposed_offload_ns = 0;
  std::vector<CommKindSummary> comm;   ///< kinds with at least one call, enum order
  std::vector<RolePeakSummary> peaks;  ///< every role, role order
  std::uint32_t peak_role = 0;         ///< role with the largest device peak (lowest index on ties)
  std::uint32_t steady_peak_role = 0;  ///< role with the largest steady peak
  SimTime steady_from_ns = 0;          ///< start of the steady-state window: the last step's start
  std::optional<OomEvent> oom;         ///< earliest OOM (lowest role on ties)
  std::uint32_t oom_rank = 0;          ///< representative rank of the OOM's role
  std::uint64_t oom_ranks = 0;         ///< ranks whose role runs out of memory
};

/// Writes the zerosim trace JSON (one span/comm/sample per line).
void write_trace_json(const Trace& trace, std::ostream& out);
/// Parses zerosim trace JSON; every problem is a one-line Diagnostic naming `source` and the JSON
/// pointer. Never throws.
Result<Trace> read_trace_json(const std::string& text, const std::string& source);
/// Reads the file at `path` and parses it.
Result<Trace> read_trace_file(const std::string& path);

/// Writes Chrome Trace Event JSON. Spans with rank = kAllRanks are repeated under every traced
/// rank.
void write_chrome_trace(const Trace& trace, std::ostream& out);

/// Writes the summary JSON.
void write_summary_json(const Summary& summary, std::ostream& out);

/// "12.345": integer nanoseconds as microseconds with exactly 3 decimals (exact, no rounding).
std::string format_us(SimTime ns);

}  // namespace zerosim
