// The synthetic gradients and initial weights of data mode (training_math.h, host_data.cc), as
// host-and-device functions: the CUDA kernels compute exactly the host backend's values from the
// same (seed, rank, step, micro-step, param) key. tests/unit/cuda_plan_test.cc checks these
// against exec::synthetic_grad and exec::initial_weight on the CPU.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define ZEROSIM_HD __host__ __device__ __forceinline__
#else
#define ZEROSIM_HD inline
#endif

namespace zerosim::cuda {

ZEROSIM_HD std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// SyntheticGrads' key (training_math.cc).
ZEROSIM_HD std::uint64_t grad_key(std::uint64_t seed, std::uint32_t rank, std::uint32_t step,
                                  std::uint32_t micro_step, std::uint32_t param) {
  std::uint64_t h = splitmix64(seed);
  h = splitmix64(h ^ ((std::uint64_t{rank} << 32) | step));
  return splitmix64(h ^ ((std::uint64_t{micro_step} << 32) | param));
}

/// SyntheticGrads::operator(): a value in [-1, 1) exactly representable in float.
ZEROSIM_HD float grad_at(std::uint64_t key, std::uint64_t index) {
  const std::uint64_t h = splitmix64(key ^ index);
  return static_cast<float>(static_cast<std::int64_t>(h >> 40) - (std::int64_t{1} << 23)) *
         (1.0f / static_cast<float>(std::int64_t{1} << 23));
}

/// initial_weight's key (host_data.cc: a salted seed, step and micro-step 0, the buffer as param).
ZEROSIM_HD std::uint64_t weight_key(std::uint64_t seed, std::uint32_t rank, std::uint32_t buffer) {
  return grad_key(splitmix64(seed ^ 0x5EEDull), rank, 0, 0, buffer);
}

}  // namespace zerosim::cuda
