// CudaDevice (cuda_device.h).
#include "cuda_device.h"

#include <algorithm>
#include <cmath>
#include <thread>

#include "cuda_check.h"
#include "kernels.h"
#include "zerosim/cuda_grad_key.h"
#include "zerosim/cuda_plan.h"

namespace zerosim::cuda {
namespace {

using Clock = std::chrono::steady_clock;

Diagnostic backend_error(std::string message) {
  return Diagnostic{Severity::Error, "cuda backend", "", std::move(message), {}};
}

Elements total(const exec::Operand& x) {
  Elements n = 0;
  for (const exec::OperandPiece& p : x) n += p.length;
  return n;
}

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::Float16:
      return ncclFloat16;
    case DType::BFloat16:
      return ncclBfloat16;
    case DType::Float32:
      return ncclFloat32;
    case DType::Float64:
      return ncclFloat64;
    case DType::UInt8:
      return ncclUint8;
    case DType::Int64:
      return ncclInt64;
  }
  return ncclFloat16;
}

// The schedule's reduce ops: a sum (DeepSpeed averages with a separate scale, Op::scale) or a max
// (the overflow check); None only on collectives that do not reduce.
ncclRedOp_t nccl_op(ReduceOp r) { return r == ReduceOp::Max ? ncclMax : ncclSum; }

}  // namespace

CudaDevice::CudaDevice(const Schedule& s, const CudaOptions& o, std::uint32_t rank,
                       ncclComm_t world_comm, bool data)
    : s_(s),
      o_(o),
      rank_(rank),
      role_(s.role_of(rank)),
      world_(world_comm),
      single_gpu_(world_comm == nullptr),
      data_(data),
      bufs_(s.buffers.size()),
      scaler_(s.meta.lp == DType::Float16 ? o.data.initial_loss_scale : 1.0),
      loss_scaled_(s.meta.lp == DType::Float16),
      update_steps_(s.updates.size(), 0) {
  for (const UpdateCall& u : s.updates)
    if (u.overflow.buffer != kNone) overflow_buffers_.insert(u.overflow.buffer);
}

CudaDevice::~CudaDevice() {
  // Best effort: the run's result is already taken; errors here have nowhere to go.
  (void)cudaDeviceSynchronize();
  for (Buf& b : bufs_)
    if (b.live) {
      if (b.scratch)
        (void)cudaFree(b.p);
      else if (b.pool == MemoryPool::Device)
        (void)cudaFreeAsync(b.p, mem_stream_);
      else
        (void)cudaFreeHost(b.p);
    }
  (void)cudaDeviceSynchronize();
  for (auto& [op, e] : sync_events_) (void)cudaEventDestroy(e);
  for (cudaEvent_t e : stream_done_)
    if (e) (void)cudaEventDestroy(e);
  if (mem_ready_) (void)cudaEventDestroy(mem_ready_);
  for (OpEvents& t : timings_) {
    (void)cudaEventDestroy(t.start);
    (void)cudaEventDestroy(t.end);
  }
  for (ncclComm_t c : owned_comms_) (void)ncclCommDestroy(c);
  if (blas_) (void)cublasDestroy(blas_);
  if (gemm_ws_) (void)cudaFree(gemm_ws_);
  if (staging_) (void)cudaFree(staging_);
  if (scale_ws_) (void)cudaFree(scale_ws_);
  if (flag_dev_) (void)cudaFree(flag_dev_);
  if (flag_host_) (void)cudaFreeHost(flag_host_);
  if (flag_ready_) (void)cudaEventDestroy(flag_ready_);
  if (origin_) (void)cudaEventDestroy(origin_);
  for (cudaStream_t st : streams_)
    if (st) (void)cudaStreamDestroy(st);
  if (mem_stream_) (void)cudaStreamDestroy(mem_stream_);
  if (pool_) (void)cudaMemPoolDestroy(pool_);
}

exec::Status CudaDevice::init() {
  int dev = 0;
  if (exec::Status e = ZS_CUDA(cudaGetDevice(&dev))) return e;
  for (cudaStream_t& st : streams_)
    if (exec::Status e = ZS_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking))) return e;
  if (exec::Status e = ZS_CUDA(cudaStreamCreateWithFlags(&mem_stream_, cudaStreamNonBlocking)))
    return e;
  // A pool of its own per rank: its high-water marks are the rank's (ecosystem.md §5.1), and it
  // keeps what it reserved (release threshold: all) as PyTorch's caching allocator does.
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = dev;
  if (exec::Status e = ZS_CUDA(cudaMemPoolCreate(&pool_, &props))) return e;
  std::uint64_t threshold = UINT64_MAX;
  if (exec::Status e =
          ZS_CUDA(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &threshold)))
    return e;
  if (exec::Status e = ZS_CUBLAS(cublasCreate(&blas_))) return e;
  if (exec::Status e = ZS_CUDA(cudaMalloc(&scale_ws_, 2 * sizeof(float)))) return e;
  if (exec::Status e = ZS_CUDA(cudaMalloc(&flag_dev_, sizeof(int)))) return e;
  if (exec::Status e = ZS_CUDA(cudaMallocHost(&flag_host_, sizeof(int)))) return e;
  if (exec::Status e = ZS_CUDA(cudaEventCreateWithFlags(&flag_ready_, cudaEventDisableTiming)))
    return e;
  if (exec::Status e = ZS_CUDA(cudaEventCreate(&origin_))) return e;
  if (exec::Status e = ZS_CUDA(cudaEventCreateWithFlags(&mem_ready_, cudaEventDisableTiming)))
    return e;
  for (cudaEvent_t& ev : stream_done_)
    if (exec::Status e = ZS_CUDA(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming))) return e;
  // The largest GEMM any compute op plans: one workspace, filled once.
  Bytes ws = 0;
  for (const Op& op : s_.ops)
    if (op.kind == OpKind::Forward || op.kind == OpKind::Backward || op.kind == OpKind::Recompute)
      ws = std::max(ws, gemm_workspace_bytes(
                            plan_gemms(op.flops, s_.meta.hidden, s_.meta.tokens_per_micro_batch)));
  if (ws > 0) {
    if (exec::Status e = ZS_CUDA(cudaMalloc(&gemm_ws_, ws))) return e;
    if (exec::Status e = ZS_CUDA(cudaMemset(gemm_ws_, 0, ws))) return e;
    gemm_ws_bytes_ = ws;
  }
  if (!data_) {
    // Count-only staging: the largest collective's buffer (all-gather output, reduce-scatter
    // input), at least 64 MiB so copies and AdamW run in large chunks; 8 GiB at most (bigger
    // collectives are refused: run them in data mode).
    Bytes need = Bytes{64} << 20;
    for (const Op& op : s_.ops)
      if (op.kind == OpKind::Collective)
        need = std::max(need, std::max(op.numel, op.out_numel) * dtype_size(op.dtype));
    if (need > (Bytes{8} << 30))
      return backend_error(
          "count-only mode stages collectives in at most 8 GiB; this schedule "
          "has one of " +
          std::to_string(need) + " bytes");
    if (exec::Status e = ZS_CUDA(cudaMalloc(&staging_, need))) return e;
    if (exec::Status e = ZS_CUDA(cudaMemset(staging_, 0, need))) return e;
    staging_bytes_ = need;
  }
  // Executor-owned scratch (norms, overflow flags): zeros before op 0, as the host backend.
  for (std::uint32_t b = 0; b < s_.buffers.size(); ++b)
    if (s_.buffers[b].executor_owned) {
      const Bytes bytes = s_.buffer_numel(b, role_) * dtype_size(s_.buffers[b].dtype);
      Buf& x = bufs_[b];
      if (exec::Status e = ZS_CUDA(cudaMalloc(&x.p, std::max<Bytes>(bytes, 1)))) return e;
      if (exec::Status e = ZS_CUDA(cudaMemset(x.p, 0, bytes))) return e;
      x.bytes = bytes;
      x.live = true;
      x.scratch = true;  // the backend's own (not from the pool, not tracked)
    }
  // One communicator per schedule communicator group: every rank splits the world in the same
  // order (color: the group's first rank, key: the index in it). A world-sized group reuses it.
  if (!single_gpu_)
    for (std::uint32_t c = 0; c < s_.comms.size(); ++c) {
      const CommGroup& g = s_.comms[c];
      const std::uint32_t first = g.rank_at(rank_, 0);
      if (g.size == s_.meta.world) {
        comms_[{c, first}] = world_;
        continue;
      }
      ncclComm_t sub = nullptr;
      std::size_t free0 = 0, free1 = 0, total = 0;
      if (exec::Status e = ZS_CUDA(cudaMemGetInfo(&free0, &total))) return e;
      if (exec::Status e =
              ZS_NCCL(world_, ncclCommSplit(world_, static_cast<int>(first),
                                            static_cast<int>(g.index_of(rank_)), &sub, nullptr)))
        return e;
      owned_comms_.push_back(sub);
      if (exec::Status e = ZS_CUDA(cudaMemGetInfo(&free1, &total))) return e;
      split_bytes_.emplace_back(c, free0 > free1 ? free0 - free1 : 0);
      comms_[{c, first}] = sub;
    }
  if (exec::Status e = ZS_CUDA(cudaEventRecord(origin_, streams_[0]))) return e;
  exec::Status synced = ZS_CUDA(cudaDeviceSynchronize());
  host_origin_ = Clock::now();  // the origin event completed just before: t = 0 on both clocks
  if (synced) return synced;
  return sample_counters();  // before op 0 (step 0's sample)
}

exec::Status CudaDevice::alloc_error(std::uint32_t buffer, Bytes bytes, BufferCategory c,
                                     cudaError_t e) {
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    std::size_t free_b = 0, total_b = 0;
    (void)cudaMemGetInfo(&free_b, &total_b);
    return does_not_fit(rank_, buffer, std::string(category_name(c)), bytes, free_b, total_b);
  }
  return check_cuda(e, "cudaMallocFromPoolAsync(&p, bytes, pool, stream)", __FILE__, __LINE__);
}

exec::Status CudaDevice::allocate(std::uint32_t buffer, Bytes bytes, MemoryPool pool,
                                  BufferCategory category, bool zero_fill, bool init_weights) {
  if (buffer >= bufs_.size())
    return backend_error("expected a buffer index, got #" + std::to_string(buffer));
  Buf& b = bufs_[buffer];
  b.bytes = bytes;
  b.pool = pool;
  const Bytes n = std::max<Bytes>(bytes, 1);  // a zero-byte buffer still gets an address
  if (pool == MemoryPool::Device) {
    if (cudaError_t e = cudaMallocFromPoolAsync(&b.p, n, pool_, mem_stream_); e != cudaSuccess)
      return alloc_error(buffer, bytes, category, e);
  } else if (cudaError_t e = cudaMallocHost(&b.p, n); e != cudaSuccess) {
    return alloc_error(buffer, bytes, category, e);
  }
  b.live = true;
  if (zero_fill)
    if (exec::Status e = ZS_CUDA(cudaMemsetAsync(b.p, 0, bytes, mem_stream_))) return e;
  if (init_weights && !zero_fill) {
    const DType t = s_.buffers[buffer].dtype;
    const std::uint64_t key = weight_key(o_.data.seed, rank_, buffer);
    if (exec::Status e =
            ZS_CUDA(launch_init_weights(b.p, t, bytes / dtype_size(t), key, mem_stream_)))
      return e;
  }
  // Visible to every stream from here on (stream-ordered allocation semantics). One event, re-
  // recorded: a wait binds to the record that precedes it.
  if (exec::Status e = ZS_CUDA(cudaEventRecord(mem_ready_, mem_stream_))) return e;
  for (cudaStream_t st : streams_)
    if (exec::Status e = ZS_CUDA(cudaStreamWaitEvent(st, mem_ready_, 0))) return e;
  std::size_t free_b = 0, total_b = 0;
  if (exec::Status e = ZS_CUDA(cudaMemGetInfo(&free_b, &total_b))) return e;
  device_used_high_ = std::max<Bytes>(device_used_high_, total_b - free_b);
  return std::nullopt;
}

exec::Status CudaDevice::release(std::uint32_t buffer) {
  if (buffer >= bufs_.size() || !bufs_[buffer].live)
    return backend_error("expected buffer #" + std::to_string(buffer) + " live, got it free");
  Buf& b = bufs_[buffer];
  // Freed after the work every stream has queued so far (the last readers may be on any).
  for (std::size_t k = 0; k < kStreamCount; ++k) {
    if (exec::Status e = ZS_CUDA(cudaEventRecord(stream_done_[k], streams_[k]))) return e;
    if (exec::Status e = ZS_CUDA(cudaStreamWaitEvent(mem_stream_, stream_done_[k], 0))) return e;
  }
  if (b.scratch) {
    if (exec::Status e = ZS_CUDA(cudaStreamSynchronize(mem_stream_))) return e;
    if (exec::Status e = ZS_CUDA(cudaFree(b.p))) return e;
  } else if (b.pool == MemoryPool::Device) {
    if (exec::Status e = ZS_CUDA(cudaFreeAsync(b.p, mem_stream_))) return e;
  } else {
    if (exec::Status e = ZS_CUDA(cudaStreamSynchronize(mem_stream_))) return e;
    if (exec::Status e = ZS_CUDA(cudaFreeHost(b.p))) return e;
  }
  b = Buf{};
  return std::nullopt;
}

void* CudaDevice::at(const exec::OperandPiece& p) const {
  return static_cast<unsigned char*>(bufs_[p.buffer].p) + p.offset * dtype_size(p.dtype);
}

exec::Status CudaDevice::check_piece(const exec::OperandPiece& p, const char* what) const {
  if (p.buffer == kNone) return std::nullopt;
  if (p.buffer >= bufs_.size() || !bufs_[p.buffer].live)
    return backend_error(std::string(what) + ": buffer #" + std::to_string(p.buffer) +
                         " is not allocated");
  if ((p.offset + p.length) * dtype_size(p.dtype) > bufs_[p.buffer].bytes)
    return backend_error(std::string(what) + ": elements [" + std::to_string(p.offset) + ", " +
                         std::to_string(p.offset + p.length) + ") lie outside buffer #" +
                         std::to_string(p.buffer));
  return std::nullopt;
}

exec::Status CudaDevice::copy(const exec::Operand& src, const exec::Operand& dst, double scale,
                              bool accumulate, cudaStream_t st) {
  if (total(src) != total(dst))
    return backend_error("expected src and dst of equal length, got " + std::to_string(total(src)) +
                         " and " + std::to_string(total(dst)));
  for (const exec::OperandPiece& p : src)
    if (exec::Status e = check_piece(p, "src")) return e;
  for (const exec::OperandPiece& p : dst)
    if (exec::Status e = check_piece(p, "dst")) return e;
  std::size_t si = 0, di = 0;
  Elements so = 0, dof = 0;
  while (si < src.size() && di < dst.size()) {
    const exec::OperandPiece& a = src[si];
    const exec::OperandPiece& b = dst[di];
    const Elements n = std::min(a.length - so, b.length - dof);
    if (b.buffer != kNone) {
      const void* sp = a.buffer == kNone
                           ? nullptr
                           : static_cast<const unsigned char*>(at(a)) + so * dtype_size(a.dtype);
      void* dp = static_cast<unsigned char*>(at(b)) + dof * dtype_size(b.dtype);
      if (exec::Status e =
              ZS_CUDA(launch_convert(dp, b.dtype, sp, a.dtype, n, scale, accumulate, st)))
        return e;
    }
    so += n;
    dof += n;
    if (so == a.length) ++si, so = 0;
    if (dof == b.length) ++di, dof = 0;
  }
  return std::nullopt;
}

exec::Status CudaDevice::touch(Bytes bytes, cudaStream_t st) {
  const Bytes half = staging_bytes_ / 2;
  auto* base = static_cast<unsigned char*>(staging_);
  for (Bytes done = 0; done < bytes; done += half)
    if (exec::Status e = ZS_CUDA(cudaMemcpyAsync(base + half, base, std::min(half, bytes - done),
                                                 cudaMemcpyDeviceToDevice, st)))
      return e;
  return std::nullopt;
}

exec::Status CudaDevice::adamw_count_only(Elements n, cudaStream_t st) {
  // p, m, v, g: four fp32 quarters of the staging buffer; the scale slots hold a fixed 1.
  const Elements chunk = staging_bytes_ / 16;
  auto* f = static_cast<float*>(staging_);
  if (exec::Status e = ZS_CUDA(launch_combined_scale(
          nullptr, 0, 1.0, 0.0, scale_ws_, reinterpret_cast<int*>(scale_ws_ + 1), st)))  // NOLINT
    return e;
  const AdamWArgs a{o_.data.lr,           o_.data.beta1, o_.data.beta2, o_.data.eps,
                    o_.data.weight_decay, o_.data.lr,    1.0f};
  for (Elements done = 0; done < n; done += chunk) {
    const Elements k = std::min(chunk, n - done);
    if (exec::Status e =
            ZS_CUDA(launch_adamw(f, f + chunk, f + 2 * chunk, f + 3 * chunk, k, scale_ws_,
                                 reinterpret_cast<int*>(scale_ws_ + 1),  // NOLINT
                                 a, nullptr, DType::Float16, st)))
      return e;
  }
  return std::nullopt;
}

exec::Status CudaDevice::begin_step(std::uint32_t step) {
  // The previous step's loss-scale update needs its overflow flag: the one host wait per step.
  if (step_ < step && flag_pending_) {
    if (exec::Status e = ZS_CUDA(cudaEventSynchronize(flag_ready_))) return e;
    step_overflowed_ = step_overflowed_ || *flag_host_ != 0;
    flag_pending_ = false;
  }
  while (step_ < step) {
    if (loss_scaled_) scaler_.update(step_overflowed_);
    step_overflowed_ = false;
    ++step_;
  }
  return std::nullopt;
}

namespace {
constexpr std::array<const char*, 3> kCounterNames = {
    "cuda.device_used_bytes", "cuda.pool_reserved_bytes", "cuda.pool_used_bytes"};
}  // namespace

exec::Status CudaDevice::sample_counters() {
  // Three driver queries, so at step boundaries only (trace.h "Named counters"). The host's
  // steady clock from the origin event is the span's issue clock, close to the device's.
  std::size_t free_b = 0, total_b = 0;
  if (exec::Status e = ZS_CUDA(cudaMemGetInfo(&free_b, &total_b))) return e;
  std::uint64_t reserved = 0, used = 0;  // cuuint64_t, as the attributes' documentation says
  if (exec::Status e =
          ZS_CUDA(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &reserved)))
    return e;
  if (exec::Status e =
          ZS_CUDA(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrUsedMemCurrent, &used)))
    return e;
  device_used_high_ = std::max<Bytes>(device_used_high_, total_b - free_b);
  std::int64_t t =
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - host_origin_).count();
  const std::array<std::uint64_t, kCounterNames.size()> v = {total_b - free_b, reserved, used};
  for (std::size_t k = 0; k < v.size(); ++k) {
    std::vector<CounterSample>& series = counters_[k];
    if (!series.empty()) t = std::max(t, series.back().t);  // time order whatever the clock does
    series.push_back({std::max<std::int64_t>(t, 0), static_cast<std::int64_t>(v[k])});
  }
  return std::nullopt;
}

exec::Status CudaDevice::grad_ready(const exec::WorkCall& c, cudaStream_t st) {
  if (exec::Status e = begin_step(c.step)) return e;
  const auto ls = static_cast<float>(loss_scaled_ ? scaler_.scale() : 1.0);
  const bool inject =
      rank_ == 0 && c.micro_step == 0 && !injected_.count(c.step) &&
      std::binary_search(o_.data.overflow_steps.begin(), o_.data.overflow_steps.end(), c.step);
  if (inject) injected_.insert(c.step);
  const std::uint64_t key = grad_key(o_.data.seed, rank_, c.step, c.micro_step, c.param);
  const double quantum =
      o_.data.quantum_bits > 0 ? static_cast<double>(std::uint64_t{1} << o_.data.quantum_bits) : 0;
  Elements index = 0;
  for (const exec::OperandPiece& p : c.dst) {
    if (exec::Status e = check_piece(p, "dst (the gradient)")) return e;
    if (p.buffer != kNone)
      if (exec::Status e = ZS_CUDA(launch_grads(at(p), p.dtype, p.length, key, index, quantum,
                                                o_.data.grad_scale, ls, static_cast<float>(c.scale),
                                                c.accumulate, inject && index == 0, st)))
        return e;
    index += p.length;
  }
  return std::nullopt;
}

exec::Status CudaDevice::optimizer_step(const exec::WorkCall& c, cudaStream_t st) {
  if (exec::Status e = begin_step(c.step)) return e;
  const exec::UpdateOperands& u = c.operands;
  const auto plain = [&](const exec::Operand& x) {
    return x.size() == 1 && x[0].buffer != kNone && x[0].dtype == DType::Float32 &&
           !check_piece(x[0], "update operand");
  };
  if (c.update >= update_steps_.size())
    return backend_error("expected an update index, got " + std::to_string(c.update));
  if (!plain(u.master) || !plain(u.grad) || !plain(u.exp_avg) || !plain(u.exp_avg_sq))
    return backend_error(
        "the fused AdamW kernel expects master, grad, exp_avg and exp_avg_sq as one fp32 region "
        "each; this update has pieces (not supported by the CUDA backend yet)");
  const Elements n = u.master[0].length;
  if (u.grad[0].length != n || u.exp_avg[0].length != n || u.exp_avg_sq[0].length != n)
    return backend_error("expected master, grad, exp_avg and exp_avg_sq of equal length");
  const float* norms = nullptr;
  Elements n_norms = 0;
  if (!u.norms.empty()) {
    if (!plain(u.norms)) return backend_error("expected the update's norms as one fp32 region");
    norms = static_cast<const float*>(at(u.norms[0]));
    n_norms = u.norms[0].length;
  }
  const double loss_scale = loss_scaled_ ? scaler_.scale() : 1.0;
  float* inv = scale_ws_;
  int* apply = reinterpret_cast<int*>(scale_ws_ + 1);  // NOLINT: a float-sized int slot
  if (exec::Status e = ZS_CUDA(launch_combined_scale(
          norms, n_norms, loss_scale, norms ? o_.data.gradient_clipping : 0.0, inv, apply, st)))
    return e;
  const std::uint64_t t = ++update_steps_[c.update];
  const double bc1 = 1.0 - std::pow(static_cast<double>(o_.data.beta1), static_cast<double>(t));
  const double bc2 = 1.0 - std::pow(static_cast<double>(o_.data.beta2), static_cast<double>(t));
  AdamWArgs a{o_.data.lr,
              o_.data.beta1,
              o_.data.beta2,
              o_.data.eps,
              o_.data.weight_decay,
              static_cast<float>(o_.data.lr / bc1),
              static_cast<float>(std::sqrt(bc2))};
  // The 16-bit result is the schedule's WriteBack's to write (as on the host): lp stays null.
  return ZS_CUDA(
      launch_adamw(static_cast<float*>(at(u.master[0])), static_cast<float*>(at(u.exp_avg[0])),
                   static_cast<float*>(at(u.exp_avg_sq[0])), static_cast<float*>(at(u.grad[0])), n,
                   inv, apply, a, nullptr, DType::Float16, st));
}

exec::Status CudaDevice::compute(const exec::WorkCall& c, cudaStream_t st) {
  const std::vector<Gemm> plan =
      plan_gemms(c.flops, s_.meta.hidden, s_.meta.tokens_per_micro_batch);
  if (plan.empty()) {
    // No GEMM shape: spin for the op's FLOPs at 1e12 FLOP/s x 1 GHz-ish cycles (uncalibrated;
    // `zerosim calibrate` is to replace this rate).
    const auto cycles = static_cast<std::uint64_t>(std::min(c.flops / 1e3, 1e10));
    return cycles == 0 ? std::nullopt : ZS_CUDA(launch_busy(cycles, st));
  }
  if (exec::Status e = ZS_CUBLAS(cublasSetStream(blas_, st))) return e;
  const float alpha = 1.0f, beta = 0.0f;
  for (const Gemm& g : plan) {
    auto* a = static_cast<unsigned char*>(gemm_ws_);
    unsigned char* b = a + 2 * g.m * g.k;
    unsigned char* out = b + 2 * g.k * g.n;
    const cudaDataType_t t = s_.meta.lp == DType::BFloat16 ? CUDA_R_16BF : CUDA_R_16F;
    for (std::uint32_t k = 0; k < g.count; ++k)
      if (exec::Status e = ZS_CUBLAS(
              cublasGemmEx(blas_, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(g.m),
                           static_cast<int>(g.n), static_cast<int>(g.k), &alpha, a, t,
                           static_cast<int>(g.m), b, t, static_cast<int>(g.k), &beta, out, t,
                           static_cast<int>(g.m), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)))
        return e;
  }
  return std::nullopt;
}

exec::Status CudaDevice::timed_begin(std::uint32_t op, Stream stream, OpEvents& ev) {
  ev.op = op;
  if (exec::Status e = ZS_CUDA(cudaEventCreate(&ev.start))) return e;
  if (exec::Status e = ZS_CUDA(cudaEventCreate(&ev.end))) return e;
  return ZS_CUDA(cudaEventRecord(ev.start, streams_[static_cast<std::size_t>(stream)]));
}

exec::Status CudaDevice::timed_end(Stream stream, OpEvents& ev, Clock::time_point t0) {
  if (exec::Status e = ZS_CUDA(cudaEventRecord(ev.end, streams_[static_cast<std::size_t>(stream)])))
    return e;
  ev.issue_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
  ev.issued_at_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t0 - host_origin_).count();
  issue_ns_ += ev.issue_ns;
  timings_.push_back(ev);
  return std::nullopt;
}

exec::Status CudaDevice::work(Stream stream, const exec::WorkCall& c) {
  if (exec::Status e = sample_at_step(c.step)) return e;
  const Clock::time_point t0 = Clock::now();
  cudaStream_t st = streams_[static_cast<std::size_t>(stream)];
  OpEvents ev;
  if (exec::Status e = timed_begin(c.op, stream, ev)) return e;
  exec::Status r;
  if (!data_ && c.kind != OpKind::Forward && c.kind != OpKind::Backward &&
      c.kind != OpKind::Recompute) {
    // Count-only: the op's bytes through the staging buffer (its operands are not carried).
    r = c.kind == OpKind::OptimizerStep ? adamw_count_only(c.elements, st)
                                        : touch(c.elements * dtype_size(c.dtype), st);
    if (r) return r;
    return timed_end(stream, ev, t0);
  }
  switch (c.kind) {
    case OpKind::Copy:
    case OpKind::CopyToBucket:
    case OpKind::WriteBack:
    case OpKind::HostToDevice:
    case OpKind::DeviceToHost:
    case OpKind::Alloc:  // an adopting Alloc's contents (exec::WorkCall)
      r = copy(c.src, c.dst, c.scale, c.accumulate, st);
      break;
    case OpKind::GradReady:
      r = grad_ready(c, st);
      break;
    case OpKind::OptimizerStep:
      r = optimizer_step(c, st);
      break;
    case OpKind::Forward:
    case OpKind::Backward:
    case OpKind::Recompute:
      r = compute(c, st);
      break;
    default:
      break;
  }
  if (r) return r;
  return timed_end(stream, ev, t0);
}

exec::Status CudaDevice::nccl_call(const exec::CollectiveCall& c, void* in, void* out,
                                   cudaStream_t st) {
  const auto it = comms_.find({c.communicator, c.group_first});
  if (it == comms_.end())
    return backend_error("no NCCL communicator for schedule communicator " +
                         std::to_string(c.communicator));
  ncclComm_t comm = it->second;
  const ncclDataType_t t = nccl_type(c.dtype);
  const int root = std::max(0, c.root);
  switch (c.kind) {
    case CollectiveKind::AllReduce:
      return ZS_NCCL(comm, ncclAllReduce(in, out, c.numel, t, nccl_op(c.reduce_op), comm, st));
    case CollectiveKind::Reduce:
      return ZS_NCCL(comm, ncclReduce(in, out, c.numel, t, nccl_op(c.reduce_op), root, comm, st));
    case CollectiveKind::Broadcast:
      return ZS_NCCL(comm, ncclBroadcast(in, out, c.numel, t, root, comm, st));
    case CollectiveKind::AllGather:
      return ZS_NCCL(comm, ncclAllGather(in, out, c.numel, t, comm, st));
    case CollectiveKind::ReduceScatter:
      return ZS_NCCL(comm,
                     ncclReduceScatter(in, out, c.out_numel, t, nccl_op(c.reduce_op), comm, st));
  }
  return std::nullopt;
}

exec::Status CudaDevice::stand_in(const exec::CollectiveCall& c, void* in, void* out, bool in_place,
                                  cudaStream_t st) {
  const StandIn plan = single_gpu_stand_in(c.kind, c.numel, c.out_numel, c.group_size,
                                           c.rank_in_group, c.root, in_place);
  const Bytes e = dtype_size(c.dtype);
  switch (plan.form) {
    case StandInForm::Touch:
    case StandInForm::Copy:
      return ZS_CUDA(launch_convert(static_cast<unsigned char*>(out) + plan.dst_offset * e, c.dtype,
                                    in, c.dtype, plan.read, 1.0, false, st));
    case StandInForm::Replicate:
      for (std::uint32_t k = 0; k < c.group_size; ++k) {
        unsigned char* slot = static_cast<unsigned char*>(out) + k * c.numel * e;
        if (slot != in)
          if (exec::Status r =
                  ZS_CUDA(cudaMemcpyAsync(slot, in, c.numel * e, cudaMemcpyDeviceToDevice, st)))
            return r;
      }
      return std::nullopt;
    case StandInForm::LocalSum:
      return ZS_CUDA(launch_local_sum(out, in, c.dtype, c.out_numel, c.group_size, st));
    case StandInForm::Nothing:
      return std::nullopt;
  }
  return std::nullopt;
}

exec::Status CudaDevice::collective(Stream stream, const exec::CollectiveCall& c) {
  if (exec::Status e = sample_at_step(c.step)) return e;
  const Clock::time_point t0 = Clock::now();
  if (exec::Status e = begin_step(c.step)) return e;
  cudaStream_t st = streams_[static_cast<std::size_t>(stream)];
  OpEvents ev;
  if (exec::Status e = timed_begin(c.op, stream, ev)) return e;
  if (!data_) {
    // Count-only: the schedule's counts on the staging buffer, in NCCL's in-place layout (the
    // rank's shard at its slot of the gathered / scattered buffer).
    const Bytes e = dtype_size(c.dtype);
    auto* base = static_cast<unsigned char*>(staging_);
    unsigned char* ip = base;
    if (c.kind == CollectiveKind::AllGather) ip = base + c.rank_in_group * c.numel * e;
    unsigned char* op =
        c.kind == CollectiveKind::ReduceScatter ? base + c.rank_in_group * c.out_numel * e : base;
    const bool in_place =
        c.kind != CollectiveKind::AllGather && c.kind != CollectiveKind::ReduceScatter;
    if (exec::Status r = single_gpu_ ? stand_in(c, ip, op, in_place, st) : nccl_call(c, ip, op, st))
      return r;
    exec::ExecutedCollective x{c.op, c.numel * e, c.out_numel * e};
    collectives_.push_back(x);
    bytes_by_kind_[static_cast<std::size_t>(c.kind)] += std::max(c.numel, c.out_numel) * e;
    return timed_end(stream, ev, t0);
  }
  if (c.src.size() != 1 || c.dst.size() > 1)
    return backend_error("expected one src region and at most one dst region for a collective");
  exec::OperandPiece in = c.src[0];
  exec::OperandPiece out = c.dst.empty() ? in : c.dst[0];
  if (c.dst.empty()) out.length = c.out_numel;
  if (exec::Status e = check_piece(in, "src")) return e;
  if (exec::Status e = check_piece(out, "dst")) return e;
  void* ip = at(in);
  void* op = at(out);
  if (exec::Status e =
          single_gpu_ ? stand_in(c, ip, op, c.dst.empty(), st) : nccl_call(c, ip, op, st))
    return e;
  const bool writes =
      c.kind != CollectiveKind::Reduce || c.root == static_cast<int>(c.rank_in_group);
  if (writes && c.scale != 1.0)
    if (exec::Status e =
            ZS_CUDA(launch_convert(op, c.dtype, op, c.dtype, c.out_numel, c.scale, false, st)))
      return e;
  if (overflow_buffers_.count(out.buffer)) {
    // The overflow check's result decides the step's loss-scale update (begin_step reads it).
    if (exec::Status e = ZS_CUDA(cudaMemsetAsync(flag_dev_, 0, sizeof(int), st))) return e;
    if (exec::Status e = ZS_CUDA(launch_any_nonzero(op, c.dtype, c.out_numel, flag_dev_, st)))
      return e;
    if (exec::Status e = ZS_CUDA(
            cudaMemcpyAsync(flag_host_, flag_dev_, sizeof(int), cudaMemcpyDeviceToHost, st)))
      return e;
    if (exec::Status e = ZS_CUDA(cudaEventRecord(flag_ready_, st))) return e;
    flag_pending_ = true;
  }
  // Bytes at the API boundary: the count NCCL is given times the dtype size (all-gather and
  // reduce-scatter: the per-rank send and receive counts).
  const Bytes e = dtype_size(c.dtype);
  exec::ExecutedCollective x;
  x.op = c.op;
  x.bytes_sent = c.numel * e;
  x.bytes_received = c.out_numel * e;
  collectives_.push_back(x);
  bytes_by_kind_[static_cast<std::size_t>(c.kind)] += std::max(c.numel, c.out_numel) * e;
  return timed_end(stream, ev, t0);
}

exec::Status CudaDevice::record(Stream stream, std::uint32_t op) {
  cudaEvent_t e = nullptr;
  if (exec::Status r = ZS_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming))) return r;
  auto [it, fresh] = sync_events_.emplace(op, e);
  if (!fresh) {
    (void)cudaEventDestroy(it->second);
    it->second = e;
  }
  return ZS_CUDA(cudaEventRecord(e, streams_[static_cast<std::size_t>(stream)]));
}

exec::Status CudaDevice::wait(Stream stream, std::uint32_t op) {
  const auto it = sync_events_.find(op);
  if (it == sync_events_.end())
    return backend_error("op " + std::to_string(op) + " was waited on but never recorded");
  return ZS_CUDA(cudaStreamWaitEvent(streams_[static_cast<std::size_t>(stream)], it->second, 0));
}

exec::Status CudaDevice::synchronize() {
  // Polls instead of blocking, so an NCCL error or a peer that never comes ends the run with a
  // report (ncclCommGetAsyncError, nccl-tests' testStreamSynchronize) instead of a hang.
  const Clock::time_point deadline = Clock::now() + o_.nccl_timeout;
  while (true) {
    bool done = true;
    for (cudaStream_t st : streams_) {
      const cudaError_t q = cudaStreamQuery(st);
      if (q == cudaErrorNotReady) {
        done = false;
        continue;
      }
      if (exec::Status e = ZS_CUDA(q)) return e;
    }
    if (done) break;
    for (const auto& [key, comm] : comms_) {
      ncclResult_t async = ncclSuccess;
      if (exec::Status e = ZS_NCCL(comm, ncclCommGetAsyncError(comm, &async))) return e;
      if (async != ncclSuccess && async != ncclInProgress) {
        exec::Status e = ZS_NCCL(comm, async);
        abort();
        return e;
      }
    }
    if (Clock::now() > deadline) {
      abort();
      return backend_error("NCCL timeout: rank " + std::to_string(rank_) +
                           "'s streams did not drain within " +
                           std::to_string(o_.nccl_timeout.count()) +
                           " ms (a peer stopped or a collective mismatched); communicators "
                           "aborted");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  std::size_t free_b = 0, total_b = 0;
  if (exec::Status e = ZS_CUDA(cudaMemGetInfo(&free_b, &total_b))) return e;
  device_used_high_ = std::max<Bytes>(device_used_high_, total_b - free_b);
  return std::nullopt;
}

void CudaDevice::abort() {
  // The split communicators are this device's; the world communicator is the caller's, which
  // aborts it next (run_cuda), so it is only forgotten here.
  for (ncclComm_t c : owned_comms_) (void)ncclCommAbort(c);
  owned_comms_.clear();
  world_ = nullptr;
  comms_.clear();
}

exec::Status CudaDevice::collect(CudaRankResult& out, std::vector<Span>& spans,
                                 std::vector<TraceCounter>& counters) {
  if (exec::Status e = synchronize()) return e;
  if (exec::Status e = sample_counters()) return e;  // after the last op
  for (std::size_t k = 0; k < counters_.size(); ++k)
    counters.push_back({rank_, kCounterNames[k], std::move(counters_[k])});
  std::uint64_t v = 0;
  if (exec::Status e = ZS_CUDA(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrUsedMemHigh, &v)))
    return e;
  out.memory.pool_used_high = v;
  if (exec::Status e = ZS_CUDA(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemHigh, &v)))
    return e;
  out.memory.pool_reserved_high = v;
  out.memory.device_used_high = std::max(out.memory.device_used_high, device_used_high_);
  out.collectives = collectives_;
  out.bytes_by_kind = bytes_by_kind_;
  out.issue_ns = issue_ns_;
  out.comm_model_only = single_gpu_;
  // Step time: from the first op's start to the last op's end of each step, CUDA events.
  std::vector<std::pair<double, double>> steps(s_.meta.steps, {1e300, -1e300});
  for (const OpEvents& t : timings_) {
    float a = 0, b = 0;
    if (exec::Status e = ZS_CUDA(cudaEventElapsedTime(&a, origin_, t.start))) return e;
    if (exec::Status e = ZS_CUDA(cudaEventElapsedTime(&b, origin_, t.end))) return e;
    const Op& op = s_.ops[t.op];
    if (op.step < steps.size()) {
      steps[op.step].first = std::min(steps[op.step].first, static_cast<double>(a));
      steps[op.step].second = std::max(steps[op.step].second, static_cast<double>(b));
    }
    Span sp;
    sp.rank = rank_;
    sp.stream = op.stream;
    sp.op = t.op;
    sp.name = op.label.empty() ? std::string(op_kind_name(op.kind)) : op.label;
    sp.category = std::string(op_kind_name(op.kind));
    sp.start_ns = static_cast<std::int64_t>(static_cast<double>(a) * 1e6);
    sp.dur_ns =
        std::max<std::int64_t>(0, static_cast<std::int64_t>(static_cast<double>(b - a) * 1e6));
    sp.issue_ns = t.issued_at_ns;  // host clock beside the device's (same origin, approximately)
    sp.step = op.step;
    sp.phase = op.phase;
    sp.micro_step = op.micro_step;
    sp.layer = op.layer;
    sp.bucket = op.bucket;
    sp.numel = op.kind == OpKind::Collective ? op.numel : s_.op_elements(op, role_);
    sp.flops = op.flops;
    spans.push_back(std::move(sp));
  }
  for (const auto& [a, b] : steps)
    out.step_device_ns.push_back(b >= a ? static_cast<std::int64_t>((b - a) * 1e6) : 0);
  return std::nullopt;
}

}  // namespace zerosim::cuda
