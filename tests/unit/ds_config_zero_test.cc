// zero_optimization: every key with its pydantic alias, overlap_comm resolution, offload blocks,
// deprecated fields, "auto" handling, unknown-key hints and each bad-value rule's exact message.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "zerosim/ds_config.h"

namespace zerosim {
namespace {

using Strings = std::vector<std::string>;

/// Loads `{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {<zero>}}`.
Result<DsConfig> zero(const std::string& body, const AutoValues& a = AutoValues{}) {
  return load_ds_config_text(
      R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {)" + body + "}}", "ds.json",
      a);
}

std::string diag(const Result<DsConfig>& r) { return r.diagnostics().to_string(); }

TEST(DsConfigZero, EveryAliasSetsTheSameField) {
  struct Case {
    std::string name, alias;
    std::uint64_t ZeroConfig::*field;
  };
  const Case cases[] = {
      {"prefetch_bucket_size", "stage3_prefetch_bucket_size", &ZeroConfig::prefetch_bucket_size},
      {"param_persistence_threshold", "stage3_param_persistence_threshold",
       &ZeroConfig::param_persistence_threshold},
      {"model_persistence_threshold", "stage3_model_persistence_threshold",
       &ZeroConfig::model_persistence_threshold},
      {"max_live_parameters", "stage3_max_live_parameters", &ZeroConfig::max_live_parameters},
      {"max_reuse_distance", "stage3_max_reuse_distance", &ZeroConfig::max_reuse_distance},
      {"module_granularity_threshold", "stage3_module_granularity_threshold",
       &ZeroConfig::module_granularity_threshold},
  };
  for (const auto& c : cases) {
    auto by_name = zero(R"("stage": 3, ")" + c.name + R"(": 1234)");
    auto by_alias = zero(R"("stage": 3, ")" + c.alias + R"(": 4321)");
    ASSERT_TRUE(by_name.ok()) << diag(by_name);
    ASSERT_TRUE(by_alias.ok()) << diag(by_alias);
    EXPECT_EQ(by_name.value().zero.*c.field, 1234u) << c.name;
    EXPECT_EQ(by_alias.value().zero.*c.field, 4321u) << c.alias;
  }
  struct BoolCase {
    std::string name, alias;
    bool ZeroConfig::*field;
  };
  const BoolCase bools[] = {
      {"gather_16bit_weights_on_model_save", "stage3_gather_16bit_weights_on_model_save",
       &ZeroConfig::gather_16bit_weights_on_model_save},
      {"use_all_reduce_for_fetch_params", "stage3_use_all_reduce_for_fetch_params",
       &ZeroConfig::use_all_reduce_for_fetch_params},
      {"allgather_sequential", "stage3_allgather_sequential", &ZeroConfig::allgather_sequential},
  };
  for (const auto& c : bools) {
    auto by_name = zero(R"("stage": 2, ")" + c.name + R"(": true)");
    auto by_alias = zero(R"("stage": 2, ")" + c.alias + R"(": true)");
    ASSERT_TRUE(by_name.ok() && by_alias.ok()) << diag(by_name) << diag(by_alias);
    EXPECT_TRUE(by_name.value().zero.*c.field) << c.name;
    EXPECT_TRUE(by_alias.value().zero.*c.field) << c.alias;
  }
}

TEST(DsConfigZero, BothSpellingsOfOneFieldAreAnError) {
  auto r = zero(R"("stage": 3, "prefetch_bucket_size": 7, "stage3_prefetch_bucket_size": 8)");
  EXPECT_EQ(diag(r),
            "ds.json: /zero_optimization/prefetch_bucket_size: duplicate of "
            "\"stage3_prefetch_bucket_size\" (the "
            "same DeepSpeed field under its other name); pydantic rejects it as an extra input\n");
}

TEST(DsConfigZero, PlainKeysAreRead) {
  auto r = zero(R"("stage": 2, "contiguous_gradients": false, "reduce_scatter": false,
                  "reduce_bucket_size": 5e7, "use_multi_rank_bucket_allreduce": false,
                  "allgather_bucket_size": 1e8, "round_robin_gradients": true, "sub_group_size": 1e6,
                  "ignore_unused_parameters": false, "load_from_fp32_weights": false,
                  "elastic_checkpoint": false, "memory_efficient_linear": true)");
  ASSERT_TRUE(r.ok()) << diag(r);
  const ZeroConfig& z = r.value().zero;
  EXPECT_FALSE(z.contiguous_gradients);
  EXPECT_FALSE(z.reduce_scatter);
  EXPECT_EQ(z.reduce_bucket_size, 50000000u);
  EXPECT_FALSE(z.use_multi_rank_bucket_allreduce);
  EXPECT_EQ(z.allgather_bucket_size, 100000000u);
  EXPECT_TRUE(z.round_robin_gradients);
  EXPECT_EQ(z.sub_group_size, 1000000u);
  EXPECT_FALSE(z.ignore_unused_parameters);
}

TEST(DsConfigZero, OverlapCommResolution) {
  auto s3 = zero(R"("stage": 3)");
  ASSERT_TRUE(s3.ok());
  EXPECT_TRUE(s3.value().zero.overlap_comm);
  EXPECT_EQ(s3.value().zero.overlap_comm_set, std::nullopt);
  auto s2 = zero(R"("stage": 2)");
  EXPECT_FALSE(s2.value().zero.overlap_comm);
  auto s3off = zero(R"("stage": 3, "overlap_comm": false)");
  EXPECT_FALSE(s3off.value().zero.overlap_comm);
  EXPECT_EQ(s3off.value().zero.overlap_comm_set, std::optional<bool>(false));
  auto s1on = zero(R"("stage": 1, "overlap_comm": true)");
  EXPECT_TRUE(s1on.value().zero.overlap_comm);
  auto null3 = zero(R"("stage": 3, "overlap_comm": null)");
  EXPECT_TRUE(null3.value().zero.overlap_comm);
  EXPECT_EQ(null3.value().zero.overlap_comm_set, std::nullopt);
}

TEST(DsConfigZero, OffloadBlocks) {
  auto r = zero(R"("stage": 3,
      "offload_optimizer": {"device": "nvme", "nvme_path": "/local_nvme", "buffer_count": 8,
                            "pin_memory": true, "pipeline_read": true, "pipeline_write": true,
                            "fast_init": true, "ratio": 0.25},
      "offload_param": {"device": "cpu", "buffer_count": 6, "buffer_size": 2e8, "max_in_cpu": 3e9})");
  ASSERT_TRUE(r.ok()) << diag(r);
  const ZeroConfig& z = r.value().zero;
  EXPECT_EQ(z.offload_optimizer.device, OffloadDevice::Nvme);
  EXPECT_EQ(z.offload_optimizer.nvme_path, "/local_nvme");
  EXPECT_EQ(z.offload_optimizer.buffer_count, 8u);
  EXPECT_TRUE(z.offload_optimizer.pin_memory);
  EXPECT_TRUE(z.offload_optimizer.pipeline_read);
  EXPECT_TRUE(z.offload_optimizer.pipeline_write);
  EXPECT_TRUE(z.offload_optimizer.fast_init);
  EXPECT_DOUBLE_EQ(z.offload_optimizer.ratio, 0.25);
  EXPECT_EQ(z.offload_param.device, OffloadDevice::Cpu);
  EXPECT_TRUE(z.offload_param.pin_memory);  // not written: edaa722's default, True
  EXPECT_EQ(z.offload_param.buffer_count, 6u);
  EXPECT_EQ(z.offload_param.buffer_size, 200000000u);
  EXPECT_EQ(z.offload_param.max_in_cpu, 3000000000u);
  auto null_block = zero(R"("stage": 2, "offload_optimizer": null)");
  ASSERT_TRUE(null_block.ok());
  EXPECT_FALSE(null_block.value().zero.offload_optimizer.enabled());
}

TEST(DsConfigZero, OffloadParamIsIgnoredBelowStage3) {
  auto r = zero(R"("stage": 2, "offload_param": {"device": "cpu"})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().zero.offload_param.device, OffloadDevice::None);
  EXPECT_EQ(
      r.value().notes.front(),
      "offload_param is ignored below stage 3: the stage 1/2 optimizer never offloads parameters");
}

TEST(DsConfigZero, AllgatherSequentialForcesPrefetchOfOne) {
  auto r = zero(R"("stage": 3, "stage3_allgather_sequential": true, "overlap_comm": true)");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().zero.prefetch_bucket_size, 1u);
  EXPECT_EQ(r.value().notes,
            (Strings{"stage3_allgather_sequential: DeepSpeed sets stage3_prefetch_bucket_size "
                     "to 1 (one all-gather per parameter)"}));
}

TEST(DsConfigZero, DeprecatedFieldsMoveToTheirReplacement) {
  auto r = zero(
      R"("stage": 3, "cpu_offload": true, "cpu_offload_param": true, "cpu_offload_use_pin_memory": true)");
  ASSERT_TRUE(r.ok()) << diag(r);
  EXPECT_EQ(r.value().zero.offload_optimizer.device, OffloadDevice::Cpu);
  EXPECT_EQ(r.value().zero.offload_param.device, OffloadDevice::Cpu);
  EXPECT_EQ(
      Strings(r.value().notes.begin(), r.value().notes.begin() + 3),
      (Strings{
          "cpu_offload is deprecated: DeepSpeed reads it as offload_optimizer.device = \"cpu\"",
          "cpu_offload_param is deprecated: DeepSpeed reads it as offload_param.device = \"cpu\"",
          "cpu_offload_use_pin_memory is deprecated and has no effect: set pin_memory in "
          "offload_optimizer or offload_param"}));
}

TEST(DsConfigZero, DeprecatedAndReplacingParameterTogetherAreRefused) {
  auto r = zero(R"("stage": 2, "cpu_offload": false, "offload_optimizer": {"device": "cpu"})");
  EXPECT_EQ(diag(r),
            "ds.json: /zero_optimization/cpu_offload: DeepSpeed refuses this config: Cannot "
            "provide deprecated "
            "parameter 'cpu_offload' and replacing parameter 'offload_optimizer' together "
            "(deepspeed/runtime/config_utils.py)\n");
  auto g = zero(R"("stage": 3, "stage3_gather_fp16_weights_on_model_save": true,
                  "gather_16bit_weights_on_model_save": true)");
  EXPECT_EQ(diag(g),
            "ds.json: /zero_optimization/stage3_gather_fp16_weights_on_model_save: DeepSpeed "
            "refuses this config: "
            "Cannot provide deprecated parameter 'stage3_gather_fp16_weights_on_model_save' and "
            "replacing "
            "parameter 'gather_16bit_weights_on_model_save' together "
            "(deepspeed/runtime/config_utils.py)\n");
}

TEST(DsConfigZero, DeprecatedBooleanForm) {
  auto r = load_ds_config_text(R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": true,
                                   "allgather_size": 4e8})",
                               "ds.json", AutoValues{});
  ASSERT_TRUE(r.ok()) << diag(r);
  EXPECT_EQ(r.value().zero.stage, 1);
  EXPECT_EQ(r.value().zero.allgather_bucket_size, 400000000u);
  EXPECT_EQ(r.value().notes.front(),
            "\"zero_optimization\": true is DeepSpeed's deprecated form: stage 1, "
            "allgather_bucket_size from "
            "top-level allgather_size");
}

TEST(DsConfigZero, AutoInZeroKeepsDeepSpeedsDefault) {
  auto r = zero(R"("stage": 2, "sub_group_size": "auto", "stage3_prefetch_bucket_size": "auto",
                  "stage3_max_live_parameters": "auto")");
  ASSERT_TRUE(r.ok()) << diag(r);
  EXPECT_EQ(r.value().zero.sub_group_size, 1000000000u);
  EXPECT_EQ(r.value().zero.prefetch_bucket_size, 50000000u);  // HF fills it only for stage 3
  EXPECT_EQ(
      Strings(r.value().notes.begin(), r.value().notes.begin() + 3),
      (Strings{
          "/zero_optimization/sub_group_size is \"auto\": DeepSpeed drops \"auto\" here and keeps "
          "the default 1000000000",
          "/zero_optimization/stage3_prefetch_bucket_size is \"auto\": DeepSpeed drops \"auto\" "
          "here "
          "and keeps the default 50000000",
          "/zero_optimization/stage3_max_live_parameters is \"auto\": DeepSpeed drops \"auto\" "
          "here "
          "and keeps the default 1000000000"}));
}

TEST(DsConfigZero, ReduceBucketAutoUsesHiddenSizeAtAnyStage) {
  AutoValues a;
  a.hidden_size = 768;
  auto r = zero(R"("stage": 1, "reduce_bucket_size": "auto")", a);
  ASSERT_TRUE(r.ok()) << diag(r);
  EXPECT_EQ(r.value().zero.reduce_bucket_size, 589824u);
}

TEST(DsConfigZero, UnknownKeysAreErrorsWithHints) {
  auto r = zero(R"("stage": 2, "reduce_bucket_sise": 5, "grad_hooks": true)");
  EXPECT_EQ(diag(r),
            "ds.json: /zero_optimization/grad_hooks: unknown key \"grad_hooks\"\n"
            "ds.json: /zero_optimization/reduce_bucket_sise: unknown key \"reduce_bucket_sise\" "
            "(did you mean "
            "\"reduce_bucket_size\"?)\n");
  auto o = zero(R"("stage": 2, "offload_optimizer": {"device": "cpu", "pin_memroy": true})");
  EXPECT_EQ(diag(o),
            "ds.json: /zero_optimization/offload_optimizer/pin_memroy: unknown key \"pin_memroy\" "
            "(did you mean "
            "\"pin_memory\"?)\n");
  auto p = zero(R"("stage": 3, "offload_param": {"device": "cpu", "ratio": 0.5})");
  EXPECT_EQ(diag(p), "ds.json: /zero_optimization/offload_param/ratio: unknown key \"ratio\"\n");
}

TEST(DsConfigZero, StageMustBeAnInteger0To3) {
  EXPECT_EQ(diag(zero(R"("stage": "three")")),
            "ds.json: /zero_optimization/stage: expected an integer 0..3, got \"three\"\n");
  EXPECT_EQ(diag(zero(R"("stage": 4)")),
            "ds.json: /zero_optimization/stage: expected an integer 0..3, got 4\n");
}

// DeepSpeed's schema: reduce_bucket_size and allgather_bucket_size are ge=0
// (deepspeed/runtime/zero/config.py:113, :132): 0 is a valid config, not an error.
TEST(DsConfigZero, BucketSizesFollowDeepSpeedsSchema) {
  auto r = zero(R"("stage": 2, "reduce_bucket_size": 0, "allgather_bucket_size": 0)");
  ASSERT_TRUE(r.ok()) << diag(r);
  EXPECT_EQ(r.value().zero.reduce_bucket_size, 0u);
  EXPECT_EQ(r.value().zero.allgather_bucket_size, 0u);
  EXPECT_EQ(diag(zero(R"("reduce_bucket_size": -1)")),
            "ds.json: /zero_optimization/reduce_bucket_size: expected an integer >= 0, got -1\n");
  EXPECT_EQ(
      diag(zero(R"("allgather_bucket_size": -1)")),
      "ds.json: /zero_optimization/allgather_bucket_size: expected an integer >= 0, got -1\n");
  EXPECT_EQ(diag(zero(R"("reduce_bucket_size": 2.5)")),
            "ds.json: /zero_optimization/reduce_bucket_size: expected an integer >= 0, got 2.5\n");
}

// module_granularity_threshold is a plain int (config.py:258, no bound); only > 0 enables it
// (parameter_offload.py:198), so a negative value is accepted and behaves as 0.
TEST(DsConfigZero, NegativeModuleGranularityThresholdIsOff) {
  auto r = zero(R"("stage": 3, "stage3_module_granularity_threshold": -5)");
  ASSERT_TRUE(r.ok()) << diag(r);
  EXPECT_EQ(r.value().zero.module_granularity_threshold, 0u);
  bool noted = false;
  for (const auto& n : r.value().notes)
    noted = noted || n.find("module_granularity_threshold = -5") != std::string::npos;
  EXPECT_TRUE(noted);
}

// The range shown is one the value breaks (issue 12: ">= 0, got 1e+30" stated a range 1e30 meets).
TEST(DsConfigZero, AbsurdValuesAreRejectedWithoutOverflow) {
  EXPECT_EQ(diag(zero(R"("reduce_bucket_size": 1e30)")),
            "ds.json: /zero_optimization/reduce_bucket_size: expected an integer "
            "0..18446744073709551615, got 1e+30\n");
  EXPECT_EQ(diag(zero(R"("stage3_max_live_parameters": 1e30)")),
            "ds.json: /zero_optimization/stage3_max_live_parameters: expected an integer "
            "0..18446744073709551615, got 1e+30\n");
}

TEST(DsConfigZero, ThresholdsMustNotBeNegative) {
  EXPECT_EQ(diag(zero(R"("stage3_param_persistence_threshold": -1)")),
            "ds.json: /zero_optimization/stage3_param_persistence_threshold: expected an integer "
            ">= 0, got -1\n");
  EXPECT_EQ(diag(zero(R"("sub_group_size": -5)")),
            "ds.json: /zero_optimization/sub_group_size: expected an integer >= 0, got -5\n");
}

TEST(DsConfigZero, OffloadValueChecks) {
  EXPECT_EQ(diag(zero(R"("stage": 3, "offload_optimizer": {"device": "gpu"})")),
            "ds.json: /zero_optimization/offload_optimizer/device: expected one of \"none\", "
            "\"cpu\", \"nvme\", "
            "got \"gpu\" (did you mean \"cpu\"?)\n");
  EXPECT_EQ(diag(zero(R"("stage": 3, "offload_optimizer": {"device": "cpu", "ratio": 1.5})")),
            "ds.json: /zero_optimization/offload_optimizer/ratio: expected a number in [0, 1], got "
            "1.5\n");
  EXPECT_EQ(
      diag(zero(R"("stage": 3, "offload_param": {"device": "cpu", "buffer_count": -1})")),
      "ds.json: /zero_optimization/offload_param/buffer_count: expected an integer >= 0, got -1\n");
}

TEST(DsConfigZero, TypeErrors) {
  EXPECT_EQ(diag(zero(R"("overlap_comm": "yes")")),
            "ds.json: /zero_optimization/overlap_comm: expected true or false, got \"yes\"\n");
  auto r = load_ds_config_text(R"({"train_micro_batch_size_per_gpu": 1, "zero_optimization": 3})",
                               "ds.json", AutoValues{});
  EXPECT_EQ(diag(r), "ds.json: /zero_optimization: expected an object, got 3\n");
}

// ZeRO++ and MiCS change every number and are not modelled: a warning each (shown on the first
// screen of plan and simulate), not a note among the others.
TEST(DsConfigZero, ZeroPlusPlusKeysAreAcceptedAndWarned) {
  auto r = zero(
      R"("stage": 3, "overlap_comm": true, "zero_quantized_weights": true, "zero_quantized_gradients": true,
                  "zero_hpz_partition_size": 8, "mics_shard_size": 4)");
  ASSERT_TRUE(r.ok()) << diag(r);
  EXPECT_TRUE(r.value().zero.zero_quantized_weights);
  EXPECT_EQ(r.value().zero.zero_hpz_partition_size, 8u);
  EXPECT_TRUE(r.value().zero.mics);
  EXPECT_EQ(r.value().notes, Strings{});
  const Strings& w = r.value().warnings;
  ASSERT_EQ(w.size(), 4u);
  EXPECT_EQ(w[0].rfind("zero_hpz_partition_size = 8 (ZeRO++ hpZ", 0), 0u) << w[0];
  EXPECT_EQ(w[1].rfind("zero_quantized_weights (ZeRO++ qwZ", 0), 0u) << w[1];
  EXPECT_EQ(w[2].rfind("zero_quantized_gradients (ZeRO++ qgZ", 0), 0u) << w[2];
  EXPECT_EQ(w[3].rfind("mics_shard_size = 4 (MiCS", 0), 0u) << w[3];
  // Below stage 3 DeepSpeed reads none of them: no warning.
  auto s2 = zero(R"("stage": 2, "zero_quantized_weights": true, "zero_hpz_partition_size": 8)");
  ASSERT_TRUE(s2.ok()) << diag(s2);
  EXPECT_TRUE(s2.value().warnings.empty());
}

}  // namespace
}  // namespace zerosim
