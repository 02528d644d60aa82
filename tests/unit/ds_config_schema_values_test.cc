// Every value DeepSpeed's own schema allows is accepted with DeepSpeed's behaviour (#13 item 6),
// end to end: the zero_optimization integers DeepSpeed bounds with ge=0
// (deepspeed/runtime/zero/config.py at edaa722: :113 reduce_bucket_size, :132
// allgather_bucket_size, :175 sub_group_size, :215 stage3_prefetch_bucket_size, :221
// stage3_param_persistence_threshold, :228 stage3_model_persistence_threshold, :238
// stage3_max_live_parameters, :244 stage3_max_reuse_distance, :309 zero_hpz_partition_size) take 0
// and simulate at stage 2 and 3, and -1 is one line naming the key. Where 0 means something in
// DeepSpeed's code, the simulation shows it:
//   * sub_group_size 0 and 1 make one sub-group per parameter (stage3.py:1160
//     _create_fp16_sub_groups: `local_sub_group_size >= sub_group_size` closes a group after
//     every parameter), unlike the default 1e9 (one group);
//   * stage3_max_live_parameters only caps the prefetch (partitioned_param_coordinator.py:452-454:
//     max_params_to_prefetch = min(max_live - available, prefetch_bucket)), so 0 runs exactly as
//     stage3_prefetch_bucket_size 0.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_testlib.h"
#include "temp_path.h"

namespace zerosim {
namespace {

using clitest::run_cli;

std::string ds_config(int stage, const std::string& extra) {
  static int counter = 0;
  std::string path =
      testutil::unique_temp_path("schema_values_" + std::to_string(counter++) + ".json");
  std::ofstream(path) << R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},)"
                      << R"( "zero_optimization": {"stage": )" << stage
                      << (extra.empty() ? "" : ", " + extra) << "}}";
  return path;
}

// The summary JSON's steps of `simulate` with that zero_optimization block.
nlohmann::json steps(int stage, const std::string& extra) {
  const auto r = run_cli("simulate --model gpt2-small --gpus 4 --format json --ds-config " +
                         ds_config(stage, extra));
  EXPECT_EQ(r.exit_code, 0) << extra << "\n" << r.err;
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << extra << "\n" << r.out;
  return j.is_discarded() ? nlohmann::json() : j["time"]["steps"];
}

constexpr const char* kGeZeroKeys[] = {
    "reduce_bucket_size",
    "allgather_bucket_size",
    "sub_group_size",
    "stage3_prefetch_bucket_size",
    "stage3_param_persistence_threshold",
    "stage3_model_persistence_threshold",
    "stage3_max_live_parameters",
    "stage3_max_reuse_distance",
    "zero_hpz_partition_size",
};

TEST(DsConfigSchemaValues, ZeroIsAcceptedAndSimulatedAtStage2And3) {
  for (const char* key : kGeZeroKeys) {
    for (int stage : {2, 3}) {
      SCOPED_TRACE(std::string(key) + " at stage " + std::to_string(stage));
      const auto s = steps(stage, "\"" + std::string(key) + "\": 0");
      ASSERT_EQ(s.size(), 2u);  // the warm-up step and the steady step
      EXPECT_GT(s[1]["end_ns"].get<std::int64_t>(), s[1]["start_ns"].get<std::int64_t>());
    }
  }
}

TEST(DsConfigSchemaValues, BelowTheSchemasBoundIsOneLineNamingTheKey) {
  for (const char* key : kGeZeroKeys) {
    SCOPED_TRACE(key);
    const auto r = run_cli("simulate --model gpt2-small --gpus 4 --ds-config " +
                           ds_config(3, "\"" + std::string(key) + "\": -1"));
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(
        r.err.find("/zero_optimization/" + std::string(key) + ": expected an integer >= 0, got -1"),
        std::string::npos)
        << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

TEST(DsConfigSchemaValues, SubGroupSizeZeroIsOneSubGroupPerParameter) {
  const auto zero = steps(3, R"("sub_group_size": 0)");
  EXPECT_EQ(zero, steps(3, R"("sub_group_size": 1)"));
  EXPECT_NE(zero, steps(3, ""));  // the default 1e9: one sub-group, one optimizer step
}

TEST(DsConfigSchemaValues, MaxLiveParametersZeroOnlyStopsThePrefetch) {
  const auto no_live = steps(3, R"("stage3_max_live_parameters": 0)");
  EXPECT_EQ(no_live, steps(3, R"("stage3_prefetch_bucket_size": 0)"));
  EXPECT_NE(no_live, steps(3, ""));
}

}  // namespace
}  // namespace zerosim
