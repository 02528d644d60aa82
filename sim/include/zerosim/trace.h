// Trace and summary: what a run of one training step produced, in the form every front end shares
// (DESIGN.md "Formats"; style.md §4.3 TraceSink, §4.6 item 2).
//
// A Trace holds spans (one per op that ran: rank, stream, op index, name, category, start and
// duration in integer ns, and args such as bytes, numel, algbw, busbw), memory counters (live
// device bytes per rank and category over time), comm records (one per collective: kind, numel,
// dtype, bytes, time), per-rank named counters (device-wide memory, allocator pool statistics) and
// run metadata (DeepSpeed behaviour, backend, clock, versions, the schedule's digest). The
// simulator times one program for all ranks, so its spans carry rank = kAllRanks ("every traced
// rank"); the backends, which measure each rank, write the rank. A Summary holds the numbers a
// person or CI compares: step time, compute time, exposed communication, bytes per collective kind,
// peak memory per rank role, OOM. summarize() derives it from a trace alone, predicted or measured.
//
// Writers (all deterministic: equal inputs give byte-identical text; ts/dur come from int64 ns):
//   * zerosim trace JSON  {"format": "zerosim-trace", "version": 2, ...}, read back by
//     read_trace_json with validation (truncated text, wrong format or version, unknown names,
//     references to ranks or comm records that do not exist, times going backwards: one line each).
//     Version 1 files (no v2 fields) are read too; their new fields get the defaults below. The
//     reader streams the text (no JSON DOM of the whole file): linear time, memory near the
//     Trace's own size;
//   * Chrome Trace Event JSON for Perfetto (ecosystem.md §3): object form with "traceEvents" first,
//     ts/dur in µs with 3 decimals, one integer pid per traced rank ("rank N (role k, M ranks)"),
//     one tid per stream with thread_name/thread_sort_index, one `C` counter series per event name,
//     flows s/f (bp "e") from a bucket's last CopyToBucket to its first collective, never
//     displayTimeUnit, run metadata under "otherData";
//   * summary JSON {"format": "zerosim-summary", "version": 1, ...}.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "zerosim/diagnostic.h"
#include "zerosim/ir_types.h"
#include "zerosim/memory_types.h"
#include "zerosim/units.h"
#include "zerosim/version.h"  // kZerosimVersion, configured from CMake's project version

namespace zerosim {

inline constexpr const char* kTraceFormat = "zerosim-trace";
inline constexpr int kTraceVersion = 2;
inline constexpr const char* kSummaryFormat = "zerosim-summary";
inline constexpr int kSummaryVersion = 1;
/// Span/CommRecord rank meaning "every traced rank" (the simulator's one timing).
inline constexpr std::uint32_t kAllRanks = 0xFFFFFFFFu;
/// The largest world a trace or collective log may name (ranks 0..2^24-1): the largest cluster
/// zerosim simulates (the CLI's --gpus bound), so every trace it writes reads back. A rank or world
/// read from a file is refused above it: a rank of 4294967294 in one log line made `zerosim
/// check` allocate 100 GB (found by a hostile-input pass); check now keeps a sequence only for
/// the ranks an entry names, so a large world costs nothing by itself.
inline constexpr std::uint32_t kMaxTracedWorld = 1u << 24;
/// Span::issue_ns when the producer did not record a host issue time.
inline constexpr SimTime kNoTime = -1;
/// TraceMeta::clock values: simulated time, the host's steady clock, CUDA events.
inline constexpr const char* kClockNames[] = {"simulated", "host_steady", "cuda_events"};
/// Named counter of live host + pinned bytes (summarize() takes its maximum as the host peak).
inline constexpr const char* kHostBytesCounter = "host_bytes";

/// TraceMeta::schedule_digest's schemes, its prefix before 16 lowercase hex digits: the current one
/// (schedule_digest(), zerosim/schedule_digest.h: without the model's name and the notes) and the
/// one traces carried before it, which hashed those too (a param list named by a relative and by an
/// absolute path gave two digests). `zerosim check` compares digests of one scheme only.
inline constexpr const char* kScheduleDigestScheme = "fnv1a64-v2:";
inline constexpr const char* kScheduleDigestSchemeV1 = "fnv1a64:";

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
  // Version 2.
  std::string schedule_digest;      ///< schedule_digest() of the schedule that ran ("": unknown)
  std::string clock = "simulated";  ///< what produced the times: one of kClockNames
  std::string host;                 ///< host name (measured runs)
  std::string driver_version;       ///< GPU driver (measured runs)
  std::string cuda_version;
  std::string nccl_version;
  std::uint32_t warmup_steps = 0;  ///< steps run before the timed ones (not in the trace)
  std::uint32_t timed_steps = 1;   ///< steps traced (v1 files: `steps`)
};

/// Peak statistics the producer computed from its complete record: the simulator's ledger
/// analysis for every role, or a backend's allocator statistics (max_memory_allocated, with the
/// peak reset at the steady window's start). summarize() prefers them to the memory curve, which a
/// trace keeps for a few roles only.
struct RankPeaks {
  MemoryPeak device;     ///< whole run
  MemoryPeak steady;     ///< from the last step's start on
  Bytes host_bytes = 0;  ///< host + pinned
};

/// A traced rank (a Chrome-trace process): the representative rank of a role.
struct TraceRank {
  std::uint32_t rank = 0;
  std::uint32_t role = 0;
  std::uint64_t rank_count = 1;      ///< ranks the role stands for
  std::vector<MemorySample> memory;  ///< device memory counter, time order (several per ns allowed)
  std::optional<RankPeaks> peaks;    ///< v2: see RankPeaks
  std::optional<OomEvent> oom;       ///< v2: the first allocation above the device capacity
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
  // Version 2.
  Phase phase = Phase::Forward;  ///< Phase::Init spans end the init phase
  /// Host time the op was issued (kNoTime: not recorded), on the clock of start_ns: the CUDA
  /// backend's host call that enqueued it; the host backend's rank thread calling it, which is
  /// start_ns but for a collective (issued on arrival, started once every member has arrived).
  SimTime issue_ns = kNoTime;
  SimTime wait_ns = 0;                ///< idle time of its stream right before it started
  std::optional<Stream> wait_stream;  ///< the stream of what it waited for last (wait_ns > 0)
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
  // Version 2.
  std::uint32_t micro_step = 0;
  ReduceOp reduce_op = ReduceOp::None;
  std::uint32_t root = kNone;  ///< reduce destination / broadcast source rank (kNone: none)
};

/// One sample of a named counter.
struct CounterSample {
  SimTime t = 0;
  std::int64_t value = 0;
};

/// A named per-rank counter series (v2): device-wide memory (cudaMemGetInfo), allocator pool
/// statistics, live host bytes (kHostBytesCounter). Samples in time order. A name ending in
/// "_bytes" counts bytes, any other name a number of things. The producers write, per traced rank:
///   * host backend, from the rank's tracking allocator (every Alloc/Free of the schedule in issue
///     order: zerosim's own bytes), a sample before op 0, then one at each Alloc/Free that changes
///     the value, so the values and their number do not depend on timing (the CUDA backend
///     reports these figures as RankPeaks instead):
///       alloc.device_bytes       device bytes live (TraceRank::memory's total)
///       alloc.device_peak_bytes  the largest alloc.device_bytes so far (torch's
///                                max_memory_allocated); its last value is the rank's device peak
///       alloc.device_buffers     device buffers live
///       alloc.host_buffers       host and pinned buffers live
///       host_bytes               host and pinned bytes live (kHostBytesCounter: summarize()'s host
///                                peak when the rank carries no RankPeaks)
///   * CUDA backend, read from the CUDA runtime before op 0, at the first op of every later step
///     and after the last op (not per op: each reading is a driver call), at host steady-clock
///     time from the rank's origin event:
///       cuda.device_used_bytes   cudaMemGetInfo's total - free: device-wide (the context, NCCL's
///                                buffers, every process on the GPU, the pool's reservations)
///       cuda.pool_used_bytes     cudaMemPoolAttrUsedMemCurrent of the rank's memory pool
///       cuda.pool_reserved_bytes cudaMemPoolAttrReservedMemCurrent (what the pool holds from the
///                                driver, freed blocks included)
struct TraceCounter {
  std::uint32_t rank = 0;  ///< a traced rank (or kAllRanks)
  std::string name;        ///< [a-z0-9_.]+, unique per rank
  std::vector<CounterSample> samples;
};

struct Trace {
  TraceMeta meta;
  std::vector<TraceRank> ranks;        ///< ascending rank
  std::vector<Span> spans;             ///< by start time, then op index
  std::vector<CommRecord> comms;       ///< issue order
  std::vector<TraceCounter> counters;  ///< v2: by rank, then name
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
  /// Bytes each rank sends in this step's collectives (ring formulas, init excluded; the largest
  /// over ranks): zerosim's one traffic definition, the same in plan, simulate and the README.
  Bytes bytes_sent = 0;
};

/// Traffic of one collective kind over the whole run, per rank.
struct CommKindSummary {
  CollectiveKind kind = CollectiveKind::AllReduce;
  std::uint64_t calls = 0;
  Bytes bytes = 0;           ///< Σ S
  Bytes bytes_sent = 0;      ///< per rank (ring; the largest rank's Σ over calls)
  Bytes bytes_received = 0;  ///< per rank (ring; the largest rank's Σ over calls)
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
  Bytes init_bytes_sent = 0;  ///< bytes each rank sends in the init phase (largest over ranks)
  std::vector<CommKindSummary> comm;   ///< kinds with at least one call, enum order
  std::vector<RolePeakSummary> peaks;  ///< every role, role order
  std::uint32_t peak_role = 0;  ///< index into peaks: the largest device peak (lowest on ties)
  std::uint32_t steady_peak_role = 0;  ///< index into peaks: the largest steady peak
  SimTime steady_from_ns = 0;          ///< start of the steady-state window: the last step's start
  std::optional<OomEvent> oom;         ///< earliest OOM (lowest role on ties)
  std::uint32_t oom_rank = 0;          ///< representative rank of the OOM's role
  std::uint64_t oom_ranks = 0;         ///< ranks whose role runs out of memory
};

/// The summary of a trace, from the trace alone (predicted or measured alike). Steps: Phase::Init
/// spans end the init phase; step s runs from the end of step s-1 to its last span's end; compute
/// is forward + backward + recompute time; exposed communication is the compute stream running
/// collectives plus its waits on the reduce/gather streams (Span::wait_ns, wait_stream), exposed
/// offload its waits on h2d/d2h/host. Traffic sums the comm records per kind. Peaks per role come
/// from TraceRank::peaks when present, else from the memory curve (steady window: the state at the
/// last step's start and every later sample) and the kHostBytesCounter counter; OOM is
/// TraceRank::oom. A trace that times ranks separately (rank != kAllRanks) is summarised per rank,
/// and each number is the largest over ranks; a role's peak is its largest rank's. O(spans + comms
/// + samples).
Summary summarize(const Trace& trace);

/// summarize() one record at a time, for producers that would rather not build a Trace (the
/// simulator without a recorded trace feeds its ops through one reused Span). Spans and comm
/// records in any order; then steady_from_ns() if needed; then the ranks; then finish().
/// The fields of a span that summarize() reads, its category reduced to the two tests the summary
/// makes (a compute kind; a collective): a producer that knows op kinds (the simulator) adds its
/// spans without building category names. add(const Span&) reduces a span to this.
struct SpanTiming {
  std::uint32_t rank = kAllRanks;
  Stream stream = Stream::Compute;
  bool compute = false;     ///< category forward, backward or recompute
  bool collective = false;  ///< category collective
  SimTime start_ns = 0;
  SimTime dur_ns = 0;
  std::uint32_t step = 0;
  Phase phase = Phase::Forward;
  SimTime wait_ns = 0;
  std::optional<Stream> wait_stream;
};

/// The fields of a comm record that summarize() reads (traffic per kind and per step), so that a
/// producer that knows them (the simulator) adds its calls without building the record's other
/// fields (the algorithm's name, bandwidths, the root). add(const CommRecord&) reduces a record to
/// this.
struct CommTiming {
  std::uint32_t rank = kAllRanks;
  CollectiveKind kind = CollectiveKind::AllReduce;
  Phase phase = Phase::Backward;
  std::uint32_t step = 0;
  Bytes bytes = 0;
  Bytes bytes_sent = 0;
  Bytes bytes_received = 0;
  SimTime dur_ns = 0;
  /// Reduce/broadcast: the root as a rank (kNone: none) and the communicator's size. A call
  /// recorded once for every rank (kAllRanks) carries the busiest rank's bytes; the ends of the
  /// chain (ring_plan.h) send or receive nothing, which the per-rank largest must not count.
  std::uint32_t root = kNone;
  std::uint32_t group_size = 1;
};

class SummaryBuilder {
 public:
  explicit SummaryBuilder(const TraceMeta& meta);
  ~SummaryBuilder();
  SummaryBuilder(const SummaryBuilder&) = delete;
  SummaryBuilder& operator=(const SummaryBuilder&) = delete;
  void add(const Span& span);
  void add(const SpanTiming& span);
  /// Many spans at once (the simulator's ops, in chunks): one call, not one per span.
  void add(std::span<const SpanTiming> spans);
  void add(const CommRecord& comm);
  void add(std::span<const CommTiming> comms);
  /// The steady window's start (the last step's start); closes the time part (no more spans).
  SimTime steady_from_ns();
  /// A rank and the counters (any ranks) its host peak may come from.
  void add(const TraceRank& rank, const std::vector<TraceCounter>& counters);
  Summary finish();

 private:
  struct State;
  void add_idle_ends(const CommTiming& c, std::size_t slot);
  void subtract_idle_ends();
  std::unique_ptr<State> state_;
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

/// The speed of the steady (last simulated) step (time_model.h step_speed computes it).
struct StepSpeed {
  SimTime step_ns = 0;
  double model_flops_per_gpu = 0;  ///< forward + backward FLOPs of the step, recompute excluded
  double mfu = 0;                  ///< model FLOPs / (step time × dense peak)
  double tokens_per_step = 0;      ///< all GPUs; 0 when the GEMM shape is unknown
  double tokens_per_s = 0;         ///< 0 when unknown
};

/// Writes the summary JSON; with `speed` (simulate's), also its "speed" object: the steady step's
/// tokens/s, model FLOPs and MFU, as simulate's table prints them.
void write_summary_json(const Summary& summary, std::ostream& out,
                        const StepSpeed* speed = nullptr);

/// "12.345": integer nanoseconds as microseconds with exactly 3 decimals (exact, no rounding).
std::string format_us(SimTime ns);

}  // namespace zerosim
