// Scenario files (scenario.h): every shipped scenario in scenarios/ loads with the values it
// states; paths resolve against the scenario's folder; "auto" values resolve from the cluster and
// the model; every bad input names the scenario file and the JSON pointer.
#include "zerosim/scenario.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>

namespace zerosim {
namespace {

const std::string kScenarios = std::string(ZEROSIM_SOURCE_DIR) + "/scenarios/";
const std::string kData = std::string(ZEROSIM_TEST_DATA_DIR) + "/scenarios/";

Scenario load_ok(const std::string& path) {
  auto r = load_scenario_file(path);
  EXPECT_TRUE(r.ok()) << r.diagnostics().to_string();
  // Shipped scenarios must load cleanly: no warnings either.
  EXPECT_TRUE(r.diagnostics().empty()) << r.diagnostics().to_string();
  return r.ok() ? r.value() : Scenario{};
}

struct Expected {
  const char* file;
  Elements params;
  int stage;
  std::uint64_t nodes, gpus_per_node;
  const char* gpu;
  DType lp;
  std::uint64_t micro, gas;
  bool overlap_comm;
  bool offload_cpu;
  std::uint64_t seq_len;
  bool checkpointing;
};

const Expected kShipped[] = {
    {"gpt2-xl_zero0_8xa100.json", 1557611200, 0, 1, 8, "A100-80GB", DType::Float16, 4, 1, false,
     false, 1024, false},
    {"gpt2-xl_zero1_8xa100.json", 1557611200, 1, 1, 8, "A100-80GB", DType::Float16, 4, 1, false,
     false, 1024, false},
    {"gpt2-xl_zero2_8xa100.json", 1557611200, 2, 1, 8, "A100-80GB", DType::Float16, 4, 1, true,
     false, 1024, false},
    {"gpt2-xl_zero3_8xa100.json", 1557611200, 3, 1, 8, "A100-80GB", DType::Float16, 4, 1, true,
     false, 1024, false},
    {"gpt2-xl_zero1_gas4_8xa100.json", 1557611200, 1, 1, 8, "A100-80GB", DType::Float16, 2, 4,
     false, false, 1024, false},
    {"llama2-7b_zero2_8xh100.json", 6738415616, 2, 1, 8, "H100-SXM-80GB", DType::BFloat16, 1, 1,
     true, false, 4096, true},
    {"llama2-70b_zero3_64xh100.json", 68976648192, 3, 8, 8, "H100-SXM-80GB", DType::BFloat16, 1, 1,
     true, false, 4096, true},
    {"llama2-13b_zero2_offload_8xa100.json", 13015864320, 2, 1, 8, "A100-80GB", DType::BFloat16, 1,
     1, true, true, 4096, true},
    {"tiny_zero2_4gpu.json", 227264, 2, 1, 4, "RTX-4090", DType::Float16, 1, 1, true, false, 512,
     false},
};

TEST(Scenario, EveryShippedScenarioLoadsWithItsStatedValues) {
  for (const auto& e : kShipped) {
    SCOPED_TRACE(e.file);
    const Scenario s = load_ok(kScenarios + e.file);
    EXPECT_EQ(s.name + ".json", e.file);  // names match file names
    EXPECT_FALSE(s.description.empty());
    EXPECT_EQ(s.model.num_parameters(), e.params);
    EXPECT_EQ(s.ds.zero.stage, e.stage);
    EXPECT_EQ(s.cluster.nodes, e.nodes);
    EXPECT_EQ(s.cluster.gpus_per_node, e.gpus_per_node);
    EXPECT_EQ(s.cluster.gpu.name, e.gpu);
    EXPECT_EQ(s.ds.lp_dtype(), e.lp);
    EXPECT_EQ(s.ds.micro_batch, e.micro);
    EXPECT_EQ(s.training.micro_batch, e.micro);
    EXPECT_EQ(s.ds.grad_accum_steps, e.gas);
    EXPECT_EQ(s.ds.train_batch_size, e.micro * e.gas * e.nodes * e.gpus_per_node);
    EXPECT_EQ(s.ds.zero.overlap_comm, e.overlap_comm);
    EXPECT_EQ(s.ds.zero.offload_optimizer.device == OffloadDevice::Cpu, e.offload_cpu);
    EXPECT_EQ(s.training.seq_len, e.seq_len);
    EXPECT_EQ(s.training.activation_checkpointing, e.checkpointing);
    EXPECT_TRUE(s.training.flash_attention);
    EXPECT_EQ(s.steps, kDefaultSteps);  // the shipped scenarios leave steps to the default
    EXPECT_EQ(s.version, DeepSpeedVersion::Edaa722);
    EXPECT_EQ(s.mode, Accounting::DeepSpeed);
  }
}

TEST(Scenario, ScenariosFolderHoldsOnlyListedScenariosAndTheirCompanions) {
  std::set<std::string> known = {"tiny_params.json", "llama2-70b_zero3_ds_config.json"};
  for (const auto& e : kShipped) known.insert(e.file);
  std::size_t scenarios = 0;
  for (const auto& f : std::filesystem::directory_iterator(kScenarios)) {
    if (f.path().extension() != ".json") continue;
    EXPECT_TRUE(known.count(f.path().filename().string()))
        << f.path() << " is not covered by a test";
    ++scenarios;
  }
  EXPECT_EQ(scenarios, known.size());
}

TEST(Scenario, ShippedFileReferencesResolveBesideTheScenario) {
  const Scenario tiny = load_ok(kScenarios + "tiny_zero2_4gpu.json");
  EXPECT_EQ(tiny.model_source.kind, ModelSource::Kind::ParamList);
  EXPECT_EQ(tiny.model_source.path, kScenarios + "tiny_params.json");
  EXPECT_EQ(tiny.model.params.size(), 15u);
  EXPECT_EQ(tiny.model.params[0].name, "embed.weight");
  EXPECT_EQ(tiny.model.grad_order.front(), 14u);  // head.weight first in backward
  EXPECT_EQ(tiny.ds.zero.reduce_bucket_size, 50000u);
  const Scenario big = load_ok(kScenarios + "llama2-70b_zero3_64xh100.json");
  EXPECT_EQ(big.ds_config_path, kScenarios + "llama2-70b_zero3_ds_config.json");
  EXPECT_EQ(big.model_source.kind, ModelSource::Kind::Zoo);
  EXPECT_EQ(big.model_source.zoo, "llama2-70b");
  EXPECT_EQ(big.ds.zero.prefetch_bucket_size, 50000000u);
  EXPECT_TRUE(big.training.zero_init);
}

TEST(Scenario, HfConfigAndDsConfigFilesWithNonDefaultOptions) {
  auto r = load_scenario_file(kData + "hf_and_file.json");
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  const Scenario& s = r.value();
  EXPECT_EQ(s.name, "gpt2 from a Hugging Face config and a ds_config file");
  EXPECT_EQ(s.source, kData + "hf_and_file.json");
  EXPECT_EQ(s.model_source.kind, ModelSource::Kind::HfConfig);
  EXPECT_EQ(s.model_source.path, kData + "../hf/gpt2.json");
  EXPECT_EQ(s.model.num_parameters(), 124439808u);
  EXPECT_EQ(s.ds_config_path, kData + "zero1_ds_config.json");
  EXPECT_EQ(s.ds.zero.stage, 1);
  EXPECT_EQ(s.ds.zero.reduce_bucket_size, 200000000u);
  EXPECT_EQ(s.ds.micro_batch, 4u);
  EXPECT_EQ(s.ds.grad_accum_steps, 2u);  // 64 / (4 x 8 ranks)
  EXPECT_EQ(s.cluster.gpu.name, "H100-SXM-80GB");
  EXPECT_EQ(s.cluster.world_size(), 8u);
  EXPECT_EQ(s.training.seq_len, 512u);
  EXPECT_TRUE(s.training.activation_checkpointing);
  EXPECT_FALSE(s.training.flash_attention);
  EXPECT_EQ(s.steps, 3u);
  EXPECT_EQ(s.version, DeepSpeedVersion::V0_14_4);
  EXPECT_EQ(s.mode, Accounting::Paper);
}

TEST(Scenario, AutoValuesResolveFromClusterAndModel) {
  auto r = load_scenario_file(kData + "synthetic_auto.json");
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  const Scenario& s = r.value();
  EXPECT_EQ(s.name, "synthetic_auto");  // no "name": the file's stem
  EXPECT_EQ(s.model_source.kind, ModelSource::Kind::Params);
  EXPECT_EQ(s.model_source.params, 13e9);
  EXPECT_EQ(s.model.num_parameters(), 13000000000u);
  ASSERT_TRUE(s.model.arch.has_value());
  const std::uint64_t h = s.model.arch->hidden;
  EXPECT_EQ(s.ds.train_batch_size, 2u * 2u * 16u);
  EXPECT_EQ(s.ds.zero.reduce_bucket_size, h * h);
  EXPECT_EQ(s.ds.zero.param_persistence_threshold, 10 * h);
  // Defaults of an absent "training": seq_len = min(4096, context), no checkpointing, flash,
  // kDefaultSteps steps (a warm-up step, then the steady one).
  EXPECT_EQ(s.training.seq_len, std::min<std::uint64_t>(4096, s.model.arch->max_seq));
  EXPECT_FALSE(s.training.activation_checkpointing);
  EXPECT_EQ(s.steps, kDefaultSteps);
}

// --- bad input: every error names the scenario file and the pointer
// -------------------------------

const std::string kHead = R"("format": "zerosim-scenario", "version": 1, )";
const std::string kGood =
    R"("model": {"params": 1e9}, "deepspeed": {"train_micro_batch_size_per_gpu": 1},
                              "cluster": {"gpu": "A100-80GB", "gpus_per_node": 2})";

std::string errors_of(const std::string& body) {
  auto r = load_scenario_text("{" + body + "}", "s.json", kData);
  EXPECT_FALSE(r.ok());
  return r.diagnostics().to_string();
}

TEST(ScenarioBadInput, MinimalScenarioIsAccepted) {
  auto r = load_scenario_text("{" + kHead + kGood + "}", "s.json", "");
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  EXPECT_EQ(r.value().cluster.nodes, 1u);
  EXPECT_EQ(r.value().cluster.world_size(), 2u);
  EXPECT_EQ(r.value().ds.zero.stage, 0);
}

TEST(ScenarioBadInput, FormatAndVersion) {
  EXPECT_EQ(errors_of(R"("format": "zerosim-schedule", "version": 1, )" + kGood),
            "s.json: /format: expected \"zerosim-scenario\", got \"zerosim-schedule\"\n");
  EXPECT_EQ(errors_of(R"("format": "zerosim-scenario", "version": 2, )" + kGood),
            "s.json: /version: expected version 1, got 2\n");
  EXPECT_EQ(errors_of(kGood),
            "s.json: /: expected \"format\": \"zerosim-scenario\", got no \"format\" key\n");
}

TEST(ScenarioBadInput, SyntaxErrorHasLineAndColumn) {
  auto r = load_scenario_text("{\n  \"format\": \"zerosim-scenario\",\n  \"version\": 1,,\n}",
                              "s.json", "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.diagnostics().to_string().rfind("s.json: invalid JSON at line 3, column 16: ", 0), 0u)
      << r.diagnostics().to_string();
}

TEST(ScenarioBadInput, UnknownKeysWithDidYouMean) {
  EXPECT_EQ(errors_of(kHead + kGood + R"(, "traning": {})"),
            "s.json: /traning: unknown key \"traning\" (did you mean \"training\"?)\n");
  EXPECT_EQ(
      errors_of(kHead + kGood + R"(, "training": {"seq_lenght": 4})"),
      "s.json: /training/seq_lenght: unknown key \"seq_lenght\" (did you mean \"seq_len\"?)\n");
  EXPECT_EQ(
      errors_of(
          kHead +
          R"("model": {"params": 1e9}, "deepspeed": {"train_micro_batch_size_per_gpu": 1}, "cluster": {"gpu": "A100-80GB", "gpus_per_nodes": 2})"),
      "s.json: /cluster/gpus_per_nodes: unknown key \"gpus_per_nodes\" (did you mean "
      "\"gpus_per_node\"?)\n");
}

TEST(ScenarioBadInput, ModelNeedsExactlyOneSource) {
  const std::string rest =
      R"(, "deepspeed": {"train_micro_batch_size_per_gpu": 1}, "cluster": {"gpu": "A100-80GB"})";
  EXPECT_EQ(errors_of(kHead + R"("model": {"zoo": "gpt2-xl", "params": 1e9})" + rest),
            "s.json: /model: expected exactly one of \"zoo\", \"hf_config\", \"param_list\", "
            "\"params\", got "
            "\"zoo\" and \"params\"\n");
  EXPECT_EQ(errors_of(kHead + R"("model": {})" + rest),
            "s.json: /model: expected one of \"zoo\", \"hf_config\", \"param_list\", \"params\", "
            "got none\n");
  EXPECT_EQ(errors_of(kHead + R"("model": {"params": -5})" + rest),
            "s.json: /model/params: expected a number in [1, 1e+15], got -5\n");
}

// Errors of the model, the GPU and the DeepSpeed block are all collected in one pass.
TEST(ScenarioBadInput, UnknownZooModelAndGpuPointAtTheirKeys) {
  auto r = load_scenario_text("{" + kHead +
                                  R"("model": {"zoo": "llama2-7bb"}, "cluster": {"gpu": "H1000"},
             "deepspeed": {"train_micro_batch_size_per_gpu": 1,
                           "zero_optimization": {"reduce_bucket_sise": 5}}})",
                              "s.json", "");
  ASSERT_FALSE(r.ok());
  std::vector<std::string> pointers;
  for (const auto& d : r.diagnostics().items()) {
    EXPECT_EQ(d.source, "s.json");
    if (d.severity == Severity::Error) pointers.push_back(d.pointer);
  }
  EXPECT_EQ(pointers,
            (std::vector<std::string>{"/model/zoo", "/cluster/gpu",
                                      "/deepspeed/zero_optimization/reduce_bucket_sise"}));
  const std::string text = r.diagnostics().to_string();
  EXPECT_NE(text.find("llama2-7bb"), std::string::npos) << text;
  EXPECT_NE(text.find("H1000"), std::string::npos) << text;
}

TEST(ScenarioBadInput, InlineDeepSpeedErrorsGetTheDeepspeedPrefix) {
  auto r =
      load_scenario_text("{" + kHead + R"("model": {"params": 1e9}, "cluster": {"gpu": "A100-80GB"},
      "deepspeed": {"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": "three"}}})",
                         "s.json", "");
  ASSERT_FALSE(r.ok());
  ASSERT_FALSE(r.diagnostics().items().empty());
  const Diagnostic& d = r.diagnostics().items()[0];
  EXPECT_EQ(d.source, "s.json");
  EXPECT_EQ(d.pointer, "/deepspeed/zero_optimization/stage");
  EXPECT_NE(d.message.find("\"three\""), std::string::npos) << d.message;
}

TEST(ScenarioBadInput, DeepSpeedBlockAndFileAreExclusive) {
  EXPECT_EQ(errors_of(kHead + R"("model": {"params": 1e9}, "cluster": {"gpu": "A100-80GB"},
                                "deepspeed": {"train_micro_batch_size_per_gpu": 1}, "deepspeed_config": "x.json")"),
            "s.json: /: expected one of \"deepspeed\" and \"deepspeed_config\", got both\n");
  EXPECT_EQ(errors_of(kHead + R"("model": {"params": 1e9}, "cluster": {"gpu": "A100-80GB"})"),
            "s.json: /: expected \"deepspeed\": {ds_config} or \"deepspeed_config\": path, got "
            "neither\n");
}

TEST(ScenarioBadInput, ReferencedFileErrorsNameTheFileThenTheScenarioKey) {
  auto r = load_scenario_file(kData + "bad_ds_reference.json");
  ASSERT_FALSE(r.ok());
  const auto& items = r.diagnostics().items();
  ASSERT_GE(items.size(), 2u);
  EXPECT_EQ(items.front().source, kData + "bad_ds_config.json");
  EXPECT_EQ(items.front().pointer, "/zero_optimization/stage");
  EXPECT_EQ(items.back().to_string(),
            "note: " + kData +
                "bad_ds_reference.json: /deepspeed_config: the DeepSpeed config "
                "named here failed to load (errors above)");
  const std::string missing = errors_of(
      kHead +
      R"("model": {"hf_config": "no_such.json"}, "deepspeed": {"train_micro_batch_size_per_gpu": 1},
                                                  "cluster": {"gpu": "A100-80GB"})");
  EXPECT_EQ(missing,
            kData +
                "no_such.json: cannot read file: No such file or directory\n"
                "note: s.json: /model/hf_config: the Hugging Face config named here failed to load "
                "(errors above)\n");
}

TEST(ScenarioBadInput, ClusterAndTrainingRanges) {
  EXPECT_EQ(
      errors_of(kHead +
                R"("model": {"params": 1e9}, "deepspeed": {"train_micro_batch_size_per_gpu": 1},
                                "cluster": {"gpu": "A100-80GB", "nodes": 0, "gpus_per_node": 2000})"),
      "s.json: /cluster/nodes: expected an integer 1..16777216, got 0\n"
      "s.json: /cluster/gpus_per_node: expected an integer 1..1024, got 2000\n");
  EXPECT_EQ(
      errors_of(
          kHead +
          R"("model": {"params": 1e9}, "deepspeed": {"train_micro_batch_size_per_gpu": 1}, "cluster": {"nodes": 2})"),
      "s.json: /cluster: expected key \"gpu\" (a name from the GPU catalog), got none\n");
  EXPECT_EQ(errors_of(kHead + kGood +
                      R"(, "training": {"steps": 0, "attention": "flsh", "seq_len": "long"})"),
            "s.json: /training/seq_len: expected an integer 1..16777216, got \"long\"\n"
            "s.json: /training/attention: expected one of \"flash\", \"eager\", got \"flsh\" (did "
            "you mean "
            "\"flash\"?)\n"
            "s.json: /training/steps: expected an integer 1..10000, got 0\n");
  EXPECT_EQ(errors_of(kHead + kGood + R"(, "training": {"micro_batch": 4})"),
            "s.json: /training/micro_batch: expected the batch in the DeepSpeed config "
            "(\"train_micro_batch_size_per_gpu\", \"gradient_accumulation_steps\"), got "
            "\"micro_batch\" here\n");
}

TEST(ScenarioBadInput, ZeroInitOnlyWithStage3) {
  const std::string stage3 =
      R"("model": {"params": 1e9}, "deepspeed": {"train_micro_batch_size_per_gpu": 1,
         "zero_optimization": {"stage": 3}}, "cluster": {"gpu": "A100-80GB", "gpus_per_node": 2})";
  auto r = load_scenario_text("{" + kHead + stage3 + R"(, "training": {"zero_init": true}})",
                              "s.json", "");
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  EXPECT_TRUE(r.value().training.zero_init);
  EXPECT_EQ(errors_of(kHead + kGood + R"(, "training": {"zero_init": true})"),
            "s.json: /training/zero_init: expected ZeRO stage 3 (zero.Init partitions params as "
            "they are built), got stage 0\n");
  EXPECT_EQ(errors_of(kHead + kGood + R"(, "training": {"zero_init": 1})"),
            "s.json: /training/zero_init: expected true or false, got 1\n");
}

TEST(ScenarioBadInput, OverflowStepsAscendingAndSimulated) {
  auto r = load_scenario_text(
      "{" + kHead + kGood + R"(, "training": {"steps": 4, "overflow_steps": [0, 2]}})", "s.json",
      "");
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  EXPECT_EQ(r.value().overflow_steps, (std::vector<std::uint32_t>{0, 2}));
  EXPECT_EQ(errors_of(kHead + kGood + R"(, "training": {"steps": 3, "overflow_steps": [1, 0]})"),
            "s.json: /training/overflow_steps: expected ascending steps without repeats, got 0 "
            "after 1\n");
  EXPECT_EQ(
      errors_of(kHead + kGood + R"(, "training": {"steps": 2, "overflow_steps": [1]})"),
      "s.json: /training/overflow_steps: expected steps before the last one (1, the steady state "
      "a simulation reports), got 1\n");
  EXPECT_EQ(errors_of(kHead + kGood + R"(, "training": {"overflow_steps": [-1]})"),
            "s.json: /training/overflow_steps/0: expected an integer 0..9999, got -1\n");
}

TEST(ScenarioBadInput, ModeAndVersionNames) {
  EXPECT_EQ(errors_of(kHead + kGood + R"(, "mode": "papr", "deepspeed_version": "0.15")"),
            "s.json: /mode: expected one of \"deepspeed\", \"paper\", got \"papr\" (did you mean "
            "\"paper\"?)\n"
            "s.json: /deepspeed_version: expected one of \"edaa722\" (or its full commit hash), "
            "\"0.14.4\" "
            "(or \"v0.14.4\"), got \"0.15\"\n");
}

TEST(ScenarioBadInput, SeqLenBeyondTheContextIsAWarning) {
  auto r = load_scenario_text(
      "{" + kHead +
          R"("model": {"zoo": "gpt2-xl"}, "deepspeed": {"train_micro_batch_size_per_gpu": 1},
      "cluster": {"gpu": "A100-80GB"}, "training": {"seq_len": 2048}})",
      "s.json", "");
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  EXPECT_EQ(r.diagnostics().to_string(),
            "warning: s.json: /training/seq_len: seq_len 2048 exceeds the model's context of 1024 "
            "tokens\n");
}

TEST(ScenarioBadInput, MissingScenarioFile) {
  auto r = load_scenario_file("/nonexistent/scenario.json");
  EXPECT_EQ(r.diagnostics().to_string(),
            "/nonexistent/scenario.json: cannot read file: No such file or directory\n");
}

}  // namespace
}  // namespace zerosim
