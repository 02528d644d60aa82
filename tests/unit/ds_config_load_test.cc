// Real ds_config files load unchanged and resolve to the values DeepSpeed (and the Hugging Face
// Trainer, for "auto") would use; plus file handling, syntax errors, defaults and
// default_ds_config.
//
// Fixtures in tests/data/ds/ are verbatim copies (JSON has no comments, so sources are here):
//   hf_ds_config_zero2.json       huggingface/transformers tests/deepspeed/ds_config_zero2.json
//   @00e12e7 hf_ds_config_zero3.json       huggingface/transformers
//   tests/deepspeed/ds_config_zero3.json @e7a1419 hf_ds_config_zero3_bf16.json
//   huggingface/transformers tests/deepspeed/ds_config_zero3_bf16.json @a9c1721
//   dse_zenflow_zf_config.json    deepspeedai/DeepSpeedExamples
//   training/DeepSpeed-ZenFlow/finetuning/zf_config.json @ccee2ba dse_zero3_leaf_qwen3_5.json
//   deepspeedai/DeepSpeedExamples training/expert_parallel/configs/ds_zero3_leaf_qwen3_5.json
//   @44e04e2 dse_tp_hf_ds_config.json      deepspeedai/DeepSpeedExamples
//   training/tensor_parallel/hf_integration/configs/ds_config.json @ff01ee0
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "zerosim/ds_config.h"

namespace zerosim {
namespace {

std::string fixture(const std::string& name) {
  return std::string(ZEROSIM_TEST_DATA_DIR) + "/ds/" + name;
}

using Strings = std::vector<std::string>;

TEST(DsConfigLoad, HfZero2WithAutoValues) {
  AutoValues a;
  a.world_size = 4;
  a.micro_batch = 8;
  a.grad_accum_steps = 2;
  a.precision = DType::BFloat16;
  a.gradient_clipping = 0.5;
  auto r = load_ds_config_file(fixture("hf_ds_config_zero2.json"), a);
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  EXPECT_TRUE(r.diagnostics().empty());
  const DsConfig& c = r.value();
  EXPECT_FALSE(c.fp16);
  EXPECT_TRUE(c.bf16);
  EXPECT_EQ(c.zero.stage, 2);
  EXPECT_EQ(c.zero.offload_optimizer.device, OffloadDevice::Cpu);
  EXPECT_TRUE(c.zero.offload_optimizer.pin_memory);
  EXPECT_EQ(c.zero.offload_optimizer.buffer_count, 4u);
  EXPECT_EQ(c.zero.allgather_bucket_size, 200000000u);
  EXPECT_EQ(c.zero.reduce_bucket_size, 200000000u);
  EXPECT_EQ(c.zero.overlap_comm_set, std::optional<bool>(true));
  EXPECT_TRUE(c.zero.overlap_comm);
  EXPECT_TRUE(c.zero.reduce_scatter);
  EXPECT_TRUE(c.zero.contiguous_gradients);
  EXPECT_EQ(c.micro_batch, 8u);
  EXPECT_EQ(c.grad_accum_steps, 2u);
  EXPECT_EQ(c.train_batch_size, 64u);
  EXPECT_DOUBLE_EQ(c.gradient_clipping, 0.5);
  EXPECT_EQ(c.optimizer_type, "AdamW");
  EXPECT_EQ(c.optimizer_path(), OptimizerPath::ZeroStage1And2);
  EXPECT_EQ(c.comm_dtype(), DType::BFloat16);
  EXPECT_EQ(c.master_dtype(), DType::Float32);
  EXPECT_EQ(c.not_modelled,
            (Strings{"optimizer", "scheduler", "steps_per_print", "wall_clock_breakdown"}));
  EXPECT_EQ(
      c.notes,
      (Strings{"ZeRO-2 never issues a reduce-scatter: each gradient bucket is all-reduced (or "
               "reduced per "
               "owner) and every rank keeps its own slice",
               "allgather_bucket_size has no effect on modern PyTorch: DeepSpeed issues one "
               "all_gather_into_tensor per parameter group",
               "allgather_partitions is read but never used by DeepSpeed: parameters are always "
               "all-gathered"}));
}

TEST(DsConfigLoad, HfZero2WithoutAutoValuesNamesEveryFlag) {
  auto r = load_ds_config_file(fixture("hf_ds_config_zero2.json"), AutoValues{});
  const std::string src = fixture("hf_ds_config_zero2.json");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(
      r.diagnostics().to_string(),
      src + ": /fp16/enabled: is \"auto\" and needs a value: pass --precision\n" + src +
          ": /bf16/enabled: is \"auto\" and needs a value: pass --precision\n" + src +
          ": /gradient_clipping: is \"auto\" and needs a value: pass --gradient-clipping\n" + src +
          ": /train_micro_batch_size_per_gpu: is \"auto\" and needs a value: pass --micro-batch\n" +
          src +
          ": /gradient_accumulation_steps: is \"auto\" and needs a value: pass --grad-accum\n");
}

TEST(DsConfigLoad, HfZero3ResolvesHiddenSizeRules) {
  AutoValues a;
  a.world_size = 8;
  a.micro_batch = 4;
  a.grad_accum_steps = 1;
  a.precision = DType::Float16;
  a.gradient_clipping = 1.0;
  a.hidden_size = 4096;
  auto r = load_ds_config_file(fixture("hf_ds_config_zero3.json"), a);
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  const DsConfig& c = r.value();
  EXPECT_TRUE(c.fp16);
  EXPECT_FALSE(c.bf16);
  EXPECT_DOUBLE_EQ(c.loss_scale, 0.0);
  EXPECT_EQ(c.loss_scale_window, 1000);
  EXPECT_EQ(c.initial_scale_power, 16);
  EXPECT_EQ(c.hysteresis, 2);
  EXPECT_EQ(c.min_loss_scale, 1);
  EXPECT_EQ(c.zero.stage, 3);
  EXPECT_EQ(c.zero.offload_param.device, OffloadDevice::Cpu);
  EXPECT_TRUE(c.zero.offload_param.pin_memory);
  EXPECT_EQ(c.zero.sub_group_size, 100000000000000u);
  EXPECT_EQ(c.zero.reduce_bucket_size, 16777216u);    // 4096^2
  EXPECT_EQ(c.zero.prefetch_bucket_size, 15099494u);  // int(0.9 * 4096^2) = int(15099494.4)
  EXPECT_EQ(c.zero.param_persistence_threshold, 40960u);
  EXPECT_EQ(c.zero.max_live_parameters, 1000000000u);
  EXPECT_EQ(c.zero.max_reuse_distance, 1000000000u);
  EXPECT_TRUE(c.zero.gather_16bit_weights_on_model_save);
  EXPECT_EQ(c.train_batch_size, 32u);
  EXPECT_EQ(c.optimizer_path(), OptimizerPath::ZeroStage3);
  EXPECT_EQ(
      c.notes,
      (Strings{
          "/zero_optimization/reduce_bucket_size \"auto\" = hidden_size^2 = 16777216 (Hugging Face "
          "Trainer rule, hidden size 4096)",
          "/zero_optimization/stage3_prefetch_bucket_size \"auto\" = int(0.9 * hidden_size^2) = "
          "15099494 (Hugging Face Trainer rule, hidden size 4096)",
          "/zero_optimization/stage3_param_persistence_threshold \"auto\" = 10 * hidden_size = "
          "40960 "
          "(Hugging Face Trainer rule, hidden size 4096)",
          "stage3_gather_fp16_weights_on_model_save is deprecated: DeepSpeed reads it as "
          "gather_16bit_weights_on_model_save",
          "stage3_max_live_parameters is not a hard cap: it only limits how much is prefetched"}));
}

TEST(DsConfigLoad, HfZero3WithoutHiddenSizeNeedsAModel) {
  AutoValues a;
  a.micro_batch = 1;
  a.grad_accum_steps = 1;
  a.precision = DType::Float16;
  a.gradient_clipping = 1.0;
  auto r = load_ds_config_text(
      R"({"zero_optimization": {"stage": 3, "reduce_bucket_size": "auto",
          "stage3_prefetch_bucket_size": "auto", "stage3_param_persistence_threshold": "auto"},
          "train_micro_batch_size_per_gpu": 1})",
      "ds.json", a);
  EXPECT_EQ(r.diagnostics().to_string(),
            "ds.json: /zero_optimization/reduce_bucket_size: is \"auto\" and needs a value: pass a "
            "model with a "
            "known hidden size\n"
            "ds.json: /zero_optimization/stage3_prefetch_bucket_size: is \"auto\" and needs a "
            "value: pass a "
            "model with a known hidden size\n"
            "ds.json: /zero_optimization/stage3_param_persistence_threshold: is \"auto\" and needs "
            "a value: "
            "pass a model with a known hidden size\n");
}

TEST(DsConfigLoad, HfZero3Bf16ReadsTheOldBfloat16Block) {
  AutoValues a;
  a.world_size = 2;
  a.micro_batch = 2;
  a.grad_accum_steps = 3;
  a.precision = DType::BFloat16;
  a.gradient_clipping = 1.0;
  a.hidden_size = 1024;
  auto r = load_ds_config_file(fixture("hf_ds_config_zero3_bf16.json"), a);
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  const DsConfig& c = r.value();
  EXPECT_TRUE(c.bf16);
  EXPECT_EQ(c.lp_dtype(), DType::BFloat16);
  EXPECT_EQ(c.zero.sub_group_size, 1000000000u);
  EXPECT_EQ(c.zero.reduce_bucket_size, 1048576u);
  EXPECT_EQ(c.zero.prefetch_bucket_size, 943718u);  // int(943718.4)
  EXPECT_EQ(c.zero.param_persistence_threshold, 10240u);
  EXPECT_EQ(c.train_batch_size, 12u);
  EXPECT_EQ(c.not_modelled,
            (Strings{"optimizer", "scheduler", "steps_per_print", "wall_clock_breakdown"}));
}

TEST(DsConfigLoad, ZenFlowExampleDerivesMicroBatch) {
  AutoValues a;
  a.world_size = 4;
  auto r = load_ds_config_file(fixture("dse_zenflow_zf_config.json"), a);
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  const DsConfig& c = r.value();
  EXPECT_EQ(c.train_batch_size, 32u);
  EXPECT_EQ(c.grad_accum_steps, 1u);
  EXPECT_EQ(c.micro_batch, 8u);  // 32 // 4 // 1
  EXPECT_TRUE(c.bf16);
  EXPECT_EQ(c.zero.stage, 2);
  EXPECT_EQ(c.zero.offload_optimizer.device, OffloadDevice::Cpu);
  EXPECT_DOUBLE_EQ(c.gradient_clipping, 1.0);
  EXPECT_EQ(c.not_modelled, (Strings{"optimizer", "zero_allow_untested_optimizer"}));
  EXPECT_EQ(
      c.notes,
      (Strings{"ZeRO-2 never issues a reduce-scatter: each gradient bucket is all-reduced (or "
               "reduced per owner) and every rank keeps its own slice",
               "zero_optimization.zenflow (ZenFlow) is accepted but not modelled"}));
}

TEST(DsConfigLoad, ZenFlowExampleOnThreeRanksFailsDeepSpeedsBatchAssertion) {
  AutoValues a;
  a.world_size = 3;
  const std::string src = fixture("dse_zenflow_zf_config.json");
  auto r = load_ds_config_file(src, a);
  EXPECT_EQ(
      r.diagnostics().to_string(),
      src +
          ": /train_batch_size: DeepSpeed refuses this config: Check batch related parameters. "
          "train_batch_size is not equal to micro_batch_per_gpu * gradient_acc_step * world_size "
          "32 != 10 * 1 * 3 (deepspeed/runtime/config.py)\n");
}

TEST(DsConfigLoad, Zero3LeafModuleExample) {
  AutoValues a;
  a.world_size = 2;
  auto r = load_ds_config_file(fixture("dse_zero3_leaf_qwen3_5.json"), a);
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  const DsConfig& c = r.value();
  EXPECT_EQ(c.zero.stage, 3);
  EXPECT_EQ(c.zero.param_persistence_threshold, 100000u);
  EXPECT_EQ(c.zero.overlap_comm_set, std::nullopt);
  EXPECT_TRUE(c.zero.overlap_comm);
  EXPECT_EQ(c.micro_batch, 2u);
  EXPECT_EQ(c.train_batch_size, 4u);
  EXPECT_EQ(c.not_modelled, (Strings{"optimizer", "scheduler", "steps_per_print"}));
  EXPECT_EQ(c.notes,
            (Strings{"overlap_comm is unset: DeepSpeed turns it on for stage 3 (the documentation "
                     "says the default is false)"}));
}

TEST(DsConfigLoad, TensorParallelHfExample) {
  AutoValues a;
  a.world_size = 2;
  a.micro_batch = 1;
  a.grad_accum_steps = 4;
  a.precision = DType::BFloat16;
  a.gradient_clipping = 1.0;
  auto r = load_ds_config_file(fixture("dse_tp_hf_ds_config.json"), a);
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  const DsConfig& c = r.value();
  EXPECT_EQ(c.zero.stage, 2);
  EXPECT_TRUE(c.zero.gather_16bit_weights_on_model_save);
  EXPECT_EQ(c.train_batch_size, 8u);
  EXPECT_EQ(c.not_modelled, (Strings{"optimizer", "scheduler", "steps_per_print", "tensor_parallel",
                                     "wall_clock_breakdown"}));
}

TEST(DsConfigLoad, DefaultsOfAMinimalConfig) {
  auto r = load_ds_config_text(R"({"train_micro_batch_size_per_gpu": 1})", "ds.json", AutoValues{});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.diagnostics().empty());
  const DsConfig& c = r.value();
  EXPECT_EQ(c.zero.stage, 0);
  EXPECT_TRUE(c.zero.contiguous_gradients);
  EXPECT_TRUE(c.zero.reduce_scatter);
  EXPECT_EQ(c.zero.reduce_bucket_size, 500000000u);
  EXPECT_TRUE(c.zero.use_multi_rank_bucket_allreduce);
  EXPECT_EQ(c.zero.allgather_bucket_size, 500000000u);
  EXPECT_TRUE(c.zero.allgather_partitions);
  EXPECT_FALSE(c.zero.overlap_comm);
  EXPECT_FALSE(c.zero.round_robin_gradients);
  EXPECT_EQ(c.zero.sub_group_size, 1000000000u);
  EXPECT_EQ(c.zero.prefetch_bucket_size, 50000000u);
  EXPECT_EQ(c.zero.param_persistence_threshold, 100000u);
  EXPECT_EQ(c.zero.model_persistence_threshold, 9223372036854775807u);
  EXPECT_EQ(c.zero.max_live_parameters, 1000000000u);
  EXPECT_EQ(c.zero.max_reuse_distance, 1000000000u);
  EXPECT_EQ(c.zero.zero_hpz_partition_size, 1u);
  EXPECT_EQ(c.zero.mics_shard_size, -1);
  EXPECT_EQ(c.zero.offload_optimizer.device, OffloadDevice::None);
  // pin_memory: True at edaa722 (offload_config.py:45, :75, PR #8207); zerosim had False, the
  // v0.14.4 default, for both releases (found by a review helper).
  EXPECT_TRUE(c.zero.offload_optimizer.pin_memory);
  EXPECT_TRUE(c.zero.offload_param.pin_memory);
  EXPECT_EQ(c.zero.offload_optimizer.buffer_count, 4u);
  EXPECT_EQ(c.zero.offload_param.buffer_count, 5u);
  EXPECT_EQ(c.zero.offload_param.buffer_size, 100000000u);
  EXPECT_EQ(c.zero.offload_param.max_in_cpu, 1000000000u);
  EXPECT_FALSE(c.fp16);
  EXPECT_FALSE(c.bf16);
  EXPECT_TRUE(c.bf16_check_grad_overflow);
  EXPECT_DOUBLE_EQ(c.gradient_clipping, 1.0);
  EXPECT_DOUBLE_EQ(c.gradient_predivide_factor, 1.0);
  EXPECT_FALSE(c.prescale_gradients);
  EXPECT_TRUE(c.managed_gradient_accumulation);
  EXPECT_EQ(c.gradient_allreduce_op, GradientAllreduceOp::Mean);
  EXPECT_EQ(c.micro_batch, 1u);
  EXPECT_EQ(c.grad_accum_steps, 1u);
  EXPECT_EQ(c.train_batch_size, 1u);
  EXPECT_EQ(c.optimizer_path(), OptimizerPath::Plain);
  EXPECT_EQ(c.master_dtype(), DType::Float32);
  EXPECT_EQ(c.comm_dtype(), DType::Float32);
  EXPECT_TRUE(c.notes.empty());
  EXPECT_TRUE(c.not_modelled.empty());
}

TEST(DsConfigLoad, MissingFileAndBadSyntaxAndNonObject) {
  auto missing = load_ds_config_file("/nonexistent/ds.json", AutoValues{});
  EXPECT_EQ(missing.diagnostics().to_string(),
            "/nonexistent/ds.json: cannot read file: No such file or directory\n");
  auto syntax = load_ds_config_text("{\"fp16\": }", "ds.json", AutoValues{});
  ASSERT_FALSE(syntax.ok());
  EXPECT_EQ(
      syntax.diagnostics().to_string().rfind("ds.json: invalid JSON at line 1, column 10: ", 0), 0u)
      << syntax.diagnostics().to_string();
  auto arr = load_ds_config_text("[1]", "ds.json", AutoValues{});
  EXPECT_EQ(arr.diagnostics().to_string(), "ds.json: /: expected an object, got an array\n");
  AutoValues none;
  none.world_size = 0;
  auto w = load_ds_config_text(R"({"train_micro_batch_size_per_gpu": 1})", "ds.json", none);
  EXPECT_EQ(w.diagnostics().to_string(), "ds.json: expected a world size of at least 1, got 0\n");
}

TEST(DsConfigLoad, DefaultDsConfigPerStageAndPrecision) {
  DsConfig s3 = default_ds_config(3, DType::BFloat16);
  EXPECT_EQ(s3.zero.stage, 3);
  EXPECT_TRUE(s3.zero.overlap_comm);
  EXPECT_TRUE(s3.bf16);
  EXPECT_FALSE(s3.fp16);
  EXPECT_EQ(s3.optimizer_path(), OptimizerPath::ZeroStage3);
  EXPECT_EQ(s3.zero.reduce_bucket_size, 500000000u);
  DsConfig s1 = default_ds_config(1, DType::Float16);
  EXPECT_EQ(s1.zero.stage, 1);
  EXPECT_FALSE(s1.zero.overlap_comm);
  EXPECT_TRUE(s1.fp16);
  EXPECT_EQ(s1.optimizer_path(), OptimizerPath::ZeroStage1And2);
  EXPECT_EQ(s1.micro_batch, 1u);
  DsConfig s0 = default_ds_config(0, DType::Float32);
  EXPECT_EQ(s0.optimizer_path(), OptimizerPath::Plain);
  EXPECT_EQ(default_ds_config(0, DType::BFloat16).optimizer_path(), OptimizerPath::Fp16Optimizer);
}

}  // namespace
}  // namespace zerosim
