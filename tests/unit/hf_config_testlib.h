// Loading a Hugging Face config.json text in the HF config tests (model_hf_*_test.cc): the model,
// or the diagnostics of a refused config, with the test failing when the outcome is the other one;
// a zoo model the same way; and the look-ups of a param or module by name those tests share.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "zerosim/model_loader.h"

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

}  // namespace zerosim::hftest
