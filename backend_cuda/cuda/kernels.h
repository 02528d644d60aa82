// The CUDA backend's kernels (kernels.cu), behind plain launchers so that the .cc files compile
// with the host compiler and only this one file goes through nvcc (CI's build time). Every
// launcher returns the launch's cudaError_t (cudaGetLastError) for the caller's check. Numerics
// follow the host backend's contract (training_math.h): fp32 arithmetic, round-to-nearest-even
// casts to fp16/bf16, and kernels.cu is compiled with -fmad=false so AdamW gives the CPU
// reference's bits.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "zerosim/units.h"

namespace zerosim::cuda {

/// dst[i] (=|+=) src[i] x scale for n elements; src null: zeros. dst and src may be the same.
cudaError_t launch_convert(void* dst, DType dt, const void* src, DType st, std::uint64_t n,
                           double scale, bool accumulate, cudaStream_t s);
/// Sum of `group` consecutive slots of `out_n` elements of src into dst (reduce-scatter stand-in).
cudaError_t launch_local_sum(void* dst, const void* src, DType t, std::uint64_t out_n,
                             std::uint32_t group, cudaStream_t s);
/// The stand-in backward's gradient: dst[i] (=|+=) round(grad(key, first + i) quantised x
/// grad_scale) x loss_scale x op_scale (float, that order), in dst's dtype; an inf at global
/// index 0 when `inject_inf`.
cudaError_t launch_grads(void* dst, DType t, std::uint64_t n, std::uint64_t key,
                         std::uint64_t first, double quantum, double grad_scale, float loss_scale,
                         float op_scale, bool accumulate, bool inject_inf, cudaStream_t s);
/// The model's initial weights: 0.25 x grad(key, i) in dst's dtype.
cudaError_t launch_init_weights(void* dst, DType t, std::uint64_t n, std::uint64_t key,
                                cudaStream_t s);
/// *inv = 1 / combined_scale(loss_scale, sqrt(sum norms), clip) (norms null: 1 / loss_scale),
/// *apply = combined != 1. One thread, the host's order of summation.
cudaError_t launch_combined_scale(const float* norms, std::uint64_t n_norms, double loss_scale,
                                  double clip, float* inv, int* apply, cudaStream_t s);
struct AdamWArgs {
  float lr, beta1, beta2, eps, weight_decay;
  float step_size;  ///< lr / (1 - beta1^t)
  float bc2_sqrt;   ///< sqrt(1 - beta2^t)
};
/// Fused AdamW on an fp32 shard: g *= *inv (when *apply), then adamw_step's update of p, m, v;
/// lp (may be null) receives p cast to lp_dtype. float4 loads when every pointer is 16-byte
/// aligned.
cudaError_t launch_adamw(float* p, float* m, float* v, float* g, std::uint64_t n, const float* inv,
                         const int* apply, const AdamWArgs& a, void* lp, DType lp_dtype,
                         cudaStream_t s);
/// *flag = 1 when any of the n elements is non-zero (the overflow all-reduce's result).
cudaError_t launch_any_nonzero(const void* x, DType t, std::uint64_t n, int* flag, cudaStream_t s);
/// Spins for about `cycles` clock cycles on one block (a compute op with no GEMM shape).
cudaError_t launch_busy(std::uint64_t cycles, cudaStream_t s);

}  // namespace zerosim::cuda
