// The viewer's what-if session (ui/whatif/what_if.h): the knobs of a scenario, the ds_config.json
// they write read back through zerosim's own ds_config reader to the same knobs, a change
// re-simulated with the previous run kept as the ghost, refused changes leaving everything as it
// was, and "save as ds_config.json".
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
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
