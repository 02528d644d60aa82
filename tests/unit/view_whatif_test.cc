// The viewer's what-if session (ui/whatif/what_if.h): the knobs of a scenario, the ds_config.json
// they write read back through zerosim's own ds_config reader to the same knobs, a change
// re-simulated with the previous run kept as the ghost, refused changes leaving everything as it
// was, and "save as ds_config.json".
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "unit/cli_testlib.h"
#include "whatif/what_if.h"

namespace zerosim::view {
namespace {

std::string scenario(const std::string& name) {
  return std::string(ZEROSIM_SOURCE_DIR) + "/scenarios/" + name + ".json";
}

TEST(ViewWhatIf, TheKnobsAreTheScenarios) {
  auto w = WhatIf::open(scenario("gpt2-xl_zero2_8xa100"));
  ASSERT_TRUE(w.ok()) << w.diagnostics().to_string();
  const Knobs& k = w.value()->knobs();
  EXPECT_EQ(k.stage, 2);
  EXPECT_EQ(k.micro_batch, 4u);
  EXPECT_EQ(k.grad_accum, 1u);
  EXPECT_EQ(k.reduce_bucket_size, 500000000u);
  EXPECT_TRUE(k.overlap_comm);
  EXPECT_TRUE(k.contiguous_gradients);
  EXPECT_FALSE(k.offload_optimizer);
  EXPECT_FALSE(k.activation_checkpointing);
  EXPECT_EQ(k.gpu, "A100-80GB");
  EXPECT_EQ(k.nodes * k.gpus_per_node, 8u);
  EXPECT_EQ(w.value()->trace().meta.stage, 2);
  EXPECT_EQ(w.value()->trace().meta.world, 8u);
  EXPECT_EQ(w.value()->ghost(), nullptr);
}

// Knob sets far from the defaults, every DeepSpeed knob moved.
std::vector<Knobs> knob_sets(const Knobs& base) {
  Knobs s3 = base;
  s3.stage = 3;
  s3.offload_optimizer = true;
  s3.offload_param = true;
  s3.prefetch_bucket_size = 12345678;
  s3.param_persistence_threshold = 4096;
  s3.max_live_parameters = 300000000;
  s3.overlap_comm = false;
  Knobs s1 = base;
  s1.stage = 1;
  s1.micro_batch = 2;
  s1.grad_accum = 4;
  s1.reduce_bucket_size = 200000000;
  s1.contiguous_gradients = false;
  s1.overlap_comm = false;
  Knobs s0 = base;
  s0.stage = 0;
  s0.micro_batch = 1;
  return {s3, s1, s0};
}

// The knobs' config was resolved with edaa722's rules whatever the scenario's release: every
// what-if view of a v0.14.4 scenario failed ("resolved for edaa722 (internal error)"), and the
// config dropped data_types, so a stage 1 run with fp32 accumulation (BF16_Optimizer) was shown
// and saved as DeepSpeedZeroOptimizer (both found by a review).
TEST(ViewWhatIf, TheKnobsKeepTheScenariosReleaseAndDtypes) {
  auto base = load_scenario_file(scenario("gpt2-xl_zero1_8xa100"), DeepSpeedVersion::V0_14_4);
  ASSERT_TRUE(base.ok()) << base.diagnostics().to_string();
  Scenario s = base.value();
  s.ds.fp16 = false;
  s.ds.bf16 = true;
  s.ds.grad_accum_dtype = DType::Float32;
  s.ds.communication_data_type = DType::BFloat16;
  auto w = WhatIf::open(s, "v0144.json");
  ASSERT_TRUE(w.ok()) << w.diagnostics().to_string();
  EXPECT_EQ(w.value()->trace().meta.deepspeed_version, "0.14.4");
  EXPECT_EQ(w.value()->trace().meta.optimizer, "BF16_Optimizer");
  const std::string text = ds_config_json(s.ds, w.value()->knobs());
  AutoValues autos;
  autos.world_size = 8;
  Result<DsConfig> back = load_ds_config_text(text, "ds_config.json", autos);
  ASSERT_TRUE(back.ok()) << back.diagnostics().to_string() << "\n" << text;
  EXPECT_EQ(back->grad_accum_dtype, DType::Float32) << text;
  EXPECT_EQ(back->communication_data_type, DType::BFloat16) << text;
}

TEST(ViewWhatIf, TheWrittenDsConfigReadsBackToTheSameKnobs) {
  auto w = WhatIf::open(scenario("gpt2-xl_zero2_8xa100"));
  ASSERT_TRUE(w.ok()) << w.diagnostics().to_string();
  const Scenario& s = w.value()->scenario();
  for (const Knobs& k : knob_sets(w.value()->knobs())) {
    const std::string text = ds_config_json(s.ds, k);
    AutoValues autos;
    autos.world_size = 8;
    Result<DsConfig> back = load_ds_config_text(text, "ds_config.json", autos);
    ASSERT_TRUE(back.ok()) << back.diagnostics().to_string() << "\n" << text;
    EXPECT_EQ(knobs_of(back.value(), k), k) << text;
    EXPECT_EQ(back->fp16, s.ds.fp16);  // what the knobs do not cover is the scenario's
    EXPECT_EQ(back->gradient_clipping, s.ds.gradient_clipping);
    EXPECT_EQ(ds_config_json(s.ds, k), text);  // deterministic
  }
}

// Every modelled field of a config, one "name=value" per line: what a round trip must keep.
std::string fields_of(const DsConfig& c) {
  std::ostringstream o;
  auto offload = [&](const char* n, const OffloadConfig& x) {
    o << n << ".device=" << static_cast<int>(x.device) << " nvme_path=" << x.nvme_path
      << " pin=" << x.pin_memory << " ratio=" << x.ratio << " buffers=" << x.buffer_count
      << " buffer_size=" << x.buffer_size << " max_in_cpu=" << x.max_in_cpu
      << " pipeline=" << x.pipeline_read << x.pipeline_write << " fast_init=" << x.fast_init
      << " super=" << x.super_offload << "\n";
  };
  const ZeroConfig& z = c.zero;
  o << "fp16=" << c.fp16 << " auto_cast=" << c.fp16_auto_cast << " loss_scale=" << c.loss_scale
    << " isp=" << c.initial_scale_power << " window=" << c.loss_scale_window
    << " hysteresis=" << c.hysteresis << " consecutive=" << c.consecutive_hysteresis
    << " min=" << c.min_loss_scale << " fp16_mw=" << c.fp16_master_weights_and_gradients << "\n"
    << "bf16=" << c.bf16 << " immediate=" << c.bf16_immediate_grad_update
    << " check=" << c.bf16_check_grad_overflow << " bf16_mw=" << c.bf16_master_weights_and_grads
    << " bf16_states=" << c.bf16_optimizer_states << "\n"
    << "accum=" << (c.grad_accum_dtype ? static_cast<int>(*c.grad_accum_dtype) : -1)
    << " comm=" << (c.communication_data_type ? static_cast<int>(*c.communication_data_type) : -1)
    << " managed=" << c.managed_gradient_accumulation << " clip=" << c.gradient_clipping
    << " prescale=" << c.prescale_gradients << " predivide=" << c.gradient_predivide_factor
    << " op=" << static_cast<int>(c.gradient_allreduce_op) << " optimizer=" << c.optimizer_type
    << "\n"
    << "reduce_scatter=" << z.reduce_scatter << " multi_rank=" << z.use_multi_rank_bucket_allreduce
    << " allgather=" << z.allgather_bucket_size << " partitions=" << z.allgather_partitions
    << " round_robin=" << z.round_robin_gradients << " sub_group=" << z.sub_group_size
    << " model_persistence=" << z.model_persistence_threshold << " reuse=" << z.max_reuse_distance
    << " sequential=" << z.allgather_sequential
    << " all_reduce_fetch=" << z.use_all_reduce_for_fetch_params
    << " granularity=" << z.module_granularity_threshold
    << " gather_on_save=" << z.gather_16bit_weights_on_model_save
    << " ignore_unused=" << z.ignore_unused_parameters << " zpp=" << z.zero_quantized_weights
    << z.zero_quantized_nontrainable_weights << z.zero_quantized_gradients
    << " hpz=" << z.zero_hpz_partition_size << " mics=" << z.mics_shard_size << "\n";
  offload("offload_optimizer", z.offload_optimizer);
  offload("offload_param", z.offload_param);
  return o.str();
}

// The view rebuilt the config from the knobs and a few keys: a scenario's rarer keys
// (bf16_master_weights_and_grads, which sets the master dtype; an NVMe optimizer offload, shown
// as no offload at all; allgather_sequential, ...) were dropped by the first knob change and by
// "save". Each config sets every key it can away from its default and must read back the same.
TEST(ViewWhatIf, TheWrittenDsConfigKeepsEveryKeyTheKnobsDoNotCover) {
  const char* stage3 = R"({
    "train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 3,
    "gradient_clipping": 0.5, "prescale_gradients": true, "gradient_predivide_factor": 2.0,
    "optimizer": {"type": "AdamW"},
    "bf16": {"enabled": true, "immediate_grad_update": true, "check_grad_overflow": false,
             "bf16_master_weights_and_grads": true, "bf16_optimizer_states": true},
    "communication_data_type": "fp32",
    "zero_optimization": {"stage": 3, "reduce_scatter": false, "allgather_bucket_size": 2000,
      "round_robin_gradients": true, "sub_group_size": 5000000, "stage3_max_reuse_distance": 7,
      "stage3_model_persistence_threshold": 1000000, "stage3_allgather_sequential": true,
      "stage3_use_all_reduce_for_fetch_params": true, "stage3_module_granularity_threshold": 9,
      "stage3_gather_16bit_weights_on_model_save": true, "ignore_unused_parameters": false,
      "use_multi_rank_bucket_allreduce": false, "allgather_partitions": false,
      "zero_quantized_weights": true, "zero_quantized_nontrainable_weights": true,
      "zero_quantized_gradients": true, "zero_hpz_partition_size": 2, "mics_shard_size": 4,
      "offload_optimizer": {"device": "cpu", "pin_memory": true, "ratio": 0.5,
                            "buffer_count": 6, "fast_init": true},
      "offload_param": {"device": "cpu", "pin_memory": true, "buffer_count": 3,
                        "buffer_size": 1000000, "max_in_cpu": 2000000}}})";
  const char* stage2 = R"({
    "train_micro_batch_size_per_gpu": 1, "gradient_allreduce_op": "sum",
    "fp16": {"enabled": true, "auto_cast": true, "loss_scale": 128, "consecutive_hysteresis": true,
             "fp16_master_weights_and_grads": true},
    "data_types": {"grad_accum_dtype": "fp16"}, "managed_gradient_accumulation": false,
    "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "nvme",
        "nvme_path": "/local_nvme", "pipeline_read": true, "pipeline_write": true}}})";
  for (const char* text : {stage3, stage2}) {
    AutoValues autos;
    autos.world_size = 8;
    Result<DsConfig> base = load_ds_config_text(text, "base.json", autos);
    ASSERT_TRUE(base.ok()) << base.diagnostics().to_string() << "\n" << text;
    const Knobs k = knobs_of(base.value(), Knobs{});
    EXPECT_TRUE(k.offload_optimizer) << text;
    const std::string written = ds_config_json(base.value(), k);
    Result<DsConfig> back = load_ds_config_text(written, "ds_config.json", autos);
    ASSERT_TRUE(back.ok()) << back.diagnostics().to_string() << "\n" << written;
    EXPECT_EQ(fields_of(back.value()), fields_of(base.value())) << written;
    EXPECT_EQ(knobs_of(back.value(), k), k) << written;
  }
}

TEST(ViewWhatIf, AChangeResimulatesAndKeepsThePreviousRunAsTheGhost) {
  auto w = WhatIf::open(scenario("gpt2-xl_zero2_8xa100"));
  ASSERT_TRUE(w.ok()) << w.diagnostics().to_string();
  WhatIf& session = *w.value();
  const SimTime before = session.trace().spans.back().start_ns;
  Knobs k = session.knobs();
  k.stage = 3;
  const Diagnostics d = session.apply(k);
  ASSERT_FALSE(d.has_errors()) << d.to_string();
  EXPECT_EQ(session.trace().meta.stage, 3);
  EXPECT_EQ(session.knobs().stage, 3);
  ASSERT_NE(session.ghost(), nullptr);
  EXPECT_EQ(session.ghost()->meta.stage, 2);
  EXPECT_EQ(session.ghost()->spans.back().start_ns, before);
  ASSERT_TRUE(session.ghost_knobs().has_value());
  EXPECT_EQ(session.ghost_knobs()->stage, 2);
  EXPECT_GT(session.last_simulation_ms(), 0.0);
  // Activation checkpointing: a training knob, seen in the run (recompute spans appear).
  k.activation_checkpointing = true;
  ASSERT_FALSE(session.apply(k).has_errors());
  std::size_t recompute = 0;
  for (const Span& s : session.trace().spans) recompute += s.category == "recompute" ? 1 : 0;
  EXPECT_GT(recompute, 0u);
  EXPECT_EQ(session.ghost()->meta.stage, 3);
}

TEST(ViewWhatIf, ARefusedChangeLeavesTheRunsAsTheyWere) {
  auto w = WhatIf::open(scenario("gpt2-xl_zero2_8xa100"));
  ASSERT_TRUE(w.ok()) << w.diagnostics().to_string();
  WhatIf& session = *w.value();
  Knobs k = session.knobs();
  k.offload_param = true;  // stage 2: DeepSpeed ignores it, the panel refuses it
  Diagnostics d = session.apply(k);
  ASSERT_TRUE(d.has_errors());
  EXPECT_NE(d.to_string().find("/zero_optimization/offload_param: expected stage 3"),
            std::string::npos)
      << d.to_string();
  EXPECT_EQ(session.knobs().stage, 2);
  EXPECT_FALSE(session.knobs().offload_param);
  EXPECT_EQ(session.ghost(), nullptr);
  k = session.knobs();
  k.gpu = "A100-81GB";
  d = session.apply(k);
  ASSERT_TRUE(d.has_errors());
  EXPECT_NE(d.to_string().find("A100-81GB"), std::string::npos) << d.to_string();
  EXPECT_EQ(session.ghost(), nullptr) << "a refused change must not move the ghost";
  EXPECT_EQ(session.knobs().gpu, "A100-80GB");
}

TEST(ViewWhatIf, SaveWritesTheCurrentKnobsAsADsConfig) {
  auto w = WhatIf::open(scenario("gpt2-xl_zero2_8xa100"));
  ASSERT_TRUE(w.ok()) << w.diagnostics().to_string();
  WhatIf& session = *w.value();
  Knobs k = session.knobs();
  k.stage = 3;
  k.prefetch_bucket_size = 7777777;
  k.max_live_parameters = 123456789;
  ASSERT_FALSE(session.apply(k).has_errors());
  const std::string path =
      ::testing::TempDir() + "zerosim_whatif_" + std::to_string(getpid()) + "_ds_config.json";
  std::string error;
  ASSERT_TRUE(session.save_ds_config(path, error)) << error;
  AutoValues autos;
  autos.world_size = 8;
  Result<DsConfig> back = load_ds_config_file(path, autos);
  std::remove(path.c_str());
  ASSERT_TRUE(back.ok()) << back.diagnostics().to_string();
  EXPECT_EQ(knobs_of(back.value(), k), session.knobs());
  EXPECT_FALSE(session.save_ds_config("/nonexistent-dir/ds_config.json", error));
  EXPECT_EQ(error, "/nonexistent-dir/ds_config.json: cannot open for writing");
}

// Issue 12's output rules hold for the viewer's one output: never the scenario it edits, and an
// existing file is replaced only by a complete one.
TEST(ViewWhatIf, SaveNeverOverwritesTheScenarioAndReplacesWhole) {
  const std::string dir = ::testing::TempDir() + "zerosim_whatif_save_" + std::to_string(getpid());
  ASSERT_EQ(std::system(("mkdir -p " + dir).c_str()), 0);
  const std::string copy = dir + "/scenario.json";
  ASSERT_EQ(std::system(("cp " + scenario("gpt2-xl_zero2_8xa100") + " " + copy).c_str()), 0);
  auto w = WhatIf::open(copy);
  ASSERT_TRUE(w.ok()) << w.diagnostics().to_string();
  std::ifstream before_in(copy);
  const std::string before((std::istreambuf_iterator<char>(before_in)), {});
  std::string error;
  EXPECT_FALSE(w.value()->save_ds_config(copy, error));
  EXPECT_EQ(error, copy + ": is the scenario being edited (refusing to overwrite it)");
  std::ifstream after_in(copy);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(after_in)), {}), before);
  const std::string out = dir + "/ds_config.json";
  { std::ofstream(out) << "old"; }
  ASSERT_TRUE(w.value()->save_ds_config(out, error)) << error;
  std::ifstream saved(out);
  const std::string text((std::istreambuf_iterator<char>(saved)), {});
  EXPECT_NE(text.find("zero_optimization"), std::string::npos) << text;
  EXPECT_EQ(std::system(("test $(ls " + dir + " | wc -l) -eq 2").c_str()), 0)
      << "no temporary file left behind";
  EXPECT_EQ(std::system(("rm -rf " + dir).c_str()), 0);
}

TEST(ViewWhatIf, SetKnobParsesEachKnobAndRefusesGarbage) {
  Knobs k;
  EXPECT_EQ(set_knob(k, "stage", "3"), "");
  EXPECT_EQ(k.stage, 3);
  EXPECT_EQ(set_knob(k, "micro_batch", "16"), "");
  EXPECT_EQ(k.micro_batch, 16u);
  EXPECT_EQ(set_knob(k, "overlap_comm", "true"), "");
  EXPECT_TRUE(k.overlap_comm);
  EXPECT_EQ(set_knob(k, "max_live_parameters", "100000"), "");
  EXPECT_EQ(k.max_live_parameters, 100000u);
  EXPECT_EQ(set_knob(k, "gpu", "H100-SXM-80GB"), "");
  EXPECT_EQ(k.gpu, "H100-SXM-80GB");
  EXPECT_EQ(set_knob(k, "stage", "4"), "expected an integer 0..3, got \"4\"");
  EXPECT_EQ(set_knob(k, "stage", "-1"), "expected an integer 0..3, got \"-1\"");
  EXPECT_EQ(set_knob(k, "micro_batch", "2x"), "expected an integer 1..1024, got \"2x\"");
  EXPECT_EQ(set_knob(k, "micro_batch", "99999999999999999999999"),
            "expected an integer 1..1024, got \"99999999999999999999999\"");
  EXPECT_EQ(set_knob(k, "overlap_comm", "yes"), "expected true or false, got \"yes\"");
  EXPECT_EQ(set_knob(k, "gpu", ""), "expected a GPU catalog name, got \"\"");
  EXPECT_EQ(set_knob(k, "stages", "1").rfind("expected a knob (stage, ", 0), 0u);
  EXPECT_EQ(k.stage, 3);  // refusals change nothing
  EXPECT_EQ(k.micro_batch, 16u);
}

TEST(ViewWhatIf, AMissingScenarioIsAnError) {
  auto w = WhatIf::open("/nonexistent/scenario.json");
  EXPECT_FALSE(w.ok());
  EXPECT_NE(w.diagnostics().to_string().find("/nonexistent/scenario.json"), std::string::npos);
}

}  // namespace
}  // namespace zerosim::view
