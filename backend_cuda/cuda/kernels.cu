// The CUDA backend's kernels (kernels.h). Grid-stride loops, 256 threads per block, at most 1024
// blocks per launch: every kernel is memory-bound, so a fixed grid keeps launch cost flat.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>

#include "kernels.h"
#include "zerosim/cuda_grad_key.h"

namespace zerosim::cuda {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(std::uint64_t n) {
  const std::uint64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b == 0 ? 1 : (b > 1024 ? 1024 : b));
}

// Loads element i as float (double for the 64-bit types), and stores with round-to-nearest-even.
__device__ double load(DType t, const void* p, std::uint64_t i) {
  switch (t) {
    case DType::Float16:
      return __half2float(static_cast<const __half*>(p)[i]);
    case DType::BFloat16:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    case DType::Float32:
      return static_cast<const float*>(p)[i];
    case DType::Float64:
      return static_cast<const double*>(p)[i];
    case DType::Int64:
      return static_cast<double>(static_cast<const long long*>(p)[i]);
    case DType::UInt8:
      return static_cast<const unsigned char*>(p)[i];
  }
  return 0;
}

__device__ void store(DType t, void* p, std::uint64_t i, double v) {
  switch (t) {
    case DType::Float16:
      static_cast<__half*>(p)[i] = __float2half_rn(static_cast<float>(v));
      return;
    case DType::BFloat16:
      static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(static_cast<float>(v));
      return;
    case DType::Float32:
      static_cast<float*>(p)[i] = static_cast<float>(v);
      return;
    case DType::Float64:
      static_cast<double*>(p)[i] = v;
      return;
    case DType::Int64:
      static_cast<long long*>(p)[i] = static_cast<long long>(v);
      return;
    case DType::UInt8:
      static_cast<unsigned char*>(p)[i] =
          static_cast<unsigned char>(v < 0 ? 0 : (v > 255 ? 255 : v));
      return;
  }
}

__device__ bool wide(DType t) { return t == DType::Float64 || t == DType::Int64; }

// The host's convert(): float arithmetic (double for 64-bit storage), x scale then + old.
__global__ void convert_kernel(void* d, DType dt, const void* s, DType st, std::uint64_t n,
                               double scale, bool accumulate) {
  const bool dbl = wide(dt) || wide(st);
  const auto fscale = static_cast<float>(scale);
  for (std::uint64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::uint64_t>(blockDim.x) * gridDim.x) {
    const double x = s ? load(st, s, i) : 0.0;
    if (dbl) {
      store(dt, d, i, (accumulate ? load(dt, d, i) : 0.0) + x * scale);
    } else {
      float v = static_cast<float>(x);
      if (scale != 1.0) v *= fscale;
      if (accumulate) v = static_cast<float>(load(dt, d, i)) + v;
      store(dt, d, i, v);
    }
  }
}

__global__ void local_sum_kernel(void* d, const void* s, DType t, std::uint64_t out_n,
                                 std::uint32_t group) {
  for (std::uint64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < out_n;
       i += static_cast<std::uint64_t>(blockDim.x) * gridDim.x) {
    float acc = 0;
    for (std::uint32_t k = 0; k < group; ++k) acc += static_cast<float>(load(t, s, k * out_n + i));
    store(t, d, i, acc);
  }
}

__device__ float round_to(DType t, float g) {
  if (t == DType::Float16) return __half2float(__float2half_rn(g));
  if (t == DType::BFloat16) return __bfloat162float(__float2bfloat16_rn(g));
  return g;
}

// host_data.cc grad_ready + StandInGrads.
__global__ void grads_kernel(void* d, DType t, std::uint64_t n, std::uint64_t key,
                             std::uint64_t first, double quantum, double grad_scale, float ls,
                             float op_scale, bool accumulate, bool inject_inf) {
  for (std::uint64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::uint64_t>(blockDim.x) * gridDim.x) {
    const std::uint64_t k = first + i;
    double g = grad_at(key, k);
    if (quantum > 0) g = nearbyint(g * quantum) / quantum;
    const auto base = static_cast<float>(g * grad_scale);
    const float v = round_to(t, inject_inf && k == 0 ? INFINITY : base * ls * op_scale);
    if (accumulate)
      store(t, d, i, static_cast<float>(load(t, d, i)) + v);
    else
      store(t, d, i, v);
  }
}

__global__ void init_weights_kernel(void* d, DType t, std::uint64_t n, std::uint64_t key) {
  for (std::uint64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::uint64_t>(blockDim.x) * gridDim.x)
    store(t, d, i, 0.25f * grad_at(key, i));
}

__global__ void combined_scale_kernel(const float* norms, std::uint64_t n, double loss_scale,
                                      double clip, float* inv, int* apply) {
  double combined = loss_scale;
  if (norms) {
    double sq = 0;
    for (std::uint64_t i = 0; i < n; ++i) sq += norms[i];
    const double total = sqrt(sq);
    if (clip > 0) {
      const double factor = (total / loss_scale + 1e-6) / clip;
      if (factor > 1) combined *= factor;
    }
  }
  *inv = static_cast<float>(1.0 / combined);
  *apply = combined != 1.0 ? 1 : 0;
}

// training_math.cc adamw_step, element-wise, after the grad's in-place unscale.
__device__ __forceinline__ void adamw_one(float& p, float& m, float& v, float& g, float inv,
                                          int apply, const AdamWArgs& a, float decay) {
  if (apply) g *= inv;
  p *= decay;
  m = a.beta1 * m + (1.0f - a.beta1) * g;
  v = a.beta2 * v + (1.0f - a.beta2) * g * g;
  const float denom = sqrtf(v) / a.bc2_sqrt + a.eps;
  p -= a.step_size * m / denom;
}

__global__ void adamw_kernel(float* p, float* m, float* v, float* g, std::uint64_t n,
                             const float* inv_p, const int* apply_p, AdamWArgs a, void* lp,
                             DType lpt, bool vec4) {
  const float inv = *inv_p;
  const int apply = *apply_p;
  const float decay = 1.0f - a.lr * a.weight_decay;
  const std::uint64_t stride = static_cast<std::uint64_t>(blockDim.x) * gridDim.x;
  const std::uint64_t start = blockIdx.x * blockDim.x + threadIdx.x;
  if (vec4) {
    auto* p4 = reinterpret_cast<float4*>(p);
    auto* m4 = reinterpret_cast<float4*>(m);
    auto* v4 = reinterpret_cast<float4*>(v);
    auto* g4 = reinterpret_cast<float4*>(g);
    for (std::uint64_t i = start; i < n / 4; i += stride) {
      float4 pp = p4[i], mm = m4[i], vv = v4[i], gg = g4[i];
      adamw_one(pp.x, mm.x, vv.x, gg.x, inv, apply, a, decay);
      adamw_one(pp.y, mm.y, vv.y, gg.y, inv, apply, a, decay);
      adamw_one(pp.z, mm.z, vv.z, gg.z, inv, apply, a, decay);
      adamw_one(pp.w, mm.w, vv.w, gg.w, inv, apply, a, decay);
      p4[i] = pp;
      m4[i] = mm;
      v4[i] = vv;
      g4[i] = gg;
      if (lp) {
        store(lpt, lp, 4 * i, pp.x);
        store(lpt, lp, 4 * i + 1, pp.y);
        store(lpt, lp, 4 * i + 2, pp.z);
        store(lpt, lp, 4 * i + 3, pp.w);
      }
    }
    return;
  }
  for (std::uint64_t i = start; i < n; i += stride) {
    adamw_one(p[i], m[i], v[i], g[i], inv, apply, a, decay);
    if (lp) store(lpt, lp, i, p[i]);
  }
}

__global__ void any_nonzero_kernel(const void* x, DType t, std::uint64_t n, int* flag) {
  for (std::uint64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::uint64_t>(blockDim.x) * gridDim.x)
    if (load(t, x, i) != 0) *flag = 1;
}

__global__ void busy_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

}  // namespace

cudaError_t launch_convert(void* dst, DType dt, const void* src, DType st, std::uint64_t n,
                           double scale, bool accumulate, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  if (src && !accumulate && scale == 1.0 && dt == st && src != dst)
    return cudaMemcpyAsync(dst, src, n * dtype_size(dt), cudaMemcpyDefault, s);
  if (!src && !accumulate) return cudaMemsetAsync(dst, 0, n * dtype_size(dt), s);
  convert_kernel<<<blocks_for(n), kThreads, 0, s>>>(dst, dt, src, st, n, scale, accumulate);
  return cudaGetLastError();
}

cudaError_t launch_local_sum(void* dst, const void* src, DType t, std::uint64_t out_n,
                             std::uint32_t group, cudaStream_t s) {
  if (out_n == 0) return cudaSuccess;
  local_sum_kernel<<<blocks_for(out_n), kThreads, 0, s>>>(dst, src, t, out_n, group);
  return cudaGetLastError();
}

cudaError_t launch_grads(void* dst, DType t, std::uint64_t n, std::uint64_t key,
                         std::uint64_t first, double quantum, double grad_scale, float loss_scale,
                         float op_scale, bool accumulate, bool inject_inf, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  grads_kernel<<<blocks_for(n), kThreads, 0, s>>>(dst, t, n, key, first, quantum, grad_scale,
                                                  loss_scale, op_scale, accumulate, inject_inf);
  return cudaGetLastError();
}

cudaError_t launch_init_weights(void* dst, DType t, std::uint64_t n, std::uint64_t key,
                                cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  init_weights_kernel<<<blocks_for(n), kThreads, 0, s>>>(dst, t, n, key);
  return cudaGetLastError();
}

cudaError_t launch_combined_scale(const float* norms, std::uint64_t n_norms, double loss_scale,
                                  double clip, float* inv, int* apply, cudaStream_t s) {
  combined_scale_kernel<<<1, 1, 0, s>>>(norms, n_norms, loss_scale, clip, inv, apply);
  return cudaGetLastError();
}

cudaError_t launch_adamw(float* p, float* m, float* v, float* g, std::uint64_t n, const float* inv,
                         const int* apply, const AdamWArgs& a, void* lp, DType lp_dtype,
                         cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  const auto aligned = [](const void* x) { return reinterpret_cast<std::uintptr_t>(x) % 16 == 0; };
  const bool vec4 = n % 4 == 0 && aligned(p) && aligned(m) && aligned(v) && aligned(g);
  adamw_kernel<<<blocks_for(vec4 ? n / 4 : n), kThreads, 0, s>>>(p, m, v, g, n, inv, apply, a, lp,
                                                                 lp_dtype, vec4);
  return cudaGetLastError();
}

cudaError_t launch_any_nonzero(const void* x, DType t, std::uint64_t n, int* flag, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  any_nonzero_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, t, n, flag);
  return cudaGetLastError();
}

cudaError_t launch_busy(std::uint64_t cycles, cudaStream_t s) {
  busy_kernel<<<1, 1, 0, s>>>(static_cast<long long>(cycles));
  return cudaGetLastError();
}

}  // namespace zerosim::cuda
