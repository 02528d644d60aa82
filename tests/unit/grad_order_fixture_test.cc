// The gradient-ready order zerosim derives for zoo families equals the order recorded on tiny
// replicas with tools/zerosim_record and Debian's torch (tests/recorder/zoo_replicas.py wrote
// tests/data/recordings/grad_order/<family>.json: the replica's HF config and its AccumulateGrad
// hook order). GPT-2's LayerNorms ready their weight before their bias; its Conv1Ds the bias first.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "temp_path.h"
#include "zerosim/model_loader.h"

namespace zerosim {
namespace {

struct Fixture {
  std::string torch;
  std::string hf_config;
  std::vector<std::string> order;
};

Fixture load(const std::string& family) {
  std::ifstream f(std::string(ZEROSIM_TEST_DATA_DIR) + "/recordings/grad_order/" + family +
                  ".json");
  const auto j = nlohmann::json::parse(f);
  return {j.at("torch").get<std::string>(), j.at("hf_config").dump(),
          j.at("grad_order").get<std::vector<std::string>>()};
}

std::vector<std::string> derived(const std::string& hf_config, const std::string& family) {
  auto m = load_hf_config_text(hf_config, family + " replica");
  EXPECT_TRUE(m.ok()) << m.diagnostics().to_string();
  std::vector<std::string> names;
  if (!m.ok()) return names;
  for (auto id : m->grad_order) names.push_back(m->params[id].name);
  return names;
}

class RecordedGradOrder : public ::testing::TestWithParam<std::string> {};

TEST_P(RecordedGradOrder, DerivedOrderEqualsTheRecording) {
  const Fixture fx = load(GetParam());
  EXPECT_EQ(derived(fx.hf_config, GetParam()), fx.order) << "recorded with torch " << fx.torch;
}

INSTANTIATE_TEST_SUITE_P(Families, RecordedGradOrder, ::testing::Values("gpt2", "llama"));

TEST(RecordedGradOrder, Gpt2LayerNormWeightBeforeBiasConv1dBiasFirst) {
  const auto order = derived(load("gpt2").hf_config, "gpt2");
  const auto pos = [&](const std::string& n) {
    return std::find(order.begin(), order.end(), n) - order.begin();
  };
  EXPECT_LT(pos("transformer.h.0.ln_1.weight"), pos("transformer.h.0.ln_1.bias"));
  EXPECT_LT(pos("transformer.h.0.attn.c_attn.bias"), pos("transformer.h.0.attn.c_attn.weight"));
}

}  // namespace
}  // namespace zerosim

// --grad-order FILE (apply_recorded_grad_order): a recorded order replaces the derived one.
namespace zerosim {
namespace {

std::string write_temp(const std::string& name, const nlohmann::json& j) {
  std::string path = zerosim::testutil::unique_temp_path("grad_order_" + name + ".json");
  std::ofstream(path) << j.dump();
  return path;
}

nlohmann::json names_of(const ModelDesc& m, const std::vector<std::uint32_t>& ids) {
  nlohmann::json a = nlohmann::json::array();
  for (auto id : ids) a.push_back(m.params[id].name);
  return a;
}

TEST(RecordedGradOrderFile, ReplacesTheDerivedOrder) {
  auto m = load_zoo_model("gpt2");
  ASSERT_TRUE(m.ok());
  std::vector<std::uint32_t> want(m->grad_order.rbegin(), m->grad_order.rend());
  const auto path = write_temp("reversed", {{"grad_order", names_of(m.value(), want)}});
  const Diagnostics d = apply_recorded_grad_order(m.value(), path);
  ASSERT_FALSE(d.has_errors()) << d.to_string();
  EXPECT_EQ(m->grad_order, want);
  EXPECT_TRUE(m->grad_order_recorded);
}

TEST(RecordedGradOrderFile, AcceptsTheRecordersParamListOfTheSameModel) {
  auto m = load_zoo_model("gpt2");
  ASSERT_TRUE(m.ok());
  nlohmann::json params = nlohmann::json::array();
  for (const auto& p : m->params) params.push_back({p.name, p.shape});
  const auto path = write_temp("same", {{"format", "zerosim-param-list"},
                                        {"version", 1},
                                        {"params", params},
                                        {"grad_order", names_of(m.value(), m->grad_order)}});
  EXPECT_FALSE(apply_recorded_grad_order(m.value(), path).has_errors());
}

// The recorder's params.rankR.json is a version 2 list (its module section beside the order): it
// is both the model (--param-list) and its own --grad-order.
TEST(RecordedGradOrderFile, AcceptsTheRecordersVersionTwoParamList) {
  const std::string path =
      std::string(ZEROSIM_TEST_DATA_DIR) + "/recordings/tiny_gloo_2ranks/params.rank0.json";
  auto m = load_param_list_file(path);
  ASSERT_TRUE(m.ok()) << m.diagnostics().to_string();
  ASSERT_FALSE(m->modules.empty());
  const auto recorded = m->grad_order;
  std::reverse(m.value().grad_order.begin(), m.value().grad_order.end());
  const Diagnostics d = apply_recorded_grad_order(m.value(), path);
  ASSERT_FALSE(d.has_errors()) << d.to_string();
  EXPECT_EQ(m->grad_order, recorded);
}

TEST(RecordedGradOrderFile, ARecordingOfAnotherModelIsRefusedAtItsFirstDifference) {
  auto m = load_zoo_model("gpt2");
  ASSERT_TRUE(m.ok());
  nlohmann::json params = nlohmann::json::array();
  for (const auto& p : m->params) params.push_back({p.name, p.shape});
  params[3][1][0] = 7;
  const auto path =
      write_temp("other", {{"params", params}, {"grad_order", names_of(m.value(), m->grad_order)}});
  const std::string e = apply_recorded_grad_order(m.value(), path).to_string();
  EXPECT_NE(e.find("/params/3: expected the model's parameter 3 \"" + m->params[3].name + "\""),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("a recording of another model"), std::string::npos) << e;
}

TEST(RecordedGradOrderFile, AMissingOrUnknownParamIsRefused) {
  auto m = load_zoo_model("gpt2");
  ASSERT_TRUE(m.ok());
  auto names = names_of(m.value(), m->grad_order);
  names.erase(names.begin());
  names.push_back("transformer.h.0.attn.bias_typo");
  const std::string e =
      apply_recorded_grad_order(m.value(), write_temp("missing", {{"grad_order", names}}))
          .to_string();
  EXPECT_NE(e.find("unknown parameter \"transformer.h.0.attn.bias_typo\""), std::string::npos) << e;
  EXPECT_NE(e.find("missing 1 trainable parameter"), std::string::npos) << e;
  EXPECT_NE(apply_recorded_grad_order(m.value(),
                                      write_temp("nokey", {{"params", nlohmann::json::array()}}))
                .to_string()
                .find("missing required key \"grad_order\""),
            std::string::npos);
}

}  // namespace
}  // namespace zerosim
