// The CUDA/NCCL backend (issue #10): one process per GPU runs its rank's view of the schedule
// through the executor (executor.h) on a CudaDevice: every buffer a real cudaMallocAsync
// allocation from a per-rank pool, every collective a real NCCL call with the schedule's counts,
// dtypes, reduce ops and communicators on the schedule's streams, copies and casts as kernels, the
// optimizer a fused AdamW kernel, compute ops as cuBLAS GEMMs of the model's shapes; CUDA events
// around every op. Single-GPU mode runs the schedule's ranks one at a time on one GPU with each
// collective replaced by a local stand-in (cuda_plan.h); its communication time is "model only".
//
// This header is plain C++: the CLI includes it whether or not the backend was built
// (backend_cuda/unavailable.cc answers run_cuda with "built without the CUDA backend").
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "zerosim/cuda_launch.h"
#include "zerosim/diagnostic.h"
#include "zerosim/executor.h"
#include "zerosim/host_backend.h"
#include "zerosim/schedule.h"
#include "zerosim/schedule_graph.h"
#include "zerosim/trace.h"

namespace zerosim::cuda {

/// Whether this zerosim was built with the CUDA backend (CUDA toolkit, cuBLAS and NCCL found).
bool cuda_backend_built();
/// One line: why not (empty when built).
std::string cuda_unavailable_reason();
/// In `zerosim` (which does not load cuBLAS or NCCL): the file name of the executable with the
/// backend, built beside it ("zerosim-cuda"), when this build has the backend; else empty. Empty in
/// zerosim-cuda itself. (The CLI finds it beside itself: cli/companion.h.)
std::string cuda_companion_name();

struct CudaOptions {
  bool single_gpu = false;           ///< run every rank (or `ranks`) one at a time on one GPU
  std::vector<std::uint32_t> ranks;  ///< single-GPU mode: the ranks to run (empty: all)
  std::chrono::milliseconds nccl_timeout{60000};  ///< ncclCommGetAsyncError polling deadline
  std::uint32_t warmup_steps = 1;                 ///< steps excluded from the step-time median
  exec::DataOptions data;  ///< seeds and AdamW hyper-parameters (host contract)
};

/// The three memory readings of one rank (ecosystem.md §5.1), reported separately.
struct CudaMemory {
  exec::MemoryCounters tracked;  ///< zerosim's bytes: what the prediction is compared with
  Bytes pool_used_high = 0;      ///< cudaMemPoolAttrUsedMemHigh of the rank's pool
  Bytes pool_reserved_high = 0;  ///< cudaMemPoolAttrReservedMemHigh
  /// cudaMemGetInfo's used bytes (total - free), device-wide: after the context, after the NCCL
  /// communicators, and the largest seen at an op boundary.
  Bytes device_after_context = 0, device_after_comms = 0, device_used_high = 0;
  Bytes nccl_bytes = 0;  ///< device_after_comms - device_after_context (NCCL's own buffers)
  /// cudaMemGetInfo's delta around each communicator's creation: the world's ncclCommInitRank
  /// (key kNone) and each schedule communicator's ncclCommSplit (its Schedule::comms index), for
  /// the planner's NCCL overhead model. NCCL >= 2.22 connects lazily (NCCL_RUNTIME_CONNECT=1),
  /// so these are init-time figures unless the run sets NCCL_RUNTIME_CONNECT=0.
  std::vector<std::pair<std::uint32_t, Bytes>> nccl_by_comm;
};

struct CudaRankResult {
  std::uint32_t rank = 0;
  std::uint32_t role = 0;
  CudaMemory memory;
  std::vector<exec::ExecutedCollective> collectives;  ///< launch order, bytes at the API boundary
  std::array<Bytes, kCollectiveKindCount> bytes_by_kind{};  ///< count x dtype size per call
  std::vector<std::int64_t> step_device_ns;  ///< per step, CUDA events (first op to last op)
  std::int64_t issue_ns = 0;                 ///< host time spent issuing Device calls
  bool comm_model_only = false;              ///< single-GPU mode: collectives were stand-ins
};

struct CudaRun {
  std::vector<CudaRankResult> ranks;  ///< the ranks this process ran, ascending
  LaunchInfo launch;
  std::string gpu_name, driver_version, runtime_version, nccl_version;
  Trace trace;  ///< meta.backend "cuda"
};

/// Runs this process's rank (or, single-GPU, the chosen ranks in turn). Errors, each one line: a
/// launch that does not match the schedule (before any allocation), no CUDA device, a schedule
/// whose operands the backend needs but does not carry, a failed CUDA/cuBLAS/NCCL call (file:line,
/// the library's message, the op), "does not fit", an NCCL async error or timeout.
Result<CudaRun> run_cuda(const Schedule& s, const ScheduleGraph& g, const CudaOptions& options,
                         const EnvReader& env);

}  // namespace zerosim::cuda
