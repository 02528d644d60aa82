// `zerosim validate` and `zerosim check` end to end: a count-only host run agrees with the
// prediction; a measured file tampered with (one collective's size, one category's bytes) makes
// `check` fail, so the check provably can fail; files of different schedules are refused; every
// new flag fed garbage gives one line and exit 1.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_testlib.h"

namespace {

using namespace zerosim::clitest;  // NOLINT: test-local helpers

std::string tmp(const std::string& name) {
  return ::testing::TempDir() + "zerosim_validate_" + std::to_string(getpid()) + "_" + name;
}
std::string scenario(const std::string& name) {
  return std::string(ZEROSIM_SOURCE_DIR) + "/scenarios/" + name;
}
void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// Measured and predicted files of the toy scenario (4 ranks in 4 roles, several flushes; the
// default two steps: a warm-up step, then the steady one).
struct Files {
  std::string measured = tmp("m.json"), measured_log = tmp("m.jsonl");
  std::string predicted = tmp("p.json"), predicted_log = tmp("p.jsonl");
  Files() {
    const std::string s = scenario("tiny_zero2_4gpu.json");
    CliRun v = run_cli("validate --scenario " + s + " --no-data --output " + measured +
                       " --collectives-out " + measured_log);
    EXPECT_EQ(v.exit_code, 0) << v.err << v.out;
    EXPECT_NE(v.out.find("verdict: PASS"), std::string::npos) << v.out;
    EXPECT_EQ(run_cli("simulate --scenario " + s + " --trace " + predicted).exit_code, 0);
    EXPECT_EQ(run_cli("schedule --scenario " + s + " --collectives-out " + predicted_log).exit_code,
              0);
  }
  ~Files() {
    for (const auto& f : {measured, measured_log, predicted, predicted_log}) std::remove(f.c_str());
  }
};

TEST(ValidateCli, HostRunAgreesWithThePredictionAndCheckSaysSo) {
  Files f;
  CliRun traces = run_cli("check --predicted " + f.predicted + " --measured " + f.measured);
  EXPECT_EQ(traces.exit_code, 0) << traces.out << traces.err;
  EXPECT_NE(traces.out.find("collective sequence: identical (4 ranks, 124 measured collectives)"),
            std::string::npos)
      << traces.out;
  EXPECT_NE(traces.out.find("verdict: PASS"), std::string::npos);
  CliRun logs = run_cli("check --predicted " + f.predicted_log + " --measured " + f.measured_log +
                        " --format json");
  EXPECT_EQ(logs.exit_code, 0) << logs.out << logs.err;
  auto j = nlohmann::json::parse(logs.out);
  EXPECT_EQ(j["format"], "zerosim-check");
  EXPECT_TRUE(j["passed"].get<bool>());
  // A prediction trace against a measured log: the sequences alone.
  EXPECT_EQ(run_cli("check --predicted " + f.predicted + " --measured " + f.measured_log).exit_code,
            0);
  // The measured log is byte-identical to the predicted one.
  EXPECT_EQ(read_all(f.measured_log), read_all(f.predicted_log));
}

// The bytes table says what its "ok" judges: a broadcast's measured minimum of 0 beside a
// predicted S read as a pass that contradicted its own columns (found by a new-user pass).
TEST(ValidateCli, TheBytesTableSaysWhatOkJudges) {
  const CliRun v =
      run_cli("validate --scenario " + scenario("tiny_zero2_4gpu.json") + " --no-data");
  ASSERT_EQ(v.exit_code, 0) << v.err;
  EXPECT_NE(v.out.find("  ok: the calls match and the predicted per-rank average is at most one "
                       "byte per call above the measured mean (broadcast, reduce: the measured "
                       "maximum, the root's, equals the prediction)\n"),
            std::string::npos)
      << v.out;
}

TEST(ValidateCli, CheckFailsOnATamperedCollective) {
  Files f;
  std::string log = read_all(f.measured_log);
  const std::string line3 = "\"numel\":64000,\"out_numel\":64000";
  const auto at = log.find(line3);
  ASSERT_NE(at, std::string::npos);
  log.replace(at, line3.size(), "\"numel\":64001,\"out_numel\":64001");
  write(f.measured_log, log);
  CliRun r = run_cli("check --predicted " + f.predicted_log + " --measured " + f.measured_log);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.out.find("collective sequence: DIFFERS"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("first difference: rank 0, collective #0: numel: predicted 64000, "
                       "measured 64001"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("verdict: FAIL"), std::string::npos);
}

TEST(ValidateCli, CheckFailsOnTamperedMemoryAndTraffic) {
  Files f;
  auto t = nlohmann::json::parse(read_all(f.measured));
  for (auto& row : t["ranks"][1]["memory"])  // 2 more param16 bytes on rank 1, all run long
    if (row[2].get<std::uint64_t>() > 0) {
      row[1] = row[1].get<std::uint64_t>() + 2;
      row[2] = row[2].get<std::uint64_t>() + 2;
    }
  write(f.measured, t.dump());
  CliRun r = run_cli("check --predicted " + f.predicted + " --measured " + f.measured);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.out.find("rank 1 (role 1):"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("delta 2 bytes  DRIFT"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("param16: predicted"), std::string::npos) << r.out;
  // Within a tolerance the same drift passes.
  EXPECT_EQ(run_cli("check --predicted " + f.predicted + " --measured " + f.measured +
                    " --memory-tolerance 0.01")
                .exit_code,
            0);
  // One collective's bytes (S) on one rank.
  t = nlohmann::json::parse(read_all(f.measured));
  t["comms"][5]["bytes"] = t["comms"][5]["bytes"].get<std::uint64_t>() + 1;
  write(f.measured, t.dump());
  r = run_cli("check --predicted " + f.predicted + " --measured " + f.measured +
              " --memory-tolerance 0.01");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.out.find("DRIFT"), std::string::npos) << r.out;
}

// A measured trace stripped of its ranks (the memory) passed: the memory table was empty and the
// verdict PASS, exit 0 (found by a hostile-input pass). It is refused in one line; a trace of some
// of the ranks is compared and says how many.
TEST(ValidateCli, AMeasuredTraceWithoutRanksCannotPass) {
  Files f;
  auto t = nlohmann::json::parse(read_all(f.predicted));  // a trace whose spans name no rank
  t["ranks"] = nlohmann::json::array();
  const std::string stripped = tmp("no_ranks.json");
  write(stripped, t.dump());
  expect_one_line_error("check --predicted " + f.predicted + " --measured " + stripped,
                        stripped +
                            ": /ranks: expected the memory of the measured ranks "
                            "(meta/world 4), got none");
  t = nlohmann::json::parse(read_all(f.predicted));
  t["ranks"] = nlohmann::json::array({t["ranks"][0]});
  write(stripped, t.dump());
  CliRun r = run_cli("check --predicted " + f.predicted + " --measured " + stripped);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE((r.out + r.err).find("memory compared for 1 of 4 ranks"), std::string::npos)
      << r.out << r.err;
  // One rank: singular words ("1 ranks" before).
  const std::string one = tmp("one_rank.json");
  ASSERT_EQ(run_cli("simulate --model gpt2-small --gpus 1 --stage 2 --trace " + one).exit_code, 0);
  const CliRun self = run_cli("check --predicted " + one + " --measured " + one);
  EXPECT_NE(self.out.find("collective sequence: identical (1 rank, "), std::string::npos)
      << self.out;
  std::remove(one.c_str());
  // meta.world 0 gave one line per rooted record, each with a wrapped range ("0..4294967295").
  t = nlohmann::json::parse(read_all(f.predicted));
  t["meta"]["world"] = 0;
  write(stripped, t.dump());
  expect_one_line_error("check --predicted " + f.predicted + " --measured " + stripped,
                        stripped + ": /meta/world: expected an integer 1..16777216, got 0");
  // A rank past the world was reported by the next rank, as out of order ("got 2 after 99").
  t = nlohmann::json::parse(read_all(f.predicted));
  t["ranks"][1]["rank"] = 99;
  write(stripped, t.dump());
  expect_one_line_error("check --predicted " + f.predicted + " --measured " + stripped,
                        stripped + ": /ranks/1/rank: expected a rank 0..3 (meta/world 4), got 99");
  std::remove(stripped.c_str());
}

TEST(ValidateCli, FilesOfDifferentSchedulesAreRefused) {
  Files f;
  const std::string other = tmp("other.json");
  ASSERT_EQ(
      run_cli("simulate --scenario " + scenario("gpt2-xl_zero2_8xa100.json") + " --trace " + other)
          .exit_code,
      0);
  CliRun r = run_cli("check --predicted " + other + " --measured " + f.measured);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("traces of different schedules are not compared"), std::string::npos)
      << r.err;
  EXPECT_TRUE(r.out.empty());
  std::remove(other.c_str());
  // Same model and sizes, another schedule: the digests differ.
  auto t = nlohmann::json::parse(read_all(f.measured));
  ASSERT_EQ(t["meta"]["schedule_digest"].get<std::string>().rfind("fnv1a64-v2:", 0), 0u);
  t["meta"]["schedule_digest"] = "fnv1a64-v2:0000000000000000";
  write(f.measured, t.dump());
  r = run_cli("check --predicted " + f.predicted + " --measured " + f.measured);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("/meta/schedule_digest"), std::string::npos) << r.err;
}

// The model of a param list is named by its path as given: a prediction made with the absolute
// path and a validation run from the scenario's folder were "traces of different schedules"
// (/meta/model and /meta/schedule_digest differed), although the schedules were the same.
TEST(ValidateCli, AModelNamedByAnotherPathIsTheSameSchedule) {
  const std::string predicted = tmp("abs_predicted.json"), measured = tmp("rel_measured.json");
  ASSERT_EQ(
      run_cli("simulate --scenario " + scenario("tiny_zero2_4gpu.json") + " --trace " + predicted)
          .exit_code,
      0);
  const std::string rel = tmp("tiny_copy.json");
  {
    // The same scenario in the temporary folder, its param list named relative to that folder
    // ("./" first: with the checkout under that folder the joined path would be the absolute one).
    auto j = nlohmann::json::parse(read_all(scenario("tiny_zero2_4gpu.json")));
    j["model"]["param_list"] =
        "./" +
        std::filesystem::relative(scenario("tiny_params.json"), ::testing::TempDir()).string();
    write(rel, j.dump());
  }
  const CliRun v = run_cli("validate --scenario " + rel + " --no-data --output " + measured);
  ASSERT_EQ(v.exit_code, 0) << v.err;
  const auto pm = nlohmann::json::parse(read_all(predicted))["meta"];
  const auto mm = nlohmann::json::parse(read_all(measured))["meta"];
  ASSERT_NE(pm["model"], mm["model"]);  // the test's premise: two names for one file
  EXPECT_EQ(pm["schedule_digest"], mm["schedule_digest"]);
  const CliRun c = run_cli("check --predicted " + predicted + " --measured " + measured);
  EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
  // A trace of an earlier zerosim carries the old scheme, which hashed the name: its digest is not
  // compared with the new one, and the names are (as that zerosim did).
  auto old = nlohmann::json::parse(read_all(measured));
  old["meta"]["schedule_digest"] = "fnv1a64:0000000000000000";
  write(measured, old.dump());
  const CliRun o = run_cli("check --predicted " + predicted + " --measured " + measured);
  EXPECT_EQ(o.exit_code, 1) << o.out << o.err;
  EXPECT_NE(o.err.find("/meta/model"), std::string::npos) << o.err;
  EXPECT_EQ(o.err.find("/meta/schedule_digest"), std::string::npos) << o.err;
  for (const std::string& f : {predicted, measured, rel}) std::remove(f.c_str());
}

TEST(ValidateCli, BadInputIsOneLine) {
  const std::string s = " --scenario " + scenario("tiny_zero2_4gpu.json");
  expect_one_line_error("validate" + s + " --no-data --backend cuda", "--backend");
  expect_one_line_error("validate" + s + " --no-data --host-memory-limit lots",
                        "--host-memory-limit");
  expect_one_line_error("validate" + s + " --no-data --stall-timeout 0", "--stall-timeout");
  // One thread per rank: 16384 ranks could not all reach the first collective within the stall
  // timeout, and the run failed after a minute as "stalled" (found by a hostile-input pass).
  expect_one_line_error("validate --model gpt2-small --stage 2 --gpus 16384 --no-data",
                        "--gpus: expected at most 8192 ranks on the host backend (one thread per "
                        "rank), got 16384");
  // Data mode is the default; a schedule that does not carry every operand (a paper-mode one, a
  // traffic model) is refused in one line pointing at --no-data. (fp32 training at stage 2, the
  // case used here before, is carried now: it runs in data mode.)
  expect_one_line_error("validate" + s + " --mode paper", "data mode: /meta/mode");
  expect_one_line_error("validate" + s + " --mode paper", "run count-only with --no-data");
  expect_one_line_error("validate" + s + " --seed -3", "--seed");
  expect_one_line_error("validate" + s + " --seed 1e400", "--seed");
  expect_one_line_error("validate" + s + " --data-memory-cap 0", "--data-memory-cap");
  expect_one_line_error("validate" + s + " --data-memory-cap many", "--data-memory-cap");
  expect_one_line_error("validate" + s + " --no-data --seed 3",
                        "--seed: expected data mode for this flag, got --no-data");
  // A cap below what the ranks' buffers need refuses before running.
  expect_one_line_error("validate" + s + " --data-memory-cap 1000",
                        "expected every rank's buffers to fit in 1000 bytes");
  expect_one_line_error("check --predicted x.json", "--measured: expected a file, got none");
  expect_one_line_error("check --predicted a --measured b --memory-tolerance -1",
                        "--memory-tolerance");
  expect_one_line_error(
      "check --predicted /nonexistent/p.json --measured /nonexistent/m.json "
      "--bytes-tolerance x",
      "--bytes-tolerance");
  const std::string bad = tmp("bad.jsonl");
  write(bad,
        "{\"rank\":0,\"step\":0,\"phase\":\"backward\",\"op\":\"all_reduce\",\"numel\":8,"
        "\"out_numel\":8,\"dtype\":\"float17\",\"group_size\":2}\n");
  const std::string good = tmp("good.jsonl");
  ASSERT_EQ(run_cli("schedule" + s + " --collectives-out " + good).exit_code, 0);
  expect_one_line_error("check --predicted " + good + " --measured " + bad, "float17");
  std::remove(good.c_str());
  write(bad, "{\"format\": \"zerosim-trace\", \"version\": 99, \"meta\": {}}");
  CliRun r = run_cli("check --predicted " + bad + " --measured " + bad);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("version"), std::string::npos) << r.err;
  write(bad, "{\"format\": \"zerosim-trace\", \"version\": 1, \"meta\": {");  // truncated
  r = run_cli("check --predicted " + bad + " --measured " + bad);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  std::remove(bad.c_str());
}

// A measured run opens in Perfetto like a simulated one: --chrome-trace writes the host backend's
// trace as Chrome Trace Events, with its named counters as counter tracks and each span's host
// issue time.
TEST(ValidateCli, TheMeasuredTraceExportsToPerfettoWithItsCounters) {
  const std::string chrome = tmp("m.chrome.json");
  CliRun v = run_cli("validate --scenario " + scenario("tiny_zero2_4gpu.json") +
                     " --no-data --chrome-trace " + chrome);
  ASSERT_EQ(v.exit_code, 0) << v.err << v.out;
  std::ifstream in(chrome);
  ASSERT_TRUE(in.good());
  const auto j = nlohmann::json::parse(in);
  std::size_t device_counter = 0, spans_with_issue = 0, spans = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e.value("ph", "") == "C" && e.value("name", "") == "alloc.device_bytes") ++device_counter;
    if (e.value("ph", "") == "X") {
      ++spans;
      spans_with_issue += e.contains("args") && e["args"].contains("issue_ts");
    }
  }
  EXPECT_GT(device_counter, 0u);
  EXPECT_GT(spans, 0u);
  EXPECT_EQ(spans_with_issue, spans);
  std::remove(chrome.c_str());
  expect_one_line_error("validate --scenario " + scenario("tiny_zero2_4gpu.json") +
                            " --backend cuda --chrome-trace " + chrome,
                        "--chrome-trace: expected --backend host for this flag, got cuda");
}

TEST(ValidateCli, AFailedRunIsReportedAndWritesNothing) {
  const std::string out = tmp("never.json");
  CliRun r = run_cli("validate --scenario " + scenario("tiny_zero2_4gpu.json") +
                     " --no-data --host-memory-limit 1000 --output " + out);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("does not fit: "), std::string::npos) << r.err;
  // --no-data is already on, and would not help anyway: the limit counts the same bytes.
  EXPECT_EQ(r.err.find("or run with --no-data"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the run failed; nothing was compared"), std::string::npos) << r.err;
  EXPECT_FALSE(std::ifstream(out).good());
}

// The memory flags took bytes only: --host-memory-limit 1GiB was "expected an integer", unlike
// plan's --gpu-memory (found by a new-user pass). Digits alone are still bytes.
TEST(ValidateCli, MemoryFlagsTakeBinaryUnits) {
  const std::string s = "validate --scenario " + scenario("tiny_zero2_4gpu.json");
  EXPECT_EQ(run_cli(s + " --no-data --host-memory-limit 1GiB").exit_code, 0);
  CliRun small = run_cli(s + " --no-data --host-memory-limit 1.5MiB");
  EXPECT_EQ(small.exit_code, 2) << small.err;
  EXPECT_NE(small.err.find("of the 1572864-byte limit"), std::string::npos) << small.err;
  EXPECT_EQ(run_cli(s + " --data-memory-cap 2GiB").exit_code, 0);
  expect_one_line_error(s + " --no-data --host-memory-limit 24GB", "write 24GiB");
  expect_one_line_error(s + " --no-data --host-memory-limit 0B",
                        "--host-memory-limit: expected a size of 1B to 16777216GiB, got \"0B\"");
}

}  // namespace
