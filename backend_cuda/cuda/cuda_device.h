// CudaDevice: executor.h's Device on one GPU for one rank (issue #10 "Execution"). Private to
// backend_cuda; cuda_run.cc creates one per rank it runs.
//   * memory: a cudaMemPool_t per rank (its own reserved/used high-water marks), every Alloc a
//     cudaMallocFromPoolAsync on the memory stream, made visible to every stream by an event, every
//     Free a cudaFreeAsync after every stream's work so far (events); host and pinned buffers
//     cudaMallocHost. A failed allocation: "does not fit" with the device's free bytes;
//   * streams: one non-blocking stream per schedule stream; record/wait are events;
//   * collectives: NCCL on the op's communicator (ncclCommSplit of the world), or single-GPU
//     mode's stand-in (cuda_plan.h);
//   * data ops: cast/scale/accumulate kernels on the resolved operands; GradReady the host's
//     synthetic gradients; OptimizerStep the fused AdamW kernel with the loss scale on the device;
//   * compute: cuBLAS GEMMs (cuda_plan.h plan_gemms) or the busy kernel;
//   * timing: two timing events around every op on its stream, host issue time beside it;
//   * counters: device-wide used bytes (cudaMemGetInfo) and the pool's used and reserved bytes
//     (trace.h "cuda.*"), read before op 0, at every step's first op and after the last op;
//   * synchronize: polls the streams and ncclCommGetAsyncError until a deadline.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "training_math.h"
#include "zerosim/cuda_backend.h"
#include "zerosim/executor.h"

namespace zerosim::cuda {

struct OpEvents {
  std::uint32_t op = 0;
  cudaEvent_t start = nullptr, end = nullptr;
  std::int64_t issue_ns = 0;      ///< host time of the Device call
  std::int64_t issued_at_ns = 0;  ///< when the call began, host steady clock from the origin
};

class CudaDevice final : public exec::Device {
 public:
  /// `world_comm` null: single-GPU mode (collectives are stand-ins). `data`: the walk resolves
  /// operands (the schedule carries them all); otherwise count-only: every buffer is still a real
  /// allocation, but collectives, copies and the optimizer run on a staging buffer of the
  /// backend's own with the schedule's counts (the trace says so).
  CudaDevice(const Schedule& s, const CudaOptions& o, std::uint32_t rank, ncclComm_t world_comm,
             bool data = true);
  ~CudaDevice() override;
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  /// Streams, pool, cuBLAS, executor-owned scratch and the communicators (every rank calls
  /// ncclCommSplit for each schedule communicator in the same order). Before op 0.
  exec::Status init();

  exec::Status allocate(std::uint32_t buffer, Bytes bytes, MemoryPool pool, BufferCategory category,
                        bool zero_fill, bool init_weights) override;
  exec::Status release(std::uint32_t buffer) override;
  exec::Status work(Stream stream, const exec::WorkCall& call) override;
  exec::Status collective(Stream stream, const exec::CollectiveCall& call) override;
  exec::Status record(Stream stream, std::uint32_t op) override;
  exec::Status wait(Stream stream, std::uint32_t op) override;
  exec::Status synchronize() override;

  /// After the walk: the op timings, bytes and memory into `out`, spans into `spans`, the named
  /// counters (rank, by name) appended to `counters`.
  exec::Status collect(CudaRankResult& out, std::vector<Span>& spans,
                       std::vector<TraceCounter>& counters);
  /// Bytes of the backend's own device memory (GEMM workspace, staging, scratch): not in the
  /// prediction, shown beside it.
  Bytes own_bytes() const { return gemm_ws_bytes_ + staging_bytes_; }
  /// cudaMemGetInfo's delta around each ncclCommSplit (Schedule::comms index, bytes).
  const std::vector<std::pair<std::uint32_t, Bytes>>& split_bytes() const { return split_bytes_; }
  /// Aborts the split communicators (after a failure, so no rank hangs in NCCL); the caller
  /// aborts the world communicator it passed in.
  void abort();

 private:
  exec::Status alloc_error(std::uint32_t buffer, Bytes bytes, BufferCategory c, cudaError_t e);
  void* at(const exec::OperandPiece& p) const;
  exec::Status check_piece(const exec::OperandPiece& p, const char* what) const;
  exec::Status copy(const exec::Operand& src, const exec::Operand& dst, double scale,
                    bool accumulate, cudaStream_t st);
  exec::Status grad_ready(const exec::WorkCall& c, cudaStream_t st);
  exec::Status optimizer_step(const exec::WorkCall& c, cudaStream_t st);
  exec::Status compute(const exec::WorkCall& c, cudaStream_t st);
  exec::Status nccl_call(const exec::CollectiveCall& c, void* in, void* out, cudaStream_t st);
  exec::Status stand_in(const exec::CollectiveCall& c, void* in, void* out, bool in_place,
                        cudaStream_t st);
  exec::Status begin_step(std::uint32_t step);
  /// The counters' readings now, at host time since host_origin_ (kCounterNames' order).
  exec::Status sample_counters();
  /// sample_counters() at the first op of a step after the last sampled one (cheap otherwise).
  exec::Status sample_at_step(std::uint32_t step) {
    if (step <= sampled_step_) return std::nullopt;
    sampled_step_ = step;
    return sample_counters();
  }
  /// Count-only: `bytes` read and written through the staging buffer (halves copied in chunks).
  exec::Status touch(Bytes bytes, cudaStream_t st);
  /// Count-only: the AdamW kernel over `n` elements, in chunks of the staging buffer.
  exec::Status adamw_count_only(Elements n, cudaStream_t st);
  exec::Status timed_begin(std::uint32_t op, Stream stream, OpEvents& ev);
  exec::Status timed_end(Stream stream, OpEvents& ev, std::chrono::steady_clock::time_point t0);

  const Schedule& s_;
  const CudaOptions& o_;
  std::uint32_t rank_;
  std::uint32_t role_;
  ncclComm_t world_;
  bool single_gpu_;
  bool data_;
  void* staging_ = nullptr;  ///< count-only: where collectives and copies run (not tracked)
  Bytes staging_bytes_ = 0;
  cudaStream_t streams_[kStreamCount] = {};
  cudaStream_t mem_stream_ = nullptr;
  cudaMemPool_t pool_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  void* gemm_ws_ = nullptr;  ///< A, B, C of the largest planned GEMM (not tracked: backend's own)
  Bytes gemm_ws_bytes_ = 0;
  float* scale_ws_ = nullptr;  ///< the combined scale's inverse and apply flag, device
  int* flag_dev_ = nullptr;    ///< the overflow check's flag, device
  int* flag_host_ = nullptr;   ///< ... its pinned copy
  cudaEvent_t flag_ready_ = nullptr;
  bool flag_pending_ = false;
  cudaEvent_t origin_ = nullptr;  ///< t = 0 of the rank's timings
  struct Buf {
    void* p = nullptr;
    Bytes bytes = 0;
    MemoryPool pool = MemoryPool::Device;
    bool live = false;
    bool scratch = false;  ///< executor-owned: cudaMalloc'd by init(), not from the pool
  };
  std::vector<Buf> bufs_;
  std::map<std::uint32_t, cudaEvent_t> sync_events_;  ///< record(): op -> event
  cudaEvent_t mem_ready_ = nullptr;                   ///< after the latest Alloc's work
  cudaEvent_t stream_done_[kStreamCount] = {};        ///< before a Free: each stream's work so far
  std::map<std::pair<std::uint32_t, std::uint32_t>, ncclComm_t> comms_;  ///< (comm, first) -> comm
  std::vector<std::pair<std::uint32_t, Bytes>> split_bytes_;
  std::vector<ncclComm_t> owned_comms_;  ///< split communicators (destroyed with the device)
  std::vector<OpEvents> timings_;
  std::vector<exec::ExecutedCollective> collectives_;
  std::array<Bytes, kCollectiveKindCount> bytes_by_kind_{};
  std::set<std::uint32_t> overflow_buffers_;
  exec::DynamicLossScaler scaler_;
  bool loss_scaled_;
  std::uint32_t step_ = 0;
  bool step_overflowed_ = false;
  std::vector<std::uint64_t> update_steps_;
  std::set<std::uint32_t> injected_;
  std::int64_t issue_ns_ = 0;
  std::chrono::steady_clock::time_point host_origin_{};  ///< host time of origin_'s record
  Bytes device_used_high_ = 0;
  /// Named counters: cuda.device_used_bytes, cuda.pool_reserved_bytes, cuda.pool_used_bytes.
  std::array<std::vector<CounterSample>, 3> counters_;
  std::uint32_t sampled_step_ = 0;
};

}  // namespace zerosim::cuda
