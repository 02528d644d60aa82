// Loading a Hugging Face config.json text in the HF config tests (model_hf_*_test.cc): the model,
// or the diagnostics of a refused config, with the test failing when the outcome is the other one.
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

}  // namespace zerosim::hftest
