// Loading a Hugging Face config.json text in the HF config tests (model_hf_*_test.cc): the model,
// or the diagnostics of a refused config, with the test failing when the outcome is the other one;
// a zoo model the same way; the look-ups of a param or module by name those tests share; and the
// check that a model plans and fits at every stage.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "zerosim/gpu_catalog.h"
#include "zerosim/model_loader.h"
#include "zerosim/planner.h"

namespace zerosim::hftest {

using Shape = std::vector<std::uint64_t>;

inline ModelDesc load_ok(const std::string& text) {
  auto r = load_hf_config_text(text, "c.json");
  EXPECT_TRUE(r.ok()) << r.diagnostics().to_string();
  return r.ok() ? r.value() : ModelDesc{};
}

inline std::string load_error(const std::string& text) {
  auto r = load_hf_config_text(text, "c.json");
  EXPECT_FALSE(r.ok());
  return r.diagnostics().to_string();
}

inline ModelDesc zoo(const std::string& name) {
  auto r = load_zoo_model(name);
  EXPECT_TRUE(r.ok()) << r.diagnostics().to_string();
  return r.ok() ? r.value() : ModelDesc{};
}

/// The position of param `name` in named_parameters() order, -1 when the model has none.
inline int index_of(const ModelDesc& m, const std::string& name) {
  for (std::size_t i = 0; i < m.params.size(); ++i)
    if (m.params[i].name == name) return static_cast<int>(i);
  return -1;
}

/// Param `name`'s shape, {} when the model has none.
inline Shape shape_of(const ModelDesc& m, const std::string& name) {
  const int i = index_of(m, name);
  return i < 0 ? Shape{} : m.params[static_cast<std::size_t>(i)].shape;
}

/// Module `name` of the traced nn.Module tree, nullptr when there is none.
inline const ModuleNode* module(const ModelDesc& m, const std::string& name) {
  for (const auto& n : m.modules)
    if (n.name == name) return &n;
  return nullptr;
}

/// `model` on one node of 4 x H100 at `seq_len` tokens, bf16: the plan has a row without offload
/// for every stage 0..3, and every row fits.
inline void expect_plans_at_every_stage(ModelDesc model, std::uint64_t seq_len) {
  PlanRequest req;
  req.model = std::move(model);
  req.cluster.gpu = find_gpu("H100-SXM-80GB").value();
  req.cluster.nodes = 1;
  req.cluster.gpus_per_node = 4;
  req.base = default_ds_config(0, DType::BFloat16);
  req.training.seq_len = seq_len;
  req.sweep_max_gpus = 4;
  auto plan = make_plan(req);
  ASSERT_TRUE(plan.ok()) << plan.diagnostics().to_string();
  std::vector<int> stages;
  for (const PlanRow& row : plan->rows)
    if (row.offload == OffloadVariant::None) stages.push_back(row.stage);
  EXPECT_EQ(stages, (std::vector<int>{0, 1, 2, 3}));
  for (const PlanRow& row : plan->rows) EXPECT_TRUE(row.fits) << row.stage;
}

}  // namespace zerosim::hftest
