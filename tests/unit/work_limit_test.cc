// Work limits (issue 12): a schedule build whose steps x micro-steps x tensors exceeds the
// documented limit is refused up front with the limit and the product; a ds_config cannot reach
// a micro batch or accumulation count the flags refuse by deriving it from train_batch_size.
#include "zerosim/work_limit.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "cli_testlib.h"
#include "zerosim/ds_config.h"

namespace zerosim {
namespace {

using clitest::run_cli;

TEST(WorkLimit, ProductAtTheLimitPassesAndOneMoreIsRefused) {
  Diagnostics d;
  EXPECT_TRUE(check_schedule_work(1, 1024, 1024, "s.json", d));  // exactly 2^20
  EXPECT_FALSE(d.has_errors());
  EXPECT_FALSE(check_schedule_work(1, 1025, 1024, "s.json", d));
  EXPECT_EQ(d.to_string(),
            "s.json: expected steps x micro-steps x tensors <= 1048576 (the work limit; "
            "ZEROSIM_MAX_SCHEDULE_WORK raises it), got 1 x 1025 x 1024 = 1049600\n");
}

TEST(WorkLimit, ProductsBeyond64BitsAreRefusedNotWrapped) {
  Diagnostics d;
  // 2^32 x 2^32 x 1 wraps to 0 in 64 bits, which would pass a plain comparison.
  EXPECT_FALSE(check_schedule_work(std::uint64_t{1} << 32, std::uint64_t{1} << 32, 1, "f", d));
  EXPECT_EQ(d.to_string(),
            "f: expected steps x micro-steps x tensors <= 1048576 (the work limit; "
            "ZEROSIM_MAX_SCHEDULE_WORK raises it), got 4294967296 x 4294967296 x 1 = more than "
            "2^64\n");
}

TEST(WorkLimit, TheIssuesScheduleIsRefusedBeforeAnythingIsBuilt) {
  // The command that grew past 20 GB until the kernel killed it.
  const auto r =
      run_cli("schedule --model llama2-70b --gpus 64 --stage 3 --steps 10000 --grad-accum 1048576");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err,
            "zerosim: expected steps x micro-steps x tensors <= 1048576 (the work limit; "
            "ZEROSIM_MAX_SCHEDULE_WORK raises it), got 10000 x 1048576 x 723 = 7581204480000\n");
  EXPECT_TRUE(r.out.empty());
}

// plan simulates every row (kDefaultSteps steps each): the same limit, before any row is built.
// A million-tensor param list took 17 GB and more than 30 s before.
TEST(WorkLimit, PlanIsRefusedBeforeAnyRowIsBuilt) {
  const auto r = run_cli("plan --model llama2-70b --gpus 64 --grad-accum 1048576");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err,
            "zerosim plan: expected steps x micro-steps x tensors <= 1048576 (the work limit; "
            "ZEROSIM_MAX_SCHEDULE_WORK raises it), got 2 x 1048576 x 723 = 1516240896\n");
  EXPECT_TRUE(r.out.empty());
}

TEST(WorkLimit, DsConfigCannotDeriveCountsBeyondTheFlagLimits) {
  AutoValues a;
  a.world_size = 1;
  auto gas = load_ds_config_text(
      R"({"train_batch_size": 1099511627776, "train_micro_batch_size_per_gpu": 1})", "ds.json", a);
  EXPECT_EQ(gas.diagnostics().to_string(),
            "ds.json: /train_batch_size: derives gradient_accumulation_steps = 1099511627776; "
            "expected at most 1048576 (zerosim's limit, as for --grad-accum)\n");
  auto micro = load_ds_config_text(
      R"({"train_batch_size": 1099511627776, "gradient_accumulation_steps": 1})", "ds.json", a);
  EXPECT_EQ(micro.diagnostics().to_string(),
            "ds.json: /train_batch_size: derives train_micro_batch_size_per_gpu = 1099511627776; "
            "expected at most 1048576 (zerosim's limit, as for --micro-batch)\n");
  auto written = load_ds_config_text(
      R"({"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 2097152})", "ds.json",
      a);
  EXPECT_EQ(written.diagnostics().to_string(),
            "ds.json: /gradient_accumulation_steps: expected at most 1048576 (zerosim's limit, as "
            "for --grad-accum), got 2097152\n");
  // At the limit: accepted.
  auto edge = load_ds_config_text(
      R"({"train_batch_size": 1048576, "train_micro_batch_size_per_gpu": 1})", "ds.json", a);
  ASSERT_TRUE(edge.ok()) << edge.diagnostics().to_string();
  EXPECT_EQ(edge->grad_accum_steps, kMaxGradAccumSteps);
}

}  // namespace
}  // namespace zerosim
