// Issue 13 item 6, "never drop or invent silently", end to end: `plan --scenario`, flags that
// override one scenario value (and say so), plan's exit code 2 when the answer is "does not fit",
// --precision against a ds_config (honoured or refused), DeepSpeed's own bounds for bucket sizes,
// and -o as --output's short form. Each symptom's test fails on the code before the fix.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_testlib.h"
#include "temp_path.h"

namespace {

using namespace zerosim::clitest;  // NOLINT: test-local helpers
using nlohmann::json;

std::string scenario(const std::string& name) {
  return std::string(ZEROSIM_SOURCE_DIR) + "/scenarios/" + name;
}

std::string write_temp(const std::string& name, const std::string& text) {
  std::string path = zerosim::testutil::unique_temp_path("overrides_" + name);
  std::ofstream(path) << text;
  return path;
}

/// The 7B scenario's inline DeepSpeed block, as a file of its own (the flags-only equivalent).
std::string seven_b_ds_config() {
  json s = json::parse(read_all(scenario("llama2-7b_zero2_8xh100.json")));
  return write_temp("7b_ds.json", s["deepspeed"].dump());
}

json plan_json(const std::string& args, CliRun* run = nullptr) {
  CliRun r = run_cli("plan --format json " + args);
  if (run) *run = r;
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 2) << args << "\n" << r.err;
  return json::parse(r.out, nullptr, false);
}

constexpr const char* kSevenBFlags = "--model llama2-7b --seq-len 4096 --activation-checkpointing";

TEST(CliScenario, PlanTakesAScenarioAsItsFlagsWouldSayIt) {
  // Before: "zerosim plan: unknown flag --scenario".
  json from_scenario = plan_json("--scenario " + scenario("llama2-7b_zero2_8xh100.json"));
  json from_flags = plan_json(std::string(kSevenBFlags) + " --ds-config " + seven_b_ds_config());
  ASSERT_FALSE(from_scenario.is_discarded());
  ASSERT_FALSE(from_flags.is_discarded());
  EXPECT_EQ(from_scenario["rows"], from_flags["rows"]);
  EXPECT_EQ(from_scenario["training"], from_flags["training"]);
  EXPECT_EQ(from_scenario["cluster"], from_flags["cluster"]);
}

TEST(CliScenario, AFlagOverridesOneValueAndSaysSo) {
  // Before: "--gpus: cannot be combined with --scenario (edit the scenario instead)".
  CliRun r;
  json over = plan_json("--scenario " + scenario("llama2-7b_zero2_8xh100.json") + " --gpus 16", &r);
  json flags =
      plan_json(std::string(kSevenBFlags) + " --ds-config " + seven_b_ds_config() + " --gpus 16");
  EXPECT_EQ(over["cluster"]["world_size"], 16);
  EXPECT_EQ(over["rows"], flags["rows"]);
  EXPECT_NE(r.err.find("note: --gpus: overrides " + scenario("llama2-7b_zero2_8xh100.json") +
                       " /cluster/nodes (was 1, now 2)"),
            std::string::npos)
      << r.err;
  // A batch factor: train_micro_batch_size_per_gpu changes, and the note says which key.
  json micro = plan_json(
      "--scenario " + scenario("llama2-7b_zero2_8xh100.json") + " --micro-batch 2 --precision fp16",
      &r);
  EXPECT_EQ(micro["training"]["micro_batch"], 2);
  EXPECT_EQ(micro["training"]["precision"], "fp16");
  EXPECT_NE(r.err.find("/deepspeed/train_micro_batch_size_per_gpu (was 1, now 2)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("/deepspeed/bf16/enabled (was true, now false)"), std::string::npos)
      << r.err;
  // The report itself says so too.
  bool in_report = false;
  for (const auto& n : micro["notes"])
    in_report = in_report || n.get<std::string>().rfind("--micro-batch overrides ", 0) == 0;
  EXPECT_TRUE(in_report) << micro["notes"].dump();
}

TEST(CliScenario, RunCommandsOverrideToo) {
  // A scenario whose DeepSpeed config is a file of its own: the override edits a copy of it.
  CliRun r = run_cli("schedule --scenario " + scenario("llama2-70b_zero3_64xh100.json") +
                     " --gpus 128 --stage 3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("128 ranks"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("note: --gpus: overrides"), std::string::npos) << r.err;
  // --stage 3 equals the file's value: no note for a key that did not change.
  EXPECT_EQ(r.err.find("note: --stage"), std::string::npos) << r.err;
  CliRun s = run_cli("simulate --scenario " + scenario("tiny_zero2_4gpu.json") + " --stage 1");
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_NE(s.out.find("stage 1"), std::string::npos) << s.out;
  EXPECT_NE(s.err.find("/deepspeed/zero_optimization/stage (was 2, now 1)"), std::string::npos)
      << s.err;
}

// A scenario whose ds_config leaves to the Trainer what only a flag can give ("auto" batch,
// precision, clipping) was refused with "pass --micro-batch" even when --micro-batch was passed:
// the file was loaded as written and its errors returned before the flags were written in (found
// by a new-user pass). Now the flags fill those values, referenced file or inline block; any other
// error in the file is still its own, and an "auto" no flag fills still names its flag.
TEST(CliScenario, FlagsFillTheDsConfigsAutoValues) {
  const std::string ds = write_temp("auto_ds.json", R"({
    "train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",
    "gradient_accumulation_steps": "auto", "gradient_clipping": "auto",
    "bf16": {"enabled": "auto"}, "fp16": {"enabled": "auto"},
    "zero_optimization": {"stage": 2, "reduce_bucket_size": "auto"}})");
  const std::string body = R"({"format": "zerosim-scenario", "version": 1,
    "model": {"zoo": "gpt2"}, "cluster": {"gpu": "A100-80GB", "nodes": 1, "gpus_per_node": 2},
    "training": {"seq_len": 1024}, )";
  const std::string referenced =
      write_temp("auto_ref.json", body + "\"deepspeed_config\": \"" + ds + "\"}");
  const std::string inlined =
      write_temp("auto_inline.json", body + "\"deepspeed\": " + read_all(ds) + "}");
  const std::string flags =
      " --precision bf16 --micro-batch 2 --grad-accum 4 --gradient-clipping 1.0";
  for (const std::string& s : {referenced, inlined}) {
    CliRun r = run_cli("simulate --scenario " + s + flags);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("2 steps x 4 micro-steps"), std::string::npos) << r.out;
    EXPECT_NE(r.err.find("/deepspeed/bf16/enabled (was \"auto\", now true)"), std::string::npos)
        << r.err;
    json plan = plan_json("--scenario " + s + flags);
    ASSERT_FALSE(plan.is_discarded());
    EXPECT_EQ(plan["training"]["micro_batch"], 2) << plan["training"].dump();
    // Without --grad-accum its "auto" still needs the flag, and the message says which.
    CliRun partial = run_cli("plan --scenario " + s + " --precision bf16 --micro-batch 2 " +
                             "--gradient-clipping 1.0");
    EXPECT_EQ(partial.exit_code, 1);
    EXPECT_NE(partial.err.find("/deepspeed/gradient_accumulation_steps: is \"auto\" and needs a "
                               "value: pass --grad-accum"),
              std::string::npos)
        << partial.err;
  }
  // The file's own error is reported against the file even with flags that fill the autos.
  const std::string typo = write_temp(
      "auto_typo.json", body + "\"deepspeed\": {\"train_micro_batch_size_per_gpu\": \"auto\", " +
                            "\"zero_optimization\": {\"stage\": 2, \"overlap_com\": true}}}");
  CliRun t = run_cli("plan --scenario " + typo + " --micro-batch 2");
  EXPECT_EQ(t.exit_code, 1);
  EXPECT_NE(t.err.find("overlap_com"), std::string::npos) << t.err;
  EXPECT_EQ(t.err.find("note: --micro-batch"), std::string::npos) << t.err;
}

// Every override flag with garbage: one line naming the flag, exit 1.
TEST(CliScenario, GarbageOverridesAreOneLineErrors) {
  const std::string p = "plan --scenario " + scenario("llama2-7b_zero2_8xh100.json");
  const std::string s = "simulate --scenario " + scenario("tiny_zero2_4gpu.json");
  expect_one_line_error(p + " --gpus x", "--gpus: expected an integer 1..16777216, got \"x\"");
  expect_one_line_error(p + " --gpus 12", "--gpus: expected a multiple of the scenario's");
  expect_one_line_error(p + " --nodes 0", "--nodes: expected an integer 1..16777216, got \"0\"");
  expect_one_line_error(p + " --gpus-per-node -1", "--gpus-per-node: expected an integer 1..1024");
  expect_one_line_error(p + " --gpus 16 --nodes 3",
                        "--gpus: expected 24 (--nodes x gpus per node)");
  expect_one_line_error(p + " --gpu H200-NOPE", "--gpu: unknown GPU");
  expect_one_line_error(p + " --micro-batch 0", "--micro-batch: expected an integer 1..1048576");
  expect_one_line_error(p + " --grad-accum x", "--grad-accum: expected an integer 1..1048576");
  expect_one_line_error(p + " --seq-len 0", "--seq-len: expected an integer 1..16777216");
  expect_one_line_error(p + " --precision fp8", "--precision: expected one of");
  expect_one_line_error(p + " --gradient-clipping -1", "--gradient-clipping: expected a number");
  expect_one_line_error(p + " --attention slow", "--attention: expected one of");
  expect_one_line_error(p + " --activation-checkpointing=yes", "takes no value");
  expect_one_line_error(p + " --model nope", "model \"nope\" is not in the zoo");
  expect_one_line_error(p + " --params 1.5", "--params: expected a whole number of parameters");
  expect_one_line_error(p + " --params 1e9 --model gpt2", "give one of --model, --hf-config");
  expect_one_line_error(p + " --hf-config /nonexistent/c.json", "/nonexistent/c.json");
  expect_one_line_error(p + " --param-list /nonexistent/p.json", "/nonexistent/p.json");
  expect_one_line_error(p + " --ds-config /nonexistent/ds.json", "/nonexistent/ds.json");
  expect_one_line_error("plan --scenario /nonexistent/s.json",
                        "/nonexistent/s.json: cannot read file");
  expect_one_line_error(p + " -o", "--output: expected a value (FILE), got nothing");
  expect_one_line_error(s + " --stage 7", "--stage: expected an integer 0..3, got \"7\"");
  expect_one_line_error(s + " --world-size 0", "--world-size: expected an integer 1..16777216");
  expect_one_line_error(s + " --world-size 4 --gpus 4", "give --world-size or --gpus, not both");
}

// Issue 13: plan exited 0 when nothing fits and when the ds_config's own row does not fit.
TEST(CliPlanExit, InfeasibleIsExitTwo) {
  CliRun none = run_cli("plan --model llama2-70b --gpus 1");
  EXPECT_EQ(none.exit_code, 2) << none.err;
  EXPECT_NE(none.out.find("stage"), std::string::npos);  // the report is printed all the same
  EXPECT_EQ(none.err,
            "zerosim plan: infeasible: no stage or offload variant fits on 1 x "
            "H100-SXM-80GB\n");
  const std::string ds0 =
      write_temp("stage0.json",
                 R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
          "zero_optimization": {"stage": 0}})");
  CliRun row = run_cli("plan --model llama2-13b --ds-config " + ds0);
  EXPECT_EQ(row.exit_code, 2) << row.err;
  EXPECT_NE(row.err.find("zerosim plan: infeasible: the ds_config's row (stage 0, offload none) "
                         "does not fit on 8 x H100-SXM-80GB"),
            std::string::npos)
      << row.err;
  EXPECT_EQ(run_cli("plan --model gpt2-small").exit_code, 0);
  EXPECT_NE(run_cli("plan --help").out.find("2 infeasible"), std::string::npos);
}

// Issue 13: --precision bf16 with only `"fp16": {"enabled": "auto"}` planned fp32 without a word.
TEST(CliPrecision, FlagIsHonouredOrRefused) {
  const std::string auto16 =
      write_temp("fp16_auto.json",
                 R"({"train_micro_batch_size_per_gpu": 1, "fp16": {"enabled": "auto"},
          "zero_optimization": {"stage": 2}})");
  json bf = plan_json("--model gpt2-small --precision bf16 --ds-config " + auto16);
  EXPECT_EQ(bf["training"]["precision"], "bf16");
  bool noted = false;
  for (const auto& n : bf["notes"])
    noted = noted || n.get<std::string>().find("added {\"enabled\": true}") != std::string::npos;
  EXPECT_TRUE(noted) << bf["notes"].dump();
  EXPECT_EQ(plan_json("--model gpt2-small --precision fp16 --ds-config " +
                      auto16)["training"]["precision"],
            "fp16");
  const std::string bf16 =
      write_temp("bf16_on.json",
                 R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
          "zero_optimization": {"stage": 2}})");
  expect_one_line_error("plan --model gpt2-small --precision fp16 --ds-config " + bf16,
                        "--precision: conflicts with " + bf16 + " /bf16/enabled = true (got fp16)");
  expect_one_line_error("plan --model gpt2-small --precision fp32 --ds-config " + bf16,
                        "--precision: conflicts with " + bf16 + " /bf16/enabled = true (got fp32)");
  const std::string bare = write_temp(
      "bf16_bare.json",
      R"({"train_micro_batch_size_per_gpu": 1, "bf16": {}, "zero_optimization": {"stage": 2}})");
  expect_one_line_error("plan --model gpt2-small --precision bf16 --ds-config " + bare,
                        "which has no \"enabled\" and so stays off");
}

// --gradient-clipping next to a ds_config that decides otherwise was dropped without a word.
TEST(CliClipping, FlagIsHonouredOrRefused) {
  const std::string written =
      write_temp("clip1.json", R"({"train_micro_batch_size_per_gpu": 1, "gradient_clipping": 1.0,
                      "bf16": {"enabled": true}, "zero_optimization": {"stage": 2}})");
  expect_one_line_error("plan --model gpt2-small --gradient-clipping 0.5 --ds-config " + written,
                        "--gradient-clipping: conflicts with " + written +
                            " /gradient_clipping (got 0.5): the config says 1");
  EXPECT_EQ(
      run_cli("plan --model gpt2-small --gradient-clipping 1 --ds-config " + written).exit_code, 0);
  const std::string absent = write_temp(
      "clip_absent.json", R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
                            "zero_optimization": {"stage": 2}})");
  expect_one_line_error("plan --model gpt2-small --gradient-clipping 0.5 --ds-config " + absent,
                        "the key is absent, so DeepSpeed keeps its default 1");
  const std::string autos = write_temp(
      "clip_auto.json", R"({"train_micro_batch_size_per_gpu": 1, "gradient_clipping": "auto",
                          "bf16": {"enabled": true}, "zero_optimization": {"stage": 2}})");
  EXPECT_EQ(
      run_cli("plan --model gpt2-small --gradient-clipping 0.5 --ds-config " + autos).exit_code, 0);
}

// DeepSpeed's schema allows reduce_bucket_size 0 (zero/config.py:113, ge=0): every gradient is an
// extra-large parameter reduced on its own (stage_1_and_2.py:1201, :1221). zerosim refused it.
TEST(CliBuckets, ReduceBucketSizeZeroReducesEachGradientAlone) {
  const std::string ds =
      write_temp("bucket0.json",
                 R"({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
          "zero_optimization": {"stage": 2, "reduce_bucket_size": 0, "allgather_bucket_size": 0}})");
  const std::string log = zerosim::testutil::unique_temp_path("overrides_bucket0.jsonl");
  CliRun r = run_cli("schedule --param-list " + data("param_lists/tiny_mlp.json") +
                     " --world-size 2 --steps 1 --ds-config " + ds + " --collectives-out " + log);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Elements reduced per flush on rank 0 (a flush may issue one collective per owner slice).
  std::map<int, std::int64_t> per_bucket;
  std::ifstream f(log);
  for (std::string line; std::getline(f, line);) {
    json c = json::parse(line);
    if (c["rank"] == 0 && c.contains("bucket"))
      per_bucket[c["bucket"].get<int>()] += c["numel"].get<std::int64_t>();
  }
  // tiny_mlp's four trainable tensors in backward order (fc2.bias, fc2.weight, fc1.bias,
  // fc1.weight), one flush each; flush 0 is the empty one the strict > rule makes at the first
  // gradient, and it issues nothing.
  EXPECT_EQ(per_bucket, (std::map<int, std::int64_t>{{1, 4}, {2, 64}, {3, 16}, {4, 128}}));
}

TEST(CliArgs, DashOIsOutput) {
  // Issue 13: README's `schedule ... -o schedule.json` was refused.
  const std::string out = zerosim::testutil::unique_temp_path("overrides_dash_o.json");
  std::remove(out.c_str());
  CliRun r = run_cli("schedule --model gpt2-small --gpus 2 --stage 2 -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(read_all(out).find("zerosim-schedule"), std::string::npos);
  expect_one_line_error("models -o", "unexpected argument \"-o\"");
}

}  // namespace
