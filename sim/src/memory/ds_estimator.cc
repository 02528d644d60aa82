// DeepSpeed's memory estimators (deepspeed_zero.md §8), as exact integer/rational arithmetic.
//
// Python evaluates e.g. `total_params * max(4 * total_gpus, 16) * additional_buffer_factor` and
// `int(18 * total_params / total_gpus)` in floats; the spec states them as exact math (floor),
// which is what this file computes. For the zero3 `gpus_factor = 1 / num_nodes` terms the rational
// value k/n is used, so max(4g, k/n) is compared exactly as 4g·n vs k.
#include "zerosim/ds_estimator.h"

#include <cmath>

#include "memory/exact_math.h"

namespace zerosim {

namespace {

using memory::U128;

constexpr const char* kZero2 = "estimate_zero2_model_states_mem_needs";
constexpr const char* kZero3 = "estimate_zero3_model_states_mem_needs";

// The argument checks both estimators share: "" when the arguments are valid, else the first
// problem.
std::string check_args(const char* fn, std::uint64_t gpus_per_node, std::uint64_t nodes, double f) {
  const std::string prefix = std::string(fn) + ": ";
  if (gpus_per_node == 0) return prefix + "num_gpus_per_node: expected an integer >= 1, got 0";
  if (nodes == 0) return prefix + "num_nodes: expected an integer >= 1, got 0";
  if (!std::isfinite(f) || f < 0)
    return prefix + "additional_buffer_factor: expected a finite number >= 0, got " +
           std::to_string(f);
  return {};
}

// floor(k·P / N) for the GPU terms (int(k * total_params / total_gpus) in DeepSpeed).
Bytes per_gpu(std::uint64_t k, Elements p, U128 total_gpus) {
  return memory::clamp64(memory::mul128(k, p) / total_gpus);
}

// floor(P · (k / nodes) · f): the zero3 CPU terms scaled by gpus_factor = 1 / num_nodes.
Bytes per_node(std::uint64_t k, Elements p, std::uint64_t nodes, double f) {
  return memory::floor_scaled(memory::mul128(k, p), nodes, f);
}

}  // namespace

EstimatorResult estimate_zero2_model_states_mem_needs(Elements total_params,
                                                      std::uint64_t num_gpus_per_node,
                                                      std::uint64_t num_nodes, bool cpu_offload,
                                                      double additional_buffer_factor) {
  EstimatorResult r;
  r.error = check_args(kZero2, num_gpus_per_node, num_nodes, additional_buffer_factor);
  if (!r.ok()) return r;
  const U128 total_gpus = memory::mul128(num_nodes, num_gpus_per_node);
  const double f = additional_buffer_factor;
  const Bytes two_p = memory::sat_mul(2, total_params);
  if (cpu_offload) {
    r.gpu = two_p;
    U128 k = memory::mul128(4, total_gpus);
    if (k < 16) k = 16;
    r.cpu = memory::floor_scaled(memory::mul128(total_params, k), 1, f);
  } else {
    // 2 = fp16 params; 18 = 2 fp16 grads + 4 fp32 grads + 4 fp32 params + 8 Adam states, over N.
    r.gpu = memory::sat_add(two_p, per_gpu(18, total_params, total_gpus));
    r.cpu = memory::floor_scaled(memory::mul128(memory::mul128(total_params, 4), num_gpus_per_node),
                                 1, f);
  }
  return r;
}

EstimatorResult estimate_zero3_model_states_mem_needs(Elements total_params,
                                                      Elements largest_layer_params,
                                                      std::uint64_t num_gpus_per_node,
                                                      std::uint64_t num_nodes, bool cpu_offload,
                                                      bool cpu_offload_params, bool zero_init,
                                                      double additional_buffer_factor) {
  EstimatorResult r;
  r.error = check_args(kZero3, num_gpus_per_node, num_nodes, additional_buffer_factor);
  if (!r.ok()) return r;
  const U128 total_gpus = memory::mul128(num_nodes, num_gpus_per_node);
  const double f = additional_buffer_factor;
  const Elements p = total_params;
  r.largest_layer_memory = memory::sat_mul(4, largest_layer_params);
  // P · max(4g, k/n) · f, comparing 4g·n with k exactly.
  auto cpu_max = [&](std::uint64_t k) {
    if (memory::mul128(memory::mul128(4, num_gpus_per_node), num_nodes) >= k)
      return memory::floor_scaled(memory::mul128(memory::mul128(p, 4), num_gpus_per_node), 1, f);
    return per_node(k, p, num_nodes, f);
  };
  if (cpu_offload && cpu_offload_params) {
    r.gpu = r.largest_layer_memory;
    r.cpu = zero_init ? per_node(18, p, num_nodes, f) : cpu_max(18);
  } else if (cpu_offload) {
    r.gpu = memory::sat_add(r.largest_layer_memory, per_gpu(2, p, total_gpus));
    r.cpu = zero_init ? per_node(16, p, num_nodes, f) : cpu_max(16);
  } else {
    r.gpu = memory::sat_add(r.largest_layer_memory, per_gpu(18, p, total_gpus));
    r.cpu =
        zero_init
            ? memory::floor_scaled(
                  memory::mul128(memory::mul128(largest_layer_params, 4), num_gpus_per_node), 1, f)
            : memory::floor_scaled(memory::mul128(memory::mul128(p, 4), num_gpus_per_node), 1, f);
  }
  return r;
}

}  // namespace zerosim
