// Precision blocks, top-level keys, every combination DeepSpeed refuses (one test each, exact
// message), the BF16_Optimizer reroute and the misreading notes.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "zerosim/ds_config.h"

namespace zerosim {
namespace {

/// Loads `{"train_micro_batch_size_per_gpu": 1, <body>}`.
Result<DsConfig> load(const std::string& body, const AutoValues& a = AutoValues{}) {
  return load_ds_config_text(
      R"({"train_micro_batch_size_per_gpu": 1)" + (body.empty() ? "" : ", " + body) + "}",
      "ds.json", a);
}

std::string diag(const Result<DsConfig>& r) { return r.diagnostics().to_string(); }

bool has_note(const DsConfig& c, const std::string& note) {
  return std::find(c.notes.begin(), c.notes.end(), note) != c.notes.end();
}

std::string refusal(const std::string& pointer, const std::string& message,
                    const std::string& file) {
  return "ds.json: " + pointer + ": DeepSpeed refuses this config: " + message + " (" + file +
         ")\n";
}

const std::string kConfig = "deepspeed/runtime/config.py";
const std::string kEngine = "deepspeed/runtime/engine.py";
const std::string kStage12 = "deepspeed/runtime/zero/stage_1_and_2.py";
const std::string kStage3 = "deepspeed/runtime/zero/stage3.py";

TEST(DsConfigPrecision, Fp16BlockValues) {
  auto r = load(
      R"("fp16": {"enabled": true, "auto_cast": true, "loss_scale": 128, "initial_scale_power": 12,
                            "loss_scale_window": 500, "hysteresis": 4, "consecutive_hysteresis": true,
                            "min_loss_scale": 2})");
  ASSERT_TRUE(r.ok()) << diag(r);
  const DsConfig& c = r.value();
  EXPECT_TRUE(c.fp16);
  EXPECT_TRUE(c.fp16_auto_cast);
  EXPECT_DOUBLE_EQ(c.loss_scale, 128.0);
  EXPECT_EQ(c.initial_scale_power, 12);
  EXPECT_EQ(c.loss_scale_window, 500);
  EXPECT_EQ(c.hysteresis, 4);
  EXPECT_TRUE(c.consecutive_hysteresis);
  EXPECT_EQ(c.min_loss_scale, 2);
  EXPECT_EQ(c.lp_dtype(), DType::Float16);
  EXPECT_EQ(c.optimizer_path(), OptimizerPath::Fp16Optimizer);
}

TEST(DsConfigPrecision, LossScaleChecksUseDeepSpeedsMessages) {
  EXPECT_EQ(diag(load(R"("fp16": {"enabled": true, "loss_scale": true})")),
            "ds.json: /fp16/loss_scale: fp16.loss_scale must be a number, not bool\n");
  EXPECT_EQ(diag(load(R"("fp16": {"enabled": true, "loss_scale": "big"})")),
            "ds.json: /fp16/loss_scale: fp16.loss_scale must be a number\n");
  EXPECT_EQ(
      diag(load(R"("fp16": {"enabled": true, "loss_scale": -1})")),
      "ds.json: /fp16/loss_scale: fp16.loss_scale must be >= 0 (0 enables dynamic loss scaling)\n");
  EXPECT_EQ(diag(load(R"("fp16": {"enabled": true, "min_loss_scale": true})")),
            "ds.json: /fp16/min_loss_scale: fp16.min_loss_scale must be an integer, not bool\n");
}

TEST(DsConfigPrecision, DynamicLossScaleNeedsAPositiveWindowAndFloor) {
  const std::string file = "deepspeed/runtime/precision_config.py";
  EXPECT_EQ(
      diag(load(R"("fp16": {"enabled": true, "loss_scale_window": 0})")),
      refusal(
          "/fp16/loss_scale_window",
          "fp16.loss_scale_window must be > 0 when dynamic loss scaling is enabled (loss_scale=0)",
          file));
  EXPECT_EQ(
      diag(load(R"("fp16": {"enabled": true, "min_loss_scale": 0})")),
      refusal("/fp16/min_loss_scale",
              "fp16.min_loss_scale must be > 0 when dynamic loss scaling is enabled (loss_scale=0)",
              file));
  // A static loss scale does not use them.
  EXPECT_TRUE(
      load(R"("fp16": {"enabled": true, "loss_scale": 1024, "loss_scale_window": 0})").ok());
}

TEST(DsConfigPrecision, Bf16BlockAndItsOldSpelling) {
  auto r = load(
      R"("bf16": {"enabled": true, "immediate_grad_update": true, "check_grad_overflow": false})");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.value().bf16);
  EXPECT_TRUE(r.value().bf16_immediate_grad_update);
  EXPECT_FALSE(r.value().bf16_check_grad_overflow);
  auto both = load(R"("bf16": {"enabled": false}, "bfloat16": {"enabled": true})");
  ASSERT_TRUE(both.ok());
  EXPECT_FALSE(both.value().bf16);
  EXPECT_EQ(diag(both),
            "warning: ds.json: /bfloat16: ignored: DeepSpeed reads \"bf16\" when both \"bf16\" and "
            "\"bfloat16\" "
            "are present\n");
  EXPECT_EQ(
      diag(load(R"("bf16": {"enabled": true, "check_overflow": true})")),
      "ds.json: /bf16/check_overflow: unknown key \"check_overflow\" (did you mean "
      "\"check_grad_overflow\"? "
      "DeepSpeed's BFLOAT16_FORMAT text spells it check_overflow, its config model does not)\n");
}

TEST(DsConfigPrecision, EnabledAutoFollowsPrecisionFlag) {
  AutoValues a;
  a.precision = DType::Float32;
  auto r = load(R"("fp16": {"enabled": "auto"}, "bf16": {"enabled": "auto"})", a);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r.value().fp16);
  EXPECT_FALSE(r.value().bf16);
  a.precision = DType::Float16;
  auto f = load(R"("fp16": {"enabled": "auto"}, "bf16": {"enabled": "auto"})", a);
  EXPECT_TRUE(f.value().fp16);
  EXPECT_FALSE(f.value().bf16);
}

TEST(DsConfigPrecision, DataTypesAndCommunicationDtype) {
  auto r = load(R"("bf16": {"enabled": true}, "zero_optimization": {"stage": 2},
                   "data_types": {"grad_accum_dtype": "float"}, "communication_data_type": "FP32")");
  ASSERT_TRUE(r.ok()) << diag(r);
  EXPECT_EQ(r.value().grad_accum(), DType::Float32);
  EXPECT_EQ(r.value().comm_dtype(), DType::Float32);
  EXPECT_EQ(diag(load(R"("data_types": {"grad_accum_dtype": "fp64"})")),
            "ds.json: /data_types/grad_accum_dtype: expected one of \"fp16\", \"bf16\", \"fp32\" "
            "(or \"float16\", "
            "\"half\", \"bfloat16\", \"float32\", \"float\", \"torch.<dtype>\"), got \"fp64\"\n");
  EXPECT_EQ(diag(load(R"("data_types": {"grad_accum_dtype": "int8"})")),
            "ds.json: /data_types/grad_accum_dtype: int8 gradient accumulation is not modelled by "
            "zerosim\n");
  EXPECT_EQ(diag(load(R"("communication_data_type": "float16")")),
            "ds.json: /communication_data_type: Invalid communication_data_type. Supported data "
            "types: ['fp16', "
            "'bf16', 'fp32']. Got: float16\n");
  auto warn = load(R"("data_types": {"grad_acum_dtype": "fp32"})");
  EXPECT_TRUE(warn.ok());
  EXPECT_EQ(diag(warn),
            "warning: ds.json: /data_types/grad_acum_dtype: unknown key \"grad_acum_dtype\" (did "
            "you mean "
            "\"grad_accum_dtype\"?)\n");
}

TEST(DsConfigTopLevel, UnknownKeyIsAWarningWithAHint) {
  auto r = load(R"("gradient_accumulation_step": 2)");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(
      diag(r),
      "warning: ds.json: /gradient_accumulation_step: unknown key \"gradient_accumulation_step\": "
      "DeepSpeed "
      "ignores top-level keys it does not read (did you mean \"gradient_accumulation_steps\"?)\n");
}

TEST(DsConfigTopLevel, KnownButNotModelledKeysAreListed) {
  auto r =
      load(R"("steps_per_print": 10, "wall_clock_breakdown": false, "activation_checkpointing": {},
                   "flops_profiler": {}, "tensorboard": {}, "aio": {}, "comms_logger": {}, "checkpoint": {},
                   "zero_force_ds_cpu_optimizer": false, "csv_monitor": {}, "wandb": {})");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.diagnostics().empty());
  EXPECT_EQ(
      r.value().not_modelled,
      (std::vector<std::string>{"activation_checkpointing", "aio", "checkpoint", "comms_logger",
                                "csv_monitor", "flops_profiler", "steps_per_print", "tensorboard",
                                "wall_clock_breakdown", "wandb", "zero_force_ds_cpu_optimizer"}));
}

TEST(DsConfigTopLevel, TrainingKeys) {
  AutoValues a;
  a.gradient_clipping = 0.25;
  auto r = load(
      R"("gradient_clipping": "auto", "prescale_gradients": true, "gradient_predivide_factor": 2,
                   "managed_gradient_accumulation": false, "gradient_allreduce_op": "SUM")",
      a);
  ASSERT_TRUE(r.ok()) << diag(r);
  EXPECT_DOUBLE_EQ(r.value().gradient_clipping, 0.25);
  EXPECT_TRUE(r.value().prescale_gradients);
  EXPECT_DOUBLE_EQ(r.value().gradient_predivide_factor, 2.0);
  EXPECT_FALSE(r.value().managed_gradient_accumulation);
  EXPECT_EQ(r.value().gradient_allreduce_op, GradientAllreduceOp::Sum);
  EXPECT_DOUBLE_EQ(load(R"("gradient_clipping": 0)").value().gradient_clipping, 0.0);
  EXPECT_EQ(
      diag(load(R"("gradient_clipping": "auto")")),
      "ds.json: /gradient_clipping: is \"auto\" and needs a value: pass --gradient-clipping\n");
  EXPECT_EQ(diag(load(R"("gradient_clipping": -1)")),
            "ds.json: /gradient_clipping: expected a number >= 0, got -1\n");
  EXPECT_EQ(diag(load(R"("gradient_predivide_factor": 0)")),
            "ds.json: /gradient_predivide_factor: expected a number > 0, got 0\n");
  EXPECT_EQ(diag(load(R"("gradient_allreduce_op": "max")")),
            "ds.json: /gradient_allreduce_op: Invalid gradient_allreduce_op. Supported operations: "
            "['mean', "
            "'sum']. Got: 'max'\n");
}

TEST(DsConfigRefusal, Fp16AndBf16Together) {
  EXPECT_EQ(diag(load(R"("fp16": {"enabled": true}, "bf16": {"enabled": true})")),
            refusal("/bf16/enabled", "bfloat16 and fp16 modes cannot be simultaneously enabled",
                    kConfig));
}

TEST(DsConfigRefusal, Stage2ReduceScatterPrescale) {
  EXPECT_EQ(
      diag(load(R"("zero_optimization": {"stage": 2}, "prescale_gradients": true)")),
      refusal("/prescale_gradients",
              "pre-scale gradients is not yet supported with ZeRO-2 with reduce scatter enabled",
              kStage12));
  // Allowed: without reduce_scatter, at stage 1, and when gradients are summed rather than
  // averaged.
  EXPECT_TRUE(
      load(
          R"("zero_optimization": {"stage": 2, "reduce_scatter": false}, "prescale_gradients": true)")
          .ok());
  EXPECT_TRUE(load(R"("zero_optimization": {"stage": 1}, "prescale_gradients": true)").ok());
  EXPECT_TRUE(load(R"("zero_optimization": {"stage": 2}, "prescale_gradients": true,
                      "gradient_allreduce_op": "sum")")
                  .ok());
}

TEST(DsConfigRefusal, Stage2ReduceScatterPredivide) {
  EXPECT_EQ(diag(load(R"("zero_optimization": {"stage": 2}, "gradient_predivide_factor": 2.0)")),
            refusal("/gradient_predivide_factor",
                    "gradient_predivide_factor != 1.0 is not yet supported with ZeRO-2 with reduce "
                    "scatter enabled",
                    kStage12));
}

TEST(DsConfigRefusal, Stage3ReduceScatterPrescaleAndPredivide) {
  EXPECT_EQ(
      diag(load(R"("zero_optimization": {"stage": 3}, "prescale_gradients": true)")),
      refusal("/prescale_gradients",
              "pre-scale gradients is not yet supported with ZeRO-3 with reduce scatter enabled",
              kStage3));
  EXPECT_EQ(diag(load(R"("zero_optimization": {"stage": 3}, "gradient_predivide_factor": 4)")),
            refusal("/gradient_predivide_factor",
                    "gradient_predivide_factor != 1.0 is not yet supported with ZeRO-3 with reduce "
                    "scatter enabled",
                    kStage3));
}

TEST(DsConfigRefusal, Stage0Bf16WithFp32GradAccum) {
  EXPECT_EQ(
      diag(load(R"("bf16": {"enabled": true}, "data_types": {"grad_accum_dtype": "fp32"})")),
      refusal("/data_types/grad_accum_dtype",
              "unsupported mix of model_dtype=torch.bfloat16 and grad_accum_dtype=torch.float32",
              kEngine));
}

// DeepSpeed v0.14.4's get_data_types makes bf16 without ZeRO accumulate in fp32, so stage 0 bf16
// runs BF16_Optimizer there and bf16 accumulation is what it refuses (PR #7515, v0.17.6, changed
// both); zerosim resolved every config with edaa722's rules, whatever --deepspeed-version said.
TEST(DsConfigVersion, V0144Stage0Bf16RunsBf16Optimizer) {
  AutoValues v0144;
  v0144.version = DeepSpeedVersion::V0_14_4;
  const std::string bf16 = R"("bf16": {"enabled": true})";
  auto plain = load(bf16, v0144);
  ASSERT_TRUE(plain.ok()) << diag(plain);
  EXPECT_EQ(plain.value().version, DeepSpeedVersion::V0_14_4);
  EXPECT_EQ(plain.value().grad_accum(), DType::Float32);
  EXPECT_EQ(plain.value().optimizer_path(), OptimizerPath::Bf16Optimizer);
  EXPECT_TRUE(
      std::any_of(plain.value().notes.begin(), plain.value().notes.end(), [](const std::string& n) {
        return n.rfind("bf16 without ZeRO at DeepSpeed v0.14.4", 0) == 0;
      }));
  auto fp32 = load(bf16 + R"(, "data_types": {"grad_accum_dtype": "fp32"})", v0144);
  ASSERT_TRUE(fp32.ok()) << diag(fp32);
  EXPECT_EQ(fp32.value().optimizer_path(), OptimizerPath::Bf16Optimizer);
  EXPECT_EQ(diag(load(bf16 + R"(, "data_types": {"grad_accum_dtype": "bf16"})", v0144)),
            refusal("/data_types/grad_accum_dtype",
                    "Bfloat16 wrapper must use a gradient accumulation type of fp32, enable ZeRO "
                    "to use Bfloat16 gradient accumulation",
                    kEngine));
  EXPECT_EQ(
      diag(load(R"("fp16": {"enabled": true}, "data_types": {"grad_accum_dtype": "fp32"})", v0144)),
      refusal("/data_types/grad_accum_dtype",
              "unsupported mix of model dtype and gradient accumulation type", kEngine));
  // With ZeRO the default is the model dtype in both releases: stage 1 stays
  // DeepSpeedZeroOptimizer.
  auto stage1 = load(bf16 + R"(, "zero_optimization": {"stage": 1})", v0144);
  ASSERT_TRUE(stage1.ok()) << diag(stage1);
  EXPECT_EQ(stage1.value().grad_accum(), DType::BFloat16);
  EXPECT_EQ(stage1.value().optimizer_path(), OptimizerPath::ZeroStage1And2);
  // edaa722 (the default): FP16_Optimizer in bf16 mode, bf16 accumulation.
  auto edaa = load(bf16);
  ASSERT_TRUE(edaa.ok()) << diag(edaa);
  EXPECT_EQ(edaa.value().grad_accum(), DType::BFloat16);
  EXPECT_EQ(edaa.value().optimizer_path(), OptimizerPath::Fp16Optimizer);
}

TEST(DsConfigRefusal, LegacyStage1) {
  EXPECT_EQ(
      diag(load(R"("zero_optimization": {"stage": 1, "legacy_stage1": true})")),
      refusal(
          "/zero_optimization/legacy_stage1",
          "The deprecated version of ZeRO Stage 1 is not supported in deepspeed >= 0.5.9. Please "
          "downgrade to a version less than 0.5.9 if you need to use this deprecated version of "
          "ZeRO.",
          kEngine));
}

TEST(DsConfigRefusal, AllgatherBucketSizeNotAMultipleOf2) {
  EXPECT_EQ(diag(load(R"("zero_optimization": {"stage": 2, "allgather_bucket_size": 5})")),
            refusal("/zero_optimization/allgather_bucket_size",
                    "allgather_bucket_size must be a multiple of nccl_start_alignment_factor, 2",
                    kStage12));
  EXPECT_TRUE(load(R"("zero_optimization": {"stage": 3, "allgather_bucket_size": 5})").ok());
}

TEST(DsConfigRefusal, PartialOffloadBelowStage3) {
  EXPECT_EQ(
      diag(load(
          R"("zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu", "ratio": 0.5}})")),
      refusal("/zero_optimization/offload_optimizer/ratio",
              "Partial offloading only supported for ZeRO Stage 3.",
              "deepspeed/runtime/zero/config.py"));
}

TEST(DsConfigRefusal, Fp16MasterWeightsNeedCpuOffload) {
  EXPECT_EQ(diag(load(R"("fp16": {"enabled": true, "fp16_master_weights_and_grads": true},
                         "zero_optimization": {"stage": 2})")),
            refusal("/fp16/fp16_master_weights_and_grads",
                    "Master weights feature requires ZeRO-2 Offload with DeepSpeedCPUAdam. Current "
                    "ZeRO-Offload:False",
                    kStage12));
  EXPECT_EQ(
      diag(load(R"("fp16": {"enabled": true, "fp16_master_weights_and_grads": true},
                         "zero_optimization": {"stage": 3})")),
      refusal(
          "/fp16/fp16_master_weights_and_grads",
          "Master weights feature requires ZeRO-3 Offload with DeepSpeedCPUAdam. Current ZeRO-3 "
          "Offload:False",
          kStage3));
  EXPECT_EQ(diag(load(R"("fp16": {"enabled": true, "fp16_master_weights_and_grads": true},
                         "optimizer": {"type": "Lion"},
                         "zero_optimization": {"stage": 1, "offload_optimizer": {"device": "cpu"}})")),
            refusal("/fp16/fp16_master_weights_and_grads",
                    "Master weights feature requires ZeRO-1 Offload with DeepSpeedCPUAdam. Current "
                    "ZeRO-Offload:True optimizer type Lion",
                    kStage12));
  EXPECT_EQ(diag(load(R"("fp16": {"enabled": true, "fp16_master_weights_and_grads": true})")),
            refusal("/fp16/fp16_master_weights_and_grads",
                    "Fp16_master_weights_and_grads is only supported with ZeRO Stage 1, 2, or 3.",
                    kConfig));
  auto ok = load(
      R"("fp16": {"enabled": true, "fp16_master_weights_and_grads": true}, "optimizer": {"type": "AdamW"},
                    "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}})");
  ASSERT_TRUE(ok.ok()) << diag(ok);
  EXPECT_EQ(ok.value().master_dtype(), DType::Float16);
}

TEST(DsConfigRefusal, Bf16MasterWeightsNeedCpuOffloadUnlessOptimizerStatesAreBf16) {
  EXPECT_EQ(diag(load(R"("bf16": {"enabled": true, "bf16_master_weights_and_grads": true},
                         "zero_optimization": {"stage": 2})")),
            refusal("/bf16/bf16_master_weights_and_grads",
                    "Master weights feature requires ZeRO-2 Offload with DeepSpeedCPUAdam. Current "
                    "ZeRO-Offload:False",
                    kStage12));
  auto ok = load(
      R"("bf16": {"enabled": true, "bf16_master_weights_and_grads": true, "bf16_optimizer_states": true},
                    "zero_optimization": {"stage": 2})");
  ASSERT_TRUE(ok.ok()) << diag(ok);
  EXPECT_EQ(ok.value().master_dtype(), DType::BFloat16);
  EXPECT_EQ(
      diag(load(
          R"("bf16": {"enabled": true, "bf16_optimizer_states": true}, "zero_optimization": {"stage": 2})")),
      refusal("/bf16/bf16_optimizer_states",
              "bf16_optimizer_states requires bf16_master_weights_and_grads to be enabled.",
              kConfig));
}

TEST(DsConfigRefusal, BothMasterWeightFlags) {
  EXPECT_EQ(diag(load(R"("fp16": {"fp16_master_weights_and_grads": true},
                         "bf16": {"enabled": true, "bf16_master_weights_and_grads": true},
                         "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}})")),
            refusal("/fp16/fp16_master_weights_and_grads",
                    "fp16_master_weights_and_gradients and bf16_master_weights_and_gradients are "
                    "mutually exclusive.",
                    "deepspeed/runtime/base_optimizer.py"));
}

TEST(DsConfigRefusal, MuonWithOptimizerOffload) {
  EXPECT_EQ(
      diag(load(R"("optimizer": {"type": "Muon"}, "bf16": {"enabled": true},
                         "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}})")),
      refusal("/zero_optimization/offload_optimizer/device",
              "the Muon optimizer does not support optimizer offload: the offload path keeps only "
              "partition-local gradients and Muon needs each parameter's whole gradient",
              "DeepSpeed PR #8141"));
  // Muon with reduce_scatter is supported since PR #8141; zerosim notes how.
  auto rs = load(
      R"("optimizer": {"type": "Muon"}, "bf16": {"enabled": true}, "zero_optimization": {"stage": 2})");
  ASSERT_TRUE(rs.ok()) << diag(rs);
  EXPECT_TRUE(
      has_note(rs.value(),
               "Muon with ZeRO-1/2 and reduce_scatter: a Muon parameter split across ranks gets "
               "its reduced slices copied to every owning rank (DeepSpeed PR #8141)"));
}

// --deepspeed-version 0.14.4 took edaa722's key tables: zero_optimization and offload_optimizer
// keys added after v0.14.4 were accepted (its pydantic models refuse them), and bf16 keys v0.14.4
// does not read (it reads the block as a dict) were applied: bf16_master_weights_and_grads set a
// bf16 master there (found by a new-user pass).
TEST(DsConfigVersion, V0144HasItsOwnKeys) {
  AutoValues v0144;
  v0144.version = DeepSpeedVersion::V0_14_4;
  EXPECT_EQ(
      diag(load(R"("zero_optimization": {"stage": 3, "stage3_module_granularity_threshold": 1})",
                v0144)),
      "ds.json: /zero_optimization/stage3_module_granularity_threshold: unknown key "
      "\"stage3_module_granularity_threshold\" at DeepSpeed v0.14.4: its DeepSpeedZeroConfig "
      "has no such field and refuses extra keys (added in a later release)\n");
  EXPECT_NE(diag(load(R"("zero_optimization": {"stage": 2, "offload_optimizer":
                           {"device": "cpu", "super_offload": false}})",
                      v0144))
                .find("/zero_optimization/offload_optimizer/super_offload: unknown key "
                      "\"super_offload\" at DeepSpeed v0.14.4: its "
                      "DeepSpeedZeroOffloadOptimizerConfig"),
            std::string::npos);
  const std::string mw =
      R"("bf16": {"enabled": true, "bf16_master_weights_and_grads": true, "bf16_optimizer_states":
         true, "typo": 1}, "zero_optimization": {"stage": 2})";
  auto old = load(mw, v0144);
  ASSERT_TRUE(old.ok()) << diag(old);
  EXPECT_FALSE(old.value().bf16_master_weights_and_grads);
  EXPECT_EQ(old.value().master_dtype(), DType::Float32);
  const std::string d = diag(old);
  EXPECT_NE(d.find("warning: ds.json: /bf16/bf16_master_weights_and_grads: ignored: DeepSpeed "
                   "v0.14.4 does not read bf16.bf16_master_weights_and_grads"),
            std::string::npos)
      << d;
  EXPECT_NE(d.find("/bf16/typo: unknown key"), std::string::npos) << d;  // a warning there
  auto spelled = load(R"("bf16": {"enabled": true, "check_overflow": true})", v0144);
  EXPECT_TRUE(spelled.ok()) << diag(spelled);  // refused at edaa722 (DsConfigPrecision tests)
  // edaa722 reads them (and refuses the unknown key).
  auto now = load(R"("bf16": {"enabled": true, "bf16_master_weights_and_grads": true,
                     "bf16_optimizer_states": true}, "zero_optimization": {"stage": 2})");
  ASSERT_TRUE(now.ok()) << diag(now);
  EXPECT_EQ(now.value().master_dtype(), DType::BFloat16);
  EXPECT_FALSE(load(mw).ok());
  // pin_memory's default is the release's: False at v0.14.4, True at edaa722 (PR #8207), written
  // values win in both; so is a default config's.
  const std::string offload = R"("zero_optimization": {"stage": 2, "offload_optimizer":
                                   {"device": "cpu"}})";
  EXPECT_FALSE(load(offload, v0144).value().zero.offload_optimizer.pin_memory);
  EXPECT_TRUE(load(offload).value().zero.offload_optimizer.pin_memory);
  EXPECT_FALSE(load(R"("zero_optimization": {"stage": 2, "offload_optimizer":
                        {"device": "cpu", "pin_memory": false}})")
                   .value()
                   .zero.offload_optimizer.pin_memory);
  EXPECT_TRUE(default_ds_config(3, DType::BFloat16).zero.offload_param.pin_memory);
  EXPECT_FALSE(default_ds_config(3, DType::BFloat16, DeepSpeedVersion::V0_14_4)
                   .zero.offload_param.pin_memory);
}

TEST(DsConfigRefusal, OptimizersDeepSpeedRejects) {
  EXPECT_EQ(diag(load(R"("optimizer": {"type": "OneBitAdam"}, "zero_optimization": {"stage": 1})")),
            refusal("/optimizer/type", "1bit-Adam is not compatible with ZeRO", kEngine));
  EXPECT_EQ(
      diag(load(R"("optimizer": {"type": "ZeroOneAdam"}, "zero_optimization": {"stage": 2})")),
      refusal("/optimizer/type", "0/1 Adam is not compatible with ZeRO", kEngine));
  EXPECT_EQ(
      diag(load(R"("optimizer": {"type": "Lamb"}, "fp16": {"enabled": true, "loss_scale": 128})")),
      refusal("/optimizer/type", "DeepSpeed lamb optimizer requires dynamic loss scaling",
              kEngine));
  EXPECT_EQ(diag(load(R"("optimizer": {"type": "sgd"})")),
            refusal("/optimizer/type", "sgd is not a supported DeepSpeed Optimizer", kEngine));
  EXPECT_TRUE(load(R"("optimizer": {"type": "SGD", "params": {"lr": 0.1}})").ok());
  EXPECT_EQ(
      diag(load(R"("optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "max_grad_norm": 1.0}})")),
      refusal(
          "/optimizer/params/max_grad_norm",
          "'max_grad_norm' is not supported as an optimizer parameter, please switch to using the "
          "deepspeed parameter 'gradient_clipping' see: "
          "https://www.deepspeed.ai/docs/config-json/#gradient-clipping for more details",
          kEngine));
}

TEST(DsConfigRefusal, AmpWithZero) {
  EXPECT_EQ(diag(load(R"("amp": {"enabled": true}, "zero_optimization": {"stage": 1})")),
            refusal("/amp/enabled",
                    "Amp and ZeRO are not currently compatible, please use (legacy) fp16 mode "
                    "which performs similar "
                    "to amp opt_mode=O2",
                    kEngine));
}

TEST(DsConfigRefusal, SumAllreduceWithStage3) {
  EXPECT_EQ(diag(load(R"("gradient_allreduce_op": "sum", "zero_optimization": {"stage": 3})")),
            refusal("/gradient_allreduce_op",
                    "gradient_allreduce_op='sum' is not supported with ZeRO stage 3", kConfig));
}

TEST(DsConfigReroute, Stage1Bf16Fp32GradAccumRunsBf16Optimizer) {
  const std::string note =
      "stage 1 + bf16 + data_types.grad_accum_dtype fp32 without CPU optimizer offload: DeepSpeed "
      "runs "
      "BF16_Optimizer (not the ZeRO optimizer), which keeps a full, unpartitioned fp32 gradient "
      "buffer and "
      "all-reduces it through the engine";
  auto r = load(R"("bf16": {"enabled": true}, "data_types": {"grad_accum_dtype": "fp32"},
                   "zero_optimization": {"stage": 1})");
  ASSERT_TRUE(r.ok()) << diag(r);
  EXPECT_EQ(r.value().optimizer_path(), OptimizerPath::Bf16Optimizer);
  EXPECT_EQ(r.value().master_dtype(), DType::Float32);
  EXPECT_EQ(r.value().notes, (std::vector<std::string>{note}));
  auto cpu = load(R"("bf16": {"enabled": true}, "data_types": {"grad_accum_dtype": "fp32"},
                     "zero_optimization": {"stage": 1, "offload_optimizer": {"device": "cpu"}})");
  EXPECT_EQ(cpu.value().optimizer_path(), OptimizerPath::ZeroStage1And2);
  EXPECT_FALSE(has_note(cpu.value(), note));
  // engine.zero_cpu_offload() tests device == cpu only, so NVMe offload still reroutes.
  auto nvme = load(R"("bf16": {"enabled": true}, "data_types": {"grad_accum_dtype": "fp32"},
                      "zero_optimization": {"stage": 1, "offload_optimizer": {"device": "nvme"}})");
  EXPECT_EQ(nvme.value().optimizer_path(), OptimizerPath::Bf16Optimizer);
  auto s2 = load(R"("bf16": {"enabled": true}, "data_types": {"grad_accum_dtype": "fp32"},
                    "zero_optimization": {"stage": 2})");
  EXPECT_EQ(s2.value().optimizer_path(), OptimizerPath::ZeroStage1And2);
}

TEST(DsConfigNotes, Stage1AndStage3Misreadings) {
  auto s1 = load(R"("zero_optimization": {"stage": 1})");
  EXPECT_EQ(s1.value().notes,
            (std::vector<std::string>{"stage 1 does not shrink gradient memory: every rank keeps "
                                      "full-size gradients until the optimizer "
                                      "step; stage 2 drops the gradients it does not own",
                                      "ZeRO-1 never issues a reduce-scatter: each gradient bucket "
                                      "is all-reduced (or reduced per owner) "
                                      "and every rank keeps its own slice"}));
  auto s3 = load(R"("zero_optimization": {"stage": 3, "stage3_max_live_parameters": 1e8})");
  EXPECT_EQ(
      s3.value().notes,
      (std::vector<std::string>{
          "overlap_comm is unset: DeepSpeed turns it on for stage 3 (the documentation says the "
          "default is "
          "false)",
          "stage3_max_live_parameters is not a hard cap: it only limits how much is prefetched"}));
  for (const auto& n : s3.value().notes) EXPECT_EQ(n.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace zerosim
