// Model and precision flags as users type them: --params with a size suffix, --precision in
// DeepSpeed's and torch's spellings and any case, --hf-config given a model directory, and the
// refusal of a model that is not in the zoo. Each garbage input is one line naming the flag or
// file, exit 1.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli_testlib.h"
#include "temp_path.h"

namespace zerosim {
namespace {

using clitest::expect_one_line_error;
using clitest::run_cli;

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

TEST(CliModelInputs, ParamsAcceptsSizeSuffixes) {
  const auto plain = run_cli("plan --params 7e9 --format json");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  for (const char* n : {"7B", "7b", "7000M", "0.007T"}) {
    const auto r = run_cli(std::string("plan --params ") + n + " --format json");
    EXPECT_EQ(r.exit_code, 0) << n << ": " << r.err;
    EXPECT_EQ(r.out, plain.out) << n;
  }
  EXPECT_NE(first_line(run_cli("plan --params 70e9").out).find("70,000,000,000 parameters"),
            std::string::npos);
  for (const char* bad : {"7X", "B", "7BB", "seven"})
    expect_one_line_error(std::string("plan --params ") + bad,
                          "--params: expected a parameter count such as 7e9, 7B or 1.3B, got");
}

TEST(CliModelInputs, PrecisionTakesDeepSpeedSpellingsInAnyCase) {
  const auto bf16 = run_cli("plan --precision bf16 --format json");
  ASSERT_EQ(bf16.exit_code, 0) << bf16.err;
  for (const char* p : {"BF16", "bfloat16", "torch.bfloat16", "BFloat16"}) {
    const auto r = run_cli(std::string("plan --precision ") + p + " --format json");
    EXPECT_EQ(r.exit_code, 0) << p << ": " << r.err;
    EXPECT_EQ(r.out, bf16.out) << p;
  }
  const auto fp16 = run_cli("plan --precision fp16 --format json");
  EXPECT_EQ(run_cli("plan --precision half --format json").out, fp16.out);
  EXPECT_EQ(run_cli("plan --precision FP16 --format json").out, fp16.out);
  expect_one_line_error("plan --precision bfloat17", "--precision: expected one of fp16, bf16");
  expect_one_line_error("plan --precision int8", "--precision: expected one of fp16, bf16");
  // Other enum flags are case-insensitive too.
  EXPECT_EQ(run_cli("plan --format JSON").out, bf16.out);
}

TEST(CliModelInputs, HfConfigAcceptsAModelDirectory) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(zerosim::testutil::unique_temp_path("model_dir_test"));
  fs::create_directories(dir);
  const std::string config = R"({"model_type": "mixtral", "vocab_size": 32000,
      "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
      "num_attention_heads": 32, "num_key_value_heads": 8})";
  std::ofstream(dir / "config.json") << config;
  // --zero-init: without it every GPU first holds the whole 16-bit model (87 GiB), and nothing
  // fits.
  const auto r = run_cli("plan --zero-init --hf-config " + dir.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(first_line(r.out).find("46,702,792,704 parameters"), std::string::npos) << r.out;
  const fs::path empty = fs::path(zerosim::testutil::unique_temp_path("empty_model_dir_test"));
  fs::create_directories(empty);
  expect_one_line_error("plan --hf-config " + empty.string(),
                        empty.string() + ": a directory without a config.json");
  std::ofstream(dir / "config.json")
      << config.substr(0, config.size() - 1) << R"(, "num_local_experts": -1})";
  expect_one_line_error("plan --hf-config " + dir.string(),
                        (dir / "config.json").string() + ": /num_local_experts:");
  fs::remove_all(dir);
  fs::remove_all(empty);
}

TEST(CliModelInputs, ModelNotInTheZooPointsToHfConfig) {
  expect_one_line_error("plan --model Qwen/Qwen2-72B",
                        "--model: model \"Qwen/Qwen2-72B\" is not in the zoo; pass its config.json "
                        "with --hf-config (`zerosim models` lists the zoo)");
  const auto r = run_cli("plan --model Qwen/Qwen2-72B");
  EXPECT_EQ(r.err.find("qwen2-7b"), std::string::npos) << r.err;
  expect_one_line_error("plan --model mixtral-8x7", "(did you mean \"mixtral-8x7b\"?)");
}

}  // namespace
}  // namespace zerosim
