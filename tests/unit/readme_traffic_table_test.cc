// README.md's traffic table ("Traffic per rank relative to plain data parallel") is what its own
// recipe prints (#13 item 3: the README's recipe did not reproduce its table). The docs test runs
// the recipe but compares nothing it prints, so a change of the traffic would leave the table
// stale; this test reads every cell and the ratios from the README as it stands and runs the
// recipe's command for each, and does the same for the first-step and init figures of the prose.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "cli_testlib.h"

namespace zerosim {
namespace {

using clitest::run_cli;

std::string readme() { return clitest::read_all(std::string(ZEROSIM_SOURCE_DIR) + "/README.md"); }

std::int64_t digits(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), ','), s.end());
  return std::stoll(s);
}

// The recipe: `simulate --model gpt2-xl --gpus 8 --stage S --precision fp16 --mode M --format
// json`, its summary JSON's time object.
nlohmann::json recipe(int stage, const std::string& mode) {
  const auto r = run_cli("simulate --model gpt2-xl --gpus 8 --stage " + std::to_string(stage) +
                         " --precision fp16 --mode " + mode + " --format json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out;
  return j.is_discarded() ? nlohmann::json() : j["time"];
}

std::int64_t steady_bytes(const nlohmann::json& time) {
  return time["steps"].back()["bytes_sent"].get<std::int64_t>();
}

TEST(ReadmeTrafficTable, EveryCellIsWhatTheRecipePrints) {
  const std::string text = readme();
  // | 0 (DDP) | 5,451,639,200 B (1.00×) | 5,451,639,200 B (1.00×) |
  const std::regex row(
      R"(\n\| ([0-3])(?: \(DDP\))? \| ([0-9,]+) B \(([0-9.]+)×\) \| ([0-9,]+) B \(([0-9.]+)×\) \|)");
  std::int64_t ddp = 0;
  int rows = 0;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), row); it != std::sregex_iterator();
       ++it, ++rows) {
    const std::smatch& m = *it;
    const int stage = std::stoi(m[1]);
    SCOPED_TRACE("README traffic row of stage " + std::to_string(stage));
    const std::int64_t ds = steady_bytes(recipe(stage, "deepspeed"));
    const std::int64_t paper = steady_bytes(recipe(stage, "paper"));
    EXPECT_EQ(digits(m[2]), ds);
    EXPECT_EQ(digits(m[4]), paper);
    if (stage == 0) ddp = ds;
    ASSERT_GT(ddp, 0) << "the stage 0 (DDP) row comes first";
    // The ratios are to DDP's bytes, rounded to the two decimals shown.
    EXPECT_NEAR(std::stod(m[3]), static_cast<double>(ds) / static_cast<double>(ddp), 0.005);
    EXPECT_NEAR(std::stod(m[5]), static_cast<double>(paper) / static_cast<double>(ddp), 0.005);
  }
  EXPECT_EQ(rows, 4) << "the README's traffic table was not found";
}

TEST(ReadmeTrafficTable, FirstStepAndInitFiguresAreTheSimulated) {
  const std::string text = readme();
  const std::regex first(R"(sends 1\.55× \(([0-9,]+) B\); init broadcasts\s+another ([0-9,]+) B)");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(text, m, first)) << "the README's stage 3 first-step sentence";
  const auto time = recipe(3, "deepspeed");
  EXPECT_EQ(digits(m[1]), time["steps"][0]["bytes_sent"].get<std::int64_t>());
  EXPECT_EQ(digits(m[2]), time["init_bytes_sent"].get<std::int64_t>());
}

}  // namespace
}  // namespace zerosim
