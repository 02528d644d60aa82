// DeepSpeed's own memory estimators, reproduced exactly (shared/docs/deepspeed_zero.md §8), so users
// can see what `estimate_zero2_model_states_mem_needs` / `estimate_zero3_...` would print next to
// zerosim's accounting. All results are bytes.
#pragma once

#include <cstdint>

#include "zerosim/units.h"

namespace zerosim {

struct EstimatorResult {
  Bytes cpu = 0;
  Bytes gpu = 0;
  Bytes largest_layer_memory = 0;  ///< zero3 only: 4·L
};

/// stage_1_and_2.py:3081 (post-June-2024 formula).
EstimatorResult estimate_zero2_model_states_mem_needs(Elements total_params,
                                                      std::uint64_t num_gpus_per_node = 1,
                                                      std::uint64_t num_nodes = 1,
                                                      bool cpu_offload = true,
                                                      double additional_buffer_factor = 1.5);

/// stage3.py:3744.
EstimatorResult estimate_zero3_model_states_mem_needs(Elements total_params, Elements largest_layer_params,
                                                      std::uint64_t num_gpus_per_node = 1,
                                                      std::uint64_t num_nodes = 1,
                                                      bool cpu_offload = true,
                                                      bool cpu_offload_params = true,
                                                      bool zero_init = true,
                                                      double additional_buffer_factor = 1.5);

}  // namespace zerosim
