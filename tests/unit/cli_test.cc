// End-to-end tests of the zerosim executable: help, exit codes, one-line errors for bad input,
// JSON output contract and determinism. Runs the binary built next to the tests (ZEROSIM_CLI_PATH).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "cli_testlib.h"
#include "temp_path.h"
#include "zerosim/version.h"

namespace {

using namespace zerosim::clitest;  // NOLINT: test-local helpers

TEST(Cli, HelpListsCommandsAndFlags) {
  CliRun top = run_cli("--help");
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_NE(top.out.find("plan"), std::string::npos);
  EXPECT_NE(top.out.find("models"), std::string::npos);
  CliRun plan = run_cli("plan --help");
  EXPECT_EQ(plan.exit_code, 0);
  for (const char* f : {"--model", "--hf-config", "--params", "--param-list", "--gpus", "--nodes",
                        "--gpus-per-node", "--gpu", "--ds-config", "--micro-batch", "--seq-len",
                        "--activation-checkpointing", "--mode", "--format", "--sweep"})
    EXPECT_NE(plan.out.find(f), std::string::npos) << f;
  EXPECT_EQ(run_cli("models --help").exit_code, 0);
}

// One command table: `zerosim --help` lists every command, `zerosim help <command>` prints what
// `<command> --help` prints, and an unknown name gets the nearest command.
TEST(Cli, CommandTableDrivesHelpAndDispatch) {
  CliRun top = run_cli("--help");
  ASSERT_EQ(top.exit_code, 0);
  for (const char* c : {"plan", "schedule", "simulate", "models"}) {
    EXPECT_NE(top.out.find(std::string("\n  ") + c + " "), std::string::npos) << c;
    CliRun own = run_cli(std::string(c) + " --help");
    CliRun via = run_cli(std::string("help ") + c);
    EXPECT_EQ(own.exit_code, 0) << c;
    EXPECT_EQ(via.exit_code, 0) << c;
    EXPECT_EQ(via.out, own.out) << c;
    EXPECT_EQ(own.out.rfind(std::string("usage: zerosim ") + c, 0), 0u) << own.out;
  }
  // Every command of the table is listed, each description starting in the same column.
  const std::string listing = top.out.substr(top.out.find("commands:\n") + 10);
  std::istringstream lines(listing.substr(0, listing.find("\n\n")));
  std::set<std::size_t> columns;
  std::set<std::string> names;
  for (std::string line; std::getline(lines, line);) {
    const std::size_t name_end = line.find(' ', 2);
    names.insert(line.substr(2, name_end - 2));
    columns.insert(line.find_first_not_of(' ', name_end));
  }
  EXPECT_EQ(names, (std::set<std::string>{"calibrate", "check", "models", "plan", "schedule",
                                          "simulate", "validate", "view"}));
  EXPECT_EQ(columns.size(), 1u) << top.out;
  expect_one_line_error("help simulat", "unknown command \"simulat\" (did you mean \"simulate\"?)");
  expect_one_line_error("modles", "unknown command \"modles\" (did you mean \"models\"?)");
  EXPECT_EQ(run_cli("").exit_code, 1);  // no command: usage, exit 1
}

// One version: CMake's project version, through the configured zerosim/version.h, is what
// --version prints and what the summary's meta records.
TEST(Cli, VersionIsTheCMakeProjectVersion) {
  EXPECT_STREQ(zerosim::kZerosimVersion, ZEROSIM_PROJECT_VERSION);
  CliRun v = run_cli("--version");
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_EQ(v.out.rfind(std::string("zerosim ") + ZEROSIM_PROJECT_VERSION + " (", 0), 0u) << v.out;
  CliRun s = run_cli("simulate --scenario " + std::string(ZEROSIM_SOURCE_DIR) +
                     "/scenarios/tiny_zero2_4gpu.json --format json");
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_EQ(nlohmann::json::parse(s.out)["meta"]["zerosim_version"], ZEROSIM_PROJECT_VERSION);
}

TEST(Cli, UnknownCommandAndFlag) {
  expect_one_line_error("plna", "unknown command \"plna\" (did you mean \"plan\"?)");
  expect_one_line_error("plan --gpu-count 8", "unknown flag --gpu-count (did you mean --gpu");
  expect_one_line_error("plan --modell gpt2-xl", "unknown flag --modell (did you mean --model?)");
  // Hugging Face users' name: the closest spelling (--gradient-clipping) is another knob.
  expect_one_line_error("plan --gradient-checkpointing",
                        "unknown flag --gradient-checkpointing (did you mean "
                        "--activation-checkpointing (Hugging Face's gradient checkpointing)?)");
  expect_one_line_error("plan --gpus", "--gpus: expected a value (N), got nothing");
  expect_one_line_error("plan --gpus 8 --gpus 4", "--gpus: given twice");
  expect_one_line_error("plan stray", "unexpected argument \"stray\"");
  // -o is --output's short form; simulate has none, and said "flags start with --" twice (once
  // for -o, once for its file) without naming the flags that write its files.
  expect_one_line_error("simulate --model gpt2-small --stage 2 -o out.json",
                        "unexpected argument \"-o\": simulate has no --output (it writes files "
                        "with --trace FILE, --summary FILE, --chrome-trace FILE)");
  expect_one_line_error("simulate --model gpt2-small --stage 2 -o -",
                        "unexpected argument \"-o\": simulate has no --output");
}

// Fewer GPUs than --gpus-per-node is one node using that many: --gpus 2 --gpus-per-node 8 was
// refused ("expected at least --gpus-per-node (8) GPUs or a single node"), while --gpus 2 alone
// planned it (found by a new-user pass).
TEST(Cli, FewerGpusThanANodeIsOneNode) {
  const auto a = run_cli("plan --model gpt2-xl --gpus 2 --gpus-per-node 8");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, run_cli("plan --model gpt2-xl --gpus 2").out);
  EXPECT_NE(a.out.find("on 2 x H100-SXM-80GB (80.00 GiB each; 1 node x 2)"), std::string::npos);
}

TEST(Cli, BadNumbers) {
  // Real-valued flags take decimal numbers: strtod also took hexadecimal floats (0x1p4 = 16) and
  // leading spaces (found by a hostile-input pass).
  expect_one_line_error("plan --model gpt2 --gpu-tflops 0x1p4",
                        "--gpu-tflops: expected dense TFLOP/s in (0, 100000], got \"0x1p4\"");
  expect_one_line_error("plan --model gpt2 --gradient-clipping 0x10", "got \"0x10\"");
  expect_one_line_error("plan --model gpt2 --network-gbps ' 4'", "got \" 4\"");
  expect_one_line_error(
      "plan --params ' 7B'",
      "--params: expected a parameter count such as 7e9, 7B or 1.3B, got \" 7B\"");
  expect_one_line_error("simulate --model gpt2 --stage 2 --efficiency ' .5'", "got \" .5\"");
  EXPECT_EQ(run_cli("plan --params 1.3b --gpu-tflops 1e3 --gradient-clipping .5").exit_code, 0);
  expect_one_line_error("plan --gpus -3", "--gpus: expected an integer 1..16777216, got \"-3\"");
  expect_one_line_error("plan --gpus 0", "--gpus: expected an integer 1..16777216, got \"0\"");
  expect_one_line_error("plan --gpus 1e9", "--gpus: expected an integer 1..16777216, got \"1e9\"");
  expect_one_line_error("plan --gpus eight",
                        "--gpus: expected an integer 1..16777216, got \"eight\"");
  expect_one_line_error("plan --micro-batch 0",
                        "--micro-batch: expected an integer 1..1048576, got \"0\"");
  expect_one_line_error("plan --seq-len 1.5",
                        "--seq-len: expected an integer 1..16777216, got \"1.5\"");
  expect_one_line_error("plan --gpus 12 --gpus-per-node 8",
                        "--gpus: expected a multiple of --gpus-per-node (8), got 12");
  expect_one_line_error("plan --max-gpus 0",
                        "--max-gpus: expected an integer 1..16777216, got \"0\"");
  // Past a learned position table Hugging Face fails (an index error): no such run. A rotary model
  // runs past its context length.
  expect_one_line_error("plan --model gpt2 --seq-len 4096",
                        "--seq-len: expected at most 1024 tokens (gpt2-small's learned position "
                        "table; Hugging Face fails past it), got 4096");
  expect_one_line_error("plan --model opt-1.3b --seq-len 8192", "--seq-len: expected at most 2048");
  EXPECT_EQ(run_cli("plan --model llama2-7b --seq-len 8192").exit_code, 0);
  // Decimal digits only: strtod read these as 16, 8, 8 and 8.
  for (const char* g : {"0x10", "+8", "8.0", "0x1p3"})
    expect_one_line_error(
        std::string("plan --gpus ") + g,
        std::string("--gpus: expected an integer 1..16777216, got \"") + g + "\"");
  // Past the limit, though the same double as the limit (2^64 and 2^62 + 96): accepted before,
  // and the first cast past uint64_t.
  const std::string tiny = std::string(ZEROSIM_SOURCE_DIR) + "/scenarios/tiny_zero2_4gpu.json";
  expect_one_line_error(
      "validate --scenario " + tiny + " --no-data --host-memory-limit 18446744073709552000",
      "--host-memory-limit: expected an integer");
  expect_one_line_error("plan --gpus 16777217", "--gpus: expected an integer 1..16777216");
}

// A flag where a value belongs: `--output --sweep` wrote a file named "--sweep" and ran no sweep;
// `--gpus --micro-batch 2` blamed the "2".
TEST(Cli, AFlagWhereAValueBelongsIsOneLine) {
  expect_one_line_error("plan --model gpt2 --output --sweep",
                        "--output: expected a value (FILE), got the flag --sweep (write "
                        "--output=VALUE for a value starting with --)");
  expect_one_line_error("plan --model gpt2 --gpus --micro-batch 2",
                        "--gpus: expected a value (N), got the flag --micro-batch");
  expect_one_line_error("plan --ds-config --zero-init",
                        "--ds-config: expected a value (FILE), got the flag --zero-init");
  // An empty path: the reader said "cannot read file: No such file or directory", naming nothing.
  expect_one_line_error("plan --ds-config=",
                        "--ds-config: expected a file path, got an empty string");
  expect_one_line_error("simulate --scenario=",
                        "--scenario: expected a file path, got an empty string");
}

// An output may not replace a file that only another input names: the check of the flags against
// each other does not see a scenario's param list, a trainer config's ds_config or config.json in
// an --hf-config directory, and each was overwritten with exit 0 (a hostile-input pass found it).
TEST(Cli, AnOutputNeverReplacesAFileTheRunRead) {
  const std::string dir = ::testing::TempDir() + "/zerosim_clobber_" + std::to_string(getpid());
  ASSERT_EQ(std::system(("mkdir -p " + dir + "/m").c_str()), 0);
  const std::string src = ZEROSIM_SOURCE_DIR;
  ASSERT_EQ(std::system(("cp " + src + "/scenarios/tiny_zero2_4gpu.json " + src +
                         "/scenarios/tiny_params.json " + dir + "/ && cp " + src +
                         "/tests/data/hf/gpt2.json " + dir + "/m/config.json")
                            .c_str()),
            0);
  auto text = [](const std::string& path) {
    std::ifstream f(path);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  };
  const std::string params = text(dir + "/tiny_params.json"), config = text(dir + "/m/config.json");
  CliRun r = run_cli("simulate --scenario " + dir + "/tiny_zero2_4gpu.json --trace " + dir +
                     "/tiny_params.json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--trace: expected a file other than the input \"" + dir +
                       "/tiny_params.json\" (read for this run), got \"" + dir +
                       "/tiny_params.json\"; the file is unchanged\n"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(text(dir + "/tiny_params.json"), params);
  expect_one_line_error("plan --hf-config " + dir + "/m -o " + dir + "/m/config.json",
                        "--output: expected a file other than the input");
  EXPECT_EQ(text(dir + "/m/config.json"), config);
  ASSERT_EQ(std::system(("rm -rf " + dir).c_str()), 0);
}

TEST(Cli, BadChoicesAndNames) {
  expect_one_line_error("plan --format xml",
                        "--format: expected one of table, json, csv, markdown, md, got \"xml\"");
  expect_one_line_error(
      "plan --mode papr",
      "--mode: expected one of deepspeed, paper, got \"papr\" (did you mean paper?)");
  expect_one_line_error("plan --precision fp8",
                        "--precision: expected one of fp16, bf16, fp32, got \"fp8\"");
  expect_one_line_error(
      "plan --model llama2-7b --params 1e9",
      "give one of --model, --hf-config, --params, --param-list (got --model and --params)");
}

TEST(Cli, BadFiles) {
  expect_one_line_error("plan --ds-config /nonexistent/ds.json",
                        "/nonexistent/ds.json: cannot read file");
  expect_one_line_error(
      "plan --ds-config " + data("cli/stage_three.json"),
      "stage_three.json: /zero_optimization/stage: expected an integer 0..3, got \"three\"");
  expect_one_line_error("plan --output /nonexistent/dir/plan.txt",
                        "--output: cannot write /nonexistent/dir/plan.txt");
}

TEST(Cli, AbsurdSizesDoNotOverflow) {
  CliRun r = run_cli("plan --params 1e15 --gpus 8 --max-gpus 8 --format json");
  // 2 when no row fits (plan's "infeasible"): the report is printed either way.
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 2) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["model"]["parameters"].get<std::uint64_t>(), 1000000000000000ULL);
  for (const auto& row : j["rows"]) {
    EXPECT_GT(row["total_bytes"].get<std::uint64_t>(), 0u);
    EXPECT_LT(row["total_bytes"].get<std::uint64_t>(), 1ULL << 62);
  }
  // At 10^6 GPUs the stage 0-2 role table (segments x slots) needed ~5 GB and this test took
  // 52 s (219 s under ASan); at 2^20 GPUs over 10 GB. Now one line, before the table is
  // allocated (work_limit.h).
  expect_one_line_error("plan --params 1e15 --gpus 1048576 --gpus-per-node 8",
                        "--gpus: expected ranks with distinct partitions x size slots <= "
                        "134217728 (the role-table limit of a stage 0-2 schedule; "
                        "ZEROSIM_MAX_ROLE_TABLE raises it), got ");
  expect_one_line_error("plan --params 1e16", "--params");
  // At 2^21 GPUs every rank owns a slice of its own in most buckets: the builder emitted a reduce
  // per owner (5.6 GB and 16 s per stage 1/2 row, 11 GB and 31 s for plan) before the table was
  // refused. It now stops once the refusal is certain (SlotTable::cap), so the figures are a
  // lower bound.
  for (const char* stage : {"1", "2"})
    expect_one_line_error(
        std::string("simulate --params 1e15 --gpus 2097152 --gpus-per-node 8 --stage ") + stage,
        "ZEROSIM_MAX_ROLE_TABLE raises it), got at least ");
}

TEST(Cli, JsonContract) {
  CliRun r = run_cli("plan --model llama2-7b --gpus 8 --gpu H100-SXM-80GB --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["format"], "zerosim-plan");
  EXPECT_EQ(j["version"], 1);
  EXPECT_EQ(j["model"]["parameters"].get<std::uint64_t>(), 6738415616ULL);
  ASSERT_EQ(j["rows"].size(), 8u);
  for (const char* k :
       {"stage", "offload", "model_states_bytes", "buffers_bytes", "activations_bytes",
        "overhead_bytes", "total_bytes", "fits", "max_micro_batch", "comm_bytes_per_step"})
    EXPECT_TRUE(j["rows"][0].contains(k)) << k;
  for (const auto& row : j["rows"])
    EXPECT_EQ(row["total_bytes"].get<std::uint64_t>(),
              row["model_states_bytes"].get<std::uint64_t>() +
                  row["buffers_bytes"].get<std::uint64_t>() +
                  row["activations_bytes"].get<std::uint64_t>() +
                  row["overhead_bytes"].get<std::uint64_t>());
  EXPECT_TRUE(j["recommendation"].contains("reason"));
}

TEST(Cli, DeterministicOutput) {
  for (const char* fmt : {"json", "table", "csv", "markdown"}) {
    std::string args = std::string("plan --model gpt2-xl --gpus 16 --sweep --format ") + fmt;
    CliRun a = run_cli(args), b = run_cli(args);
    EXPECT_EQ(a.exit_code, 0) << a.err;
    EXPECT_EQ(a.out, b.out) << fmt;
    EXPECT_FALSE(a.out.empty());
  }
}

TEST(Cli, DefaultScenarioIsSaid) {
  CliRun r = run_cli("plan");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("note: no model given"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("8 x H100-SXM-80GB"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GiB"), std::string::npos);
}

TEST(Cli, DsConfigRowIsMarkedAndFlagsMustAgree) {
  CliRun r =
      run_cli("plan --model gpt2-xl --ds-config " + data("cli/zero2_bf16.json") + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  int marked = 0;
  for (const auto& row : j["rows"])
    if (row["matches_ds_config"].get<bool>()) {
      ++marked;
      EXPECT_EQ(row["stage"], 2);
      EXPECT_EQ(row["offload"], "none");
    }
  EXPECT_EQ(marked, 1);
  EXPECT_EQ(j["training"]["micro_batch"], 2);
  EXPECT_EQ(j["training"]["gradient_accumulation_steps"], 4);
  expect_one_line_error(
      "plan --model gpt2-xl --micro-batch 3 --ds-config " + data("cli/zero2_bf16.json"),
      "--micro-batch: conflicts with");
}

TEST(Cli, ModelsListsZooAndCatalog) {
  CliRun r = run_cli("models --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_GE(j["models"].size(), 20u);
  EXPECT_GE(j["gpus"].size(), 10u);
}

}  // namespace

namespace {

TEST(CliRun, BadFlagsOfScheduleAndSimulate) {
  expect_one_line_error("simulate --model gpt2-small --stage 5",
                        "--stage: expected an integer 0..3, got \"5\"");
  expect_one_line_error("schedule --model gpt2-small --stage 2 --steps 0",
                        "--steps: expected an integer 1..10000, got \"0\"");
  expect_one_line_error("simulate --model gpt2-small --stage 2 --deepspeed-version 0.9",
                        "--deepspeed-version: expected one of edaa722, 0.14.4, got \"0.9\"");
  expect_one_line_error("schedule --model gpt2-small --stage 2 --ranks 1,x --collectives-out x.log",
                        "--ranks: expected an integer 0..16777215, got \"x\"");
  // --ranks selects the collective log's ranks: without the log it was ignored, exit 0.
  expect_one_line_error("schedule --model gpt2-small --stage 2 --ranks 1 -o /dev/null",
                        "--ranks: expected --collectives-out FILE, the collective log whose ranks "
                        "it selects; got no --collectives-out");
  expect_one_line_error("simulate --model gpt2-small --stage 2 --efficiency 0",
                        "--efficiency: expected a number in");
  expect_one_line_error("simulate --model gpt2-small",
                        "which ZeRO stage? give --stage 0..3, --ds-config FILE or --scenario FILE");
  // A trainer config without a deepspeed: key: the message names that key.
  const std::string lf = zerosim::testutil::unique_temp_path("cli_trainer_no_ds.yaml");
  std::ofstream(lf) << "model_name_or_path: gpt2\nfinetuning_type: full\n";
  expect_one_line_error("simulate --trainer-config " + lf,
                        "which ZeRO stage? the trainer config names no ds_config (its deepspeed: "
                        "key); give --stage 0..3 or --ds-config FILE");
  std::remove(lf.c_str());
  expect_one_line_error("simulate --scenario /nonexistent/s.json",
                        "/nonexistent/s.json: cannot read file");
  expect_one_line_error(
      "simulate --model gpt2-small --stage 2 --steps 2 --overflow-steps 1",
      "--overflow-steps: expected steps before the last one (1, the steady state a simulation "
      "reports), got 1");
  expect_one_line_error("schedule --model gpt2-small --stage 2 --overflow-steps 0,x",
                        "--overflow-steps: expected an integer 0..9999, got \"x\"");
  expect_one_line_error(
      "simulate --model gpt2-small --stage 2 --precision fp32 --steps 2 --overflow-steps 0",
      "/overflow_steps: expected a precision whose step() checks for overflow");
  expect_one_line_error("simulate --model gpt2-small --stage 2 --zero-init",
                        "--zero-init: expected ZeRO stage 3 (zero.Init partitions params as they "
                        "are built), got stage 2");
}

// Llama-2-70B stage 3 does not fit at init without zero.Init (the whole bf16 model on every GPU):
// the summary says so and points at --zero-init; the shipped scenario, built under zero.Init, fits.
TEST(CliRun, InitOomHintsAtZeroInit) {
  CliRun plain = run_cli("simulate --model llama2-70b --gpus 64 --stage 3");
  ASSERT_EQ(plain.exit_code, 2) << plain.err;  // exit 2: does not fit
  EXPECT_NE(plain.out.find("OUT OF MEMORY"), std::string::npos);
  EXPECT_NE(plain.out.find("hint: the OOM is at initialization"), std::string::npos) << plain.out;
  CliRun shipped = run_cli("simulate --scenario " + std::string(ZEROSIM_SOURCE_DIR) +
                           "/scenarios/llama2-70b_zero3_64xh100.json");
  ASSERT_EQ(shipped.exit_code, 0) << shipped.err;
  EXPECT_EQ(shipped.out.find("OUT OF MEMORY"), std::string::npos) << shipped.out;
  EXPECT_NE(shipped.out.find("zero.Init on"), std::string::npos);
}

// --zero-init removes the engine and conversion broadcasts: one broadcast per param instead of two.
TEST(CliRun, ZeroInitHalvesTheInitBroadcasts) {
  const std::string log =
      ::testing::TempDir() + "zerosim_cli_zinit_" + std::to_string(getpid()) + ".jsonl";
  const auto broadcasts = [&](const std::string& flags) -> std::size_t {
    CliRun r = run_cli("schedule --model gpt2-small --gpus 4 --stage 3 " + flags +
                       "--collectives-out " + log);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const std::string text = read_all(log);
    std::remove(log.c_str());
    std::size_t n = 0;
    const std::string init_broadcast = "\"phase\":\"init\",\"op\":\"broadcast\"";
    for (auto at = text.find(init_broadcast); at != std::string::npos;
         at = text.find(init_broadcast, at + 1))
      ++n;
    return n;
  };
  const std::size_t off = broadcasts(""), on = broadcasts("--zero-init ");
  EXPECT_GT(on, 0u);
  EXPECT_EQ(off, 2 * on);
}

TEST(CliRun, ScheduleWritesTheCollectiveLogAndSimulateIsDeterministic) {
  const std::string scenario = std::string(ZEROSIM_SOURCE_DIR) + "/scenarios/tiny_zero2_4gpu.json";
  const std::string log =
      ::testing::TempDir() + "zerosim_cli_log_" + std::to_string(getpid()) + ".jsonl";
  CliRun s = run_cli("schedule --scenario " + scenario + " --collectives-out " + log);
  ASSERT_EQ(s.exit_code, 0) << s.err;
  std::string text = read_all(log);
  std::remove(log.c_str());
  ASSERT_FALSE(text.empty());
  auto first = nlohmann::json::parse(text.substr(0, text.find('\n')));
  EXPECT_EQ(first["rank"], 0);
  EXPECT_EQ(first["group_size"], 4);
  CliRun a = run_cli("simulate --scenario " + scenario + " --format json");
  CliRun b = run_cli("simulate --scenario " + scenario + " --format json");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(nlohmann::json::parse(a.out)["format"], "zerosim-summary");
}

// schedule -> file -> simulate --schedule closes the loop: the summary JSON, the text report and
// the trace are byte-identical to simulating the scenario directly (the file's meta carries the
// cluster shape, --gpu the GPU; nothing in the summary depends on what the file does not hold).
TEST(CliRun, SimulateAScheduleFileAsTheScenarioItself) {
  for (const auto& [name, gpu] :
       {std::pair<std::string, std::string>{"tiny_zero2_4gpu", "RTX-4090"},
        {"gpt2-xl_zero2_8xa100", "A100-80GB"}}) {
    SCOPED_TRACE(name);
    const std::string scenario = std::string(ZEROSIM_SOURCE_DIR) + "/scenarios/" + name + ".json";
    const std::string tmp =
        ::testing::TempDir() + "zerosim_cli_loop_" + std::to_string(getpid()) + "_" + name;
    CliRun s = run_cli("schedule --scenario " + scenario + " --output " + tmp + ".schedule.json");
    ASSERT_EQ(s.exit_code, 0) << s.err;
    CliRun direct = run_cli("simulate --scenario " + scenario + " --format json --trace " + tmp +
                            ".direct.trace.json");
    CliRun file = run_cli("simulate --schedule " + tmp + ".schedule.json --gpu " + gpu +
                          " --format json --trace " + tmp + ".file.trace.json");
    ASSERT_EQ(direct.exit_code, 0) << direct.err;
    ASSERT_EQ(file.exit_code, 0) << file.err;
    EXPECT_EQ(file.out, direct.out);
    EXPECT_EQ(nlohmann::json::parse(file.out)["format"], "zerosim-summary");
    EXPECT_EQ(read_all(tmp + ".file.trace.json"), read_all(tmp + ".direct.trace.json"));
    EXPECT_EQ(run_cli("simulate --schedule " + tmp + ".schedule.json --gpu " + gpu).out,
              run_cli("simulate --scenario " + scenario).out);
    for (const char* f : {".schedule.json", ".direct.trace.json", ".file.trace.json"})
      std::remove((tmp + f).c_str());
  }
}

TEST(CliRun, BadScheduleFile) {
  const std::string dir = std::string(ZEROSIM_SOURCE_DIR) + "/scenarios/";
  const std::string tmp =
      ::testing::TempDir() + "zerosim_cli_bad_sched_" + std::to_string(getpid()) + ".json";
  ASSERT_EQ(
      run_cli("schedule --scenario " + dir + "tiny_zero2_4gpu.json --output " + tmp).exit_code, 0);
  const std::string fixes = "cannot be combined with --schedule (the schedule file fixes the model";
  expect_one_line_error("simulate --schedule " + tmp + " --model gpt2-small", "--model: " + fixes);
  expect_one_line_error(
      "simulate --schedule " + tmp + " --scenario " + dir + "tiny_zero2_4gpu.json",
      "--scenario: " + fixes);
  expect_one_line_error("simulate --schedule " + tmp + " --gpus 8", "--gpus: " + fixes);
  expect_one_line_error("simulate --schedule " + tmp + " --steps 2", "--steps: " + fixes);
  expect_one_line_error("simulate --schedule " + tmp + " --zero-init", "--zero-init: " + fixes);
  expect_one_line_error("simulate --schedule " + tmp + " --gpu H100-XL",
                        "--gpu: unknown GPU \"H100-XL\"");
  expect_one_line_error("simulate --schedule", "--schedule: expected a value (FILE), got nothing");
  expect_one_line_error("simulate --schedule /nonexistent/s.json",
                        "/nonexistent/s.json: cannot read file");
  expect_one_line_error("simulate --schedule " + dir + "tiny_zero2_4gpu.json",
                        "tiny_zero2_4gpu.json: /format: expected \"zerosim-schedule\", got "
                        "\"zerosim-scenario\"");
  {
    std::ofstream garbage(tmp);
    garbage << "{\"format\": \"zerosim-schedule\", \"version\": 1, ";
  }
  expect_one_line_error("simulate --schedule " + tmp, tmp + ": invalid JSON");
  std::remove(tmp.c_str());
}

}  // namespace
