// DeepSpeed's memory estimators (deepspeed_zero.md §8): every number of worked example G20 and the
// estimator line of G13, exactly; exact arithmetic for huge P; invalid arguments.
#include "zerosim/ds_estimator.h"

#include <gtest/gtest.h>

namespace zerosim {
namespace {

constexpr Elements kP = 2851000000;  // G20 (t5-3b-sized model), L = 32e6

TEST(DsEstimatorZero2, G20EightGpusOneNode) {
  auto off = estimate_zero2_model_states_mem_needs(kP, 8, 1, /*cpu_offload=*/true);
  ASSERT_TRUE(off.ok()) << off.error;
  EXPECT_EQ(off.gpu, 5702000000u);
  EXPECT_EQ(off.cpu, 136848000000u);  // P·max(32, 16)·1.5
  EXPECT_EQ(format_gib(off.gpu), "5.31 GiB");
  EXPECT_EQ(format_gib(off.cpu), "127.45 GiB");
  auto on = estimate_zero2_model_states_mem_needs(kP, 8, 1, /*cpu_offload=*/false);
  EXPECT_EQ(on.gpu, 12116750000u);             // 2P + floor(18P/8)
  EXPECT_EQ(format_gib(on.gpu), "11.28 GiB");  // the docs' 15.93 is the pre-June-2024 formula
  EXPECT_EQ(on.cpu, 136848000000u);
  EXPECT_EQ(on.largest_layer_memory, 0u);
}

TEST(DsEstimatorZero3, G20AllSixRows) {
  constexpr Elements kL = 32000000;
  auto full = estimate_zero3_model_states_mem_needs(kP, kL, 8, 1, true, true, true);
  EXPECT_EQ(full.largest_layer_memory, 128000000u);
  EXPECT_EQ(format_gib(full.largest_layer_memory), "0.12 GiB");
  EXPECT_EQ(full.cpu, 76977000000u);
  EXPECT_EQ(format_gib(full.cpu), "71.69 GiB");
  EXPECT_EQ(full.gpu, 128000000u);
  auto full_cold = estimate_zero3_model_states_mem_needs(kP, kL, 8, 1, true, true, false);
  EXPECT_EQ(full_cold.cpu, 136848000000u);
  EXPECT_EQ(full_cold.gpu, 128000000u);
  auto opt = estimate_zero3_model_states_mem_needs(kP, kL, 8, 1, true, false, true);
  EXPECT_EQ(opt.cpu, 68424000000u);
  EXPECT_EQ(format_gib(opt.cpu), "63.72 GiB");
  EXPECT_EQ(opt.gpu, 840750000u);
  EXPECT_EQ(format_gib(opt.gpu), "0.78 GiB");
  auto opt_cold = estimate_zero3_model_states_mem_needs(kP, kL, 8, 1, true, false, false);
  EXPECT_EQ(opt_cold.cpu, 136848000000u);
  EXPECT_EQ(opt_cold.gpu, 840750000u);
  auto none = estimate_zero3_model_states_mem_needs(kP, kL, 8, 1, false, false, true);
  EXPECT_EQ(none.cpu, 1536000000u);
  EXPECT_EQ(format_gib(none.cpu), "1.43 GiB");
  EXPECT_EQ(none.gpu, 6542750000u);
  EXPECT_EQ(format_gib(none.gpu), "6.09 GiB");
  auto none_cold = estimate_zero3_model_states_mem_needs(kP, kL, 8, 1, false, false, false);
  EXPECT_EQ(none_cold.cpu, 136848000000u);
  EXPECT_EQ(none_cold.gpu, 6542750000u);
}

TEST(DsEstimatorZero2, G20TwoNodes) {
  auto on = estimate_zero2_model_states_mem_needs(1000000000, 8, 2, false);
  EXPECT_EQ(on.gpu, 3125000000u);
  EXPECT_EQ(on.cpu, 48000000000u);
  auto off = estimate_zero2_model_states_mem_needs(1000000000, 8, 2, true);
  EXPECT_EQ(off.gpu, 2000000000u);
  EXPECT_EQ(off.cpu, 96000000000u);  // P·max(64, 16)·1.5
}

TEST(DsEstimatorZero3, G20TwoNodes) {
  auto none =
      estimate_zero3_model_states_mem_needs(1000000000, 100000000, 8, 2, false, false, true);
  EXPECT_EQ(none.gpu, 1525000000u);
  EXPECT_EQ(none.cpu, 4800000000u);
  auto full_cold =
      estimate_zero3_model_states_mem_needs(1000000000, 100000000, 8, 2, true, true, false);
  EXPECT_EQ(full_cold.gpu, 400000000u);
  EXPECT_EQ(full_cold.cpu, 48000000000u);  // P·max(32, 18/2)·1.5
}

TEST(DsEstimatorZero2, G13EstimatorLine) {
  // 1000 params x 1e6, W = 8, no offload: 2P + floor(18P/8) = 4.25e9 B (3.96 GiB).
  auto r = estimate_zero2_model_states_mem_needs(1000000000, 8, 1, false);
  EXPECT_EQ(r.gpu, 4250000000u);
  EXPECT_EQ(format_gib(r.gpu), "3.96 GiB");
}

TEST(DsEstimator, ExactForHugeModels) {
  // P = 1e15, N = 7: 18P = 1.8e16 is beyond 2^53; the exact floor(18e15 / 7) is ...571.
  auto r = estimate_zero2_model_states_mem_needs(1000000000000000, 7, 1, false);
  EXPECT_EQ(r.gpu, 2000000000000000u + 2571428571428571u);
  EXPECT_EQ(r.cpu, 42000000000000000u);  // P·4·7·1.5
  auto big = estimate_zero2_model_states_mem_needs(1000000000000000, 8, 1024, true);
  EXPECT_EQ(big.cpu, UINT64_MAX);  // P·32768·1.5 = 4.9152e19 > 2^64: saturates, never wraps
  EXPECT_EQ(big.gpu, 2000000000000000u);
}

TEST(DsEstimator, RationalNodeFactorIsExact) {
  // gpus_factor = 1/3: exact P·18/3·1.5 = 27e9 (Python's floats give 26999999999).
  auto r = estimate_zero3_model_states_mem_needs(3000000000, 1000, 1, 3, true, true, true);
  EXPECT_EQ(r.cpu, 27000000000u);
  // A factor that is not a short binary fraction: 1.1 is 1.100000000000000088817841970012523...
  auto f = estimate_zero2_model_states_mem_needs(1000000000, 1, 1, false, 1.1);
  EXPECT_EQ(f.cpu, 4400000000u);  // floor(4e9 · 1.1000000000000000888) = 4400000000
}

TEST(DsEstimator, InvalidArgumentsExplainThemselves) {
  auto a = estimate_zero2_model_states_mem_needs(1000, 0, 1, false);
  EXPECT_FALSE(a.ok());
  EXPECT_EQ(
      a.error,
      "estimate_zero2_model_states_mem_needs: num_gpus_per_node: expected an integer >= 1, got 0");
  EXPECT_EQ(a.gpu, 0u);
  auto b = estimate_zero3_model_states_mem_needs(1000, 10, 8, 0);
  EXPECT_EQ(b.error,
            "estimate_zero3_model_states_mem_needs: num_nodes: expected an integer >= 1, got 0");
  auto c = estimate_zero2_model_states_mem_needs(1000, 1, 1, true, -1.0);
  EXPECT_NE(c.error.find("additional_buffer_factor: expected a finite number >= 0"),
            std::string::npos);
}

}  // namespace
}  // namespace zerosim
