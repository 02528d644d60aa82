// DeepSpeed's own memory estimators, reproduced exactly (shared/docs/deepspeed_zero.md §8), so
// users can see what `estimate_zero2_model_states_mem_needs` / `estimate_zero3_...` would print
// next to zerosim's accounting. All results are bytes.
//
// Arithmetic is exact integer/rational math (floor(18·P/N), P·k·f with f's exact binary value),
// with 128-bit intermediates, so P up to 1e15 never overflows. DeepSpeed computes the same
// expressions in Python floats; both agree whenever the products stay below 2^53 (P < ~5e14 for the
// 18·P terms). Results that exceed 64 bits saturate at UINT64_MAX.
#pragma once

#include <cstdint>
#include <string>

#include "zerosim/units.h"

namespace zerosim {

struct EstimatorResult {
  Bytes cpu = 0;
  Bytes gpu = 0;
  Bytes largest_layer_memory =
      0;  ///< zero3 only: 4·L (fp16 params + fp16 grads of the largest layer)
  /// Non-empty when the arguments have no answer (0 GPUs per node or 0 nodes, a negative or
  /// non-finite factor); all byte counts are then 0. Example: "num_nodes: expected an integer >= 1,
  /// got 0".
  std::string error;
  bool ok() const { return error.empty(); }
};

/// stage_1_and_2.py:3081 (post-June-2024 formula, §8.1). With N = nodes·gpus_per_node:
/// offload: gpu = 2P, cpu = P·max(4N, 16)·f; no offload: gpu = 2P + floor(18P/N), cpu = P·4·g·f.
/// Invalid arguments (num_gpus_per_node or num_nodes 0, factor negative/not finite) set `error`.
EstimatorResult estimate_zero2_model_states_mem_needs(Elements total_params,
                                                      std::uint64_t num_gpus_per_node = 1,
                                                      std::uint64_t num_nodes = 1,
                                                      bool cpu_offload = true,
                                                      double additional_buffer_factor = 1.5);

/// stage3.py:3744 (§8.2). With N = n·g, gf = 1/n, LLM = 4·L: full offload: gpu = LLM,
/// cpu = P·18·gf·f (zero_init) or P·max(4g, 18·gf)·f; optimizer offload only: gpu = LLM +
/// floor(2P/N), cpu = P·16·gf·f or P·max(4g, 16·gf)·f; no offload: gpu = LLM + floor(18P/N), cpu =
/// L·4·g·f (zero_init) or P·4·g·f. Same failure rules as the zero2 estimator.
EstimatorResult estimate_zero3_model_states_mem_needs(
    Elements total_params, Elements largest_layer_params, std::uint64_t num_gpus_per_node = 1,
    std::uint64_t num_nodes = 1, bool cpu_offload = true, bool cpu_offload_params = true,
    bool zero_init = true, double additional_buffer_factor = 1.5);

}  // namespace zerosim
