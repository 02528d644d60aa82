// Engine: the deterministic discrete-event simulator that runs a Schedule (schedule.h) and predicts
// the time of every op, the memory of every rank role, the traffic of every collective.
//
// Event model (deepspeed_zero.md §4.8, §12):
//   * six streams (Compute, Reduce, Gather, H2D, D2H, Host); the ops of one stream run one at a
//     time in program order; an op starts when its stream is free and every op in its `deps` has
//     finished;
//   * collectives of one communicator run one at a time in program (launch) order, whatever their
//     streams: NCCL makes every launch wait on the communicator's internal device stream
//     (src/enqueue.cc); so a gather-stream all-gather and a reduce-stream reduce-scatter of the
//     data-parallel group never overlap each other, only compute;
//   * Sync is cudaDeviceSynchronize: it starts once every earlier op (all streams) has finished,
//   and
//     no later op starts before it (the host thread is blocked until it returns);
//   * zero-cost ops (Alloc, Free, Marker, GradReady, Sync) finish when they start; among ops ready
//     at the same time the lowest program index starts first;
//   * timed ops complete in (int64 ns, seq) order, EventQueue's (event_queue.h): one pending
//     completion per stream, since a stream runs one op at a time.
// Memory events follow program order, as the CUDA caching allocator sees them (the host allocates
// and frees when it issues an op), each stamped with its op's start time raised to the previous
// memory event's stamp, so the memory curve's time axis is monotone.
// Collectives are rank-synchronous: every rank must arrive. All ranks run the same program and the
// engine times ONE "timing role" whose slot values are the element-wise maximum over the roles (the
// slowest rank gates every collective, and every rank then leaves together), so every role sees the
// same op times. Memory is then computed per role from those alloc/free times with the role's own
// buffer sizes (memory_ledger.h): simulation cost and memory grow with ops and buffers, not ranks.
//
// Cost models (documented defaults; every one is in EngineOptions and echoed into the trace notes):
//   * Forward/Backward/Recompute: max(GPU time, host time). GPU time = flops / (dense rate of the
//   LP
//     dtype × efficiency), the efficiency from the GPU generation's measured curve at the model's
//     hidden size, capped by the roofline of its GEMMs (time_model.h, docs/time_model.md), or
//     given (--efficiency). Host time = the op's share of the layer's kernel launches, plus one
//     module fetch + release hook per op in stage 3 (HostCosts);
//   * Copy, CopyToBucket: 2 × elements × dtype (read + write) / HBM bandwidth (host bandwidth on
//     the Host stream); WriteBack: elements × (master + LP dtype) / HBM (host on the Host stream);
//   * OptimizerStep (Adam): elements × 7 × master dtype — reads master weight, exp_avg, exp_avg_sq
//     and the master-dtype gradient, writes master weight, exp_avg, exp_avg_sq (28 B per fp32
//     element) — over HBM bandwidth, or over host_gbps (100 GB/s DDR default) on the Host stream;
//   * HostToDevice/DeviceToHost: elements × dtype / PCIe bandwidth;
//   * Collective: collective_cost (collective_model.h) with the cluster's nodes × gpus_per_node,
//     links from the GPU catalog (links_for_gpu: NVLS on NVSwitch Hopper/Blackwell nodes) or given,
//     optionally an nccl-tests calibration; plus the host's collective launch cost.
// Out of memory is a result: the simulation runs to the end and the summary names the earliest OOM
// (time, rank, buffer, category, bytes, live bytes) and how many ranks run out.
// Peaks: RoleMemory::device covers the whole run (init included: e.g. the flat LP buffer and the
// module's own parameters coexist while stage 1/2 flattens); RoleMemory::steady covers the last
// simulated step (Summary::steady_from_ns on), the planner's steady state when steps >= 2.
// Cost: O(ops + deps + buffers + roles × slots + Σ non-zero role sizes) time and memory, no rank
// loop; bench/simulate_bench.cc times one step of Llama-2-70B at 1024 and 65536 GPUs.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "zerosim/collective_model.h"
#include "zerosim/diagnostic.h"
#include "zerosim/event_queue.h"
#include "zerosim/gpu_catalog.h"
#include "zerosim/memory_ledger.h"
#include "zerosim/schedule.h"
#include "zerosim/schedule_graph.h"
#include "zerosim/time_model.h"
#include "zerosim/trace.h"
#include "zerosim/units.h"

namespace zerosim {

/// Host (DDR) bandwidth for the CPU optimizer step and host copies, GB/s: an assumption of about
/// one socket of DDR5 (8 channels × 4800 MT/s × 8 B = 307 GB/s peak, a third achieved by an
/// unvectorised-friendly Adam loop).
inline constexpr double kDefaultHostGbps = 100.0;
/// nccl-tests all-reduce busbw over NVLink as a fraction of the catalog's one-way NVLink figure
/// (about 360 of 450 GB/s on an 8 × H100 SXM node; collective_model.h LinkParams defaults).
inline constexpr double kDefaultIntraBusEfficiency = 0.8;
/// NVLS all-reduce algbw as a fraction of the one-way NVLink figure on Hopper: NCCL's maintainer
/// gives a peak busBw of ~480 GB/s, algbw ~275 GB/s, on 8 × H100 (NVIDIA/nccl-tests#212), and
/// 275 / 450 = 0.61. Blackwell scales it by NCCL's nvlsEfficiency ratio 0.74 / 0.85
/// (src/graph/tuning.cc) for lack of a published measurement.
inline constexpr double kHopperNvlsAlgbwFraction = 0.61;
inline constexpr double kBlackwellNvlsAlgbwFraction = 0.61 * 0.74 / 0.85;
/// Bytes per master element an Adam step touches: reads master, exp_avg, exp_avg_sq and the
/// gradient, writes master, exp_avg, exp_avg_sq.
inline constexpr std::uint64_t kAdamTouchesPerElement = 7;

struct EngineOptions {
  /// Fraction of the dense rate compute achieves, in (0, 1]; nullopt: the generation's curve at
  /// `gemm` (compute_rate, time_model.h).
  std::optional<double> compute_efficiency;
  /// A calibrated efficiency curve (--calibration) in place of the generation's.
  std::optional<CalibratedCompute> calibrated_compute;
  /// The model's GEMM shape (hidden size, tokens per micro-batch); zeros: the schedule meta's.
  GemmShape gemm;
  /// Host costs (kernel launches, stage-3 hooks, collective launches).
  HostCosts host;
  double host_gbps = kDefaultHostGbps;  ///< > 0
  /// Interconnect; nullopt: links_for_gpu(gpu).
  std::optional<LinkParams> links;
  /// Where the GPU's link figures came from, for the notes: empty = the GPU catalog's defaults;
  /// else what the caller replaced ("given: --network-gbps 25, --nics-per-node 4").
  std::string links_basis;
  /// nccl-tests calibration (`--nccl-tests FILE`); empty: the model.
  CalibratedLinks calibration;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Auto;
  /// Device bytes per GPU for the OOM check; nullopt: the GPU's memory_bytes; 0: no limit.
  std::optional<Bytes> device_capacity;
  /// Build the Trace (spans, comm records, memory counters). Off: only timings, memory, summary.
  bool record_trace = true;
  /// Roles whose memory counters the trace carries: role 0, the peak role, then the lowest other
  /// roles, up to this many (spans are shared by all roles).
  std::uint32_t max_trace_roles = 4;
};

/// Links derived from a GPU catalog entry: intra_gbps = intra_node_gbps × 0.8, inter_gbps =
/// network_gbps, NCCL's default latencies; on NVSwitch Hopper/Blackwell nodes NVLS all-reduce at
/// intra_node_gbps × 0.61 (Hopper) or × 0.53 (Blackwell) algbw.
LinkParams links_for_gpu(const GpuSpec& gpu);

/// The cost of one op for a given element count (the timing role's, for slot ops).
struct OpCost {
  SimTime duration_ns = 0;
  Bytes bytes = 0;                           ///< bytes touched/moved (collective: S)
  std::optional<CollectiveCost> collective;  ///< collectives only
};

/// Per-op cost model for one GPU and one schedule's metadata (dtypes, cluster shape).
class CostModel {
 public:
  /// Checks the options (efficiency in (0,1], bandwidths > 0, a dense rate for the LP dtype).
  static Result<CostModel> make(const GpuSpec& gpu, const ScheduleMeta& meta,
                                const EngineOptions& options);
  /// Cost of `op` touching `elements` elements (ignored by compute and collective ops); `comm` is
  /// the communicator a collective runs on (Schedule::comms[op.comm]; ignored by other ops).
  /// Errors: a collective whose group does not fit the cluster shape, cost-model overflow.
  Result<OpCost> cost(const Op& op, Elements elements, const CommGroup& comm) const;
  /// The same without diagnostics (the engine's fast path): false exactly when cost() fails.
  bool try_cost(const Op& op, Elements elements, const CommGroup& comm, OpCost& out) const;
  /// Dense FLOP/s of forward/backward (rate × efficiency).
  double flops_per_s() const { return flops_per_s_; }
  /// The rate and why (default curve, fallback or given).
  const ComputeRate& rate() const { return rate_; }
  const HostCosts& host() const { return host_; }

 private:
  CostModel() = default;
  SimTime bytes_time(Bytes bytes, double gbps) const;
  Result<OpCost> collective(const Op& op, const CommGroup& comm) const;
  double flops_per_s_ = 0;
  ComputeRate rate_;
  HostCosts host_;
  double hbm_gbps_ = 0, pcie_gbps_ = 0, host_gbps_ = 0;
  DType master_ = DType::Float32;
  std::uint32_t world_ = 1, nodes_ = 1, gpus_per_node_ = 1;
  LinkParams links_;
  CalibratedLinks calibration_;
  CollectiveAlgorithm algorithm_ = CollectiveAlgorithm::Auto;
};

/// When one op ran (the timing role's; every role shares it).
struct OpTiming {
  SimTime start_ns = 0;
  SimTime end_ns = 0;
};

/// What simulate() returns. A result destroyed on a thread whose EngineWorkspace::this_thread()
/// is alive hands its op times and ledger arrays to that workspace (EngineWorkspace::recycle), so
/// a caller that simulates, reads and drops results over and over allocates no fresh pages.
struct SimulationResult {
  SimulationResult() = default;
  SimulationResult(const SimulationResult&) = default;
  SimulationResult(SimulationResult&&) noexcept = default;
  SimulationResult& operator=(const SimulationResult&) = default;
  SimulationResult& operator=(SimulationResult&&) noexcept = default;
  ~SimulationResult();

  std::vector<OpTiming> ops;           ///< indexed like schedule.ops
  std::vector<Elements> timing_slots;  ///< the timing role's slot values (max over roles)
  /// One ledger buffer per schedule buffer (same index). Its buffers are unnamed (names live in the
  /// schedule; copying them cost a heap allocation per buffer per simulation).
  MemoryLedger ledger;
  std::vector<RoleMemory> memory;  ///< per role: peaks and first OOM
  Summary summary;
  Trace trace;  ///< empty unless options.record_trace
  /// Bytes held by this result's vectors (ops, ledger, memory, summary, trace): the benchmarks use
  /// it to show memory does not grow with ranks.
  std::size_t footprint_bytes() const;
};

/// The memory simulate() reuses from call to call: the lowered graph, the compiled program, the
/// event loop's per-op arrays and the results' arrays handed back by recycle() (this_thread()'s
/// also gets those of every result destroyed on its thread). Every array keeps
/// its storage, so repeated simulations of schedules of similar size allocate (almost) nothing and
/// fault in no fresh page: with glibc's default malloc settings an array of 128 KiB or more (a
/// step of Llama-2-70B has 16k ops) is mmap'ed, or trimmed off the heap top once freed, and every
/// call faulted it in again (bench/simulate_bench.cc's minflt_per_call shows it). The library does
/// not depend on mallopt for this.
/// simulate() without a workspace uses this_thread()'s, which lives until the thread exits (its
/// size: the largest schedule simulated on the thread, a few MiB for a 16k-op step; release()
/// frees it). One workspace serves one simulate() at a time: not thread-safe, not re-entrant.
class EngineWorkspace {
 public:
  EngineWorkspace();
  ~EngineWorkspace();
  EngineWorkspace(EngineWorkspace&&) noexcept;
  EngineWorkspace& operator=(EngineWorkspace&&) noexcept;
  EngineWorkspace(const EngineWorkspace&) = delete;
  EngineWorkspace& operator=(const EngineWorkspace&) = delete;

  /// The calling thread's workspace (what simulate() without one uses).
  static EngineWorkspace& this_thread();
  /// Hands back a result the caller is done with: the next simulate() refills its op times and its
  /// ledger's arrays instead of allocating new ones.
  void recycle(SimulationResult&& done);
  /// Frees every array (the next simulate() allocates them again).
  void release();
  /// Bytes the workspace holds.
  std::size_t footprint_bytes() const;

  struct Impl;  ///< simulator_internal.h

 private:
  friend Result<SimulationResult> simulate(const Schedule&, const GpuSpec&, const EngineOptions&,
                                           EngineWorkspace&);
  friend Result<SimulationResult> simulate(const Schedule&, const ScheduleGraph&, const GpuSpec&,
                                           const EngineOptions&, EngineWorkspace&);
  std::unique_ptr<Impl> impl_;
};

/// Runs the schedule. Errors (all Diagnostics, never a throw): a schedule that does not lower
/// (lower_schedule's rules, schedule_graph.h), bad options, a cost the models cannot give, a
/// deadlock (which op waits on which), time overflow. OOM is not an error. Uses
/// EngineWorkspace::this_thread().
Result<SimulationResult> simulate(const Schedule& schedule, const GpuSpec& gpu,
                                  const EngineOptions& options = {});
/// The same for a schedule already lowered (`graph` = lower_schedule(schedule)).
Result<SimulationResult> simulate(const Schedule& schedule, const ScheduleGraph& graph,
                                  const GpuSpec& gpu, const EngineOptions& options = {});
/// Both with a given workspace.
Result<SimulationResult> simulate(const Schedule& schedule, const GpuSpec& gpu,
                                  const EngineOptions& options, EngineWorkspace& workspace);
Result<SimulationResult> simulate(const Schedule& schedule, const ScheduleGraph& graph,
                                  const GpuSpec& gpu, const EngineOptions& options,
                                  EngineWorkspace& workspace);

/// The ledger simulate() fills, without timing anything: memory events follow program order
/// (simulator.cc, record_memory), so every peak's bytes, event and breakdown over the whole run
/// (RoleMemory::device, ::host) are the simulation's; only the stamps differ (all 0), so times and
/// the steady window are not. `graph` = lower_schedule(schedule). Errors: ledger misuse (a double
/// allocation or a free of a buffer not live), as simulate() reports it.
Result<MemoryLedger> memory_ledger(const Schedule& schedule, const ScheduleGraph& graph);

}  // namespace zerosim
