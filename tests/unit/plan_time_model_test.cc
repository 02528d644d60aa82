// plan states which time-model figures are defaults, which were given and which were calibrated
// (#13 item 4), in every format, and says it with the words simulate uses for the same inputs
// (time_model_notes.h: one builder). Before, plan printed step times, tokens/s and MFU without
// saying what they rested on.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_testlib.h"

namespace zerosim {
namespace {

using clitest::run_cli;
using nlohmann::json;

// gpt2-xl on 2 nodes x 4 GPUs with a stage 3 ds_config: the plan's notes list the stage-3 hooks
// and the network is used, so simulate of the same inputs prints the same four notes.
constexpr const char* kInputs = "--model gpt2-xl --gpus 8 --gpus-per-node 4 --gpu H100-SXM-80GB";

json plan_json(const std::string& extra) {
  const auto r = run_cli(std::string("plan ") + kInputs + extra + " --format json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out;
  return j;
}

const json& note(const json& plan, const std::string& what) {
  static const json none;
  for (const json& n : plan["time_model"])
    if (n["what"] == what) return n;
  ADD_FAILURE() << "no time_model note " << what << " in " << plan["time_model"].dump();
  return none;
}

// The time-model notes simulate prints ("note: compute: ...", ...), in order.
std::vector<std::string> simulate_notes(const std::string& extra) {
  const auto r = run_cli(std::string("simulate ") + kInputs + " --stage 3" + extra);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> out;
  std::istringstream lines(r.out);
  for (std::string l; std::getline(lines, l);)
    for (const char* p : {"compute: ", "host: ", "memory-bound ops: ", "collectives: "})
      if (l.rfind(std::string("note: ") + p, 0) == 0) out.push_back(l.substr(6));
  return out;
}

std::vector<std::string> texts(const json& plan) {
  std::vector<std::string> out;
  for (const json& n : plan["time_model"]) out.push_back(n["text"].get<std::string>());
  return out;
}

std::string tmp(const std::string& name) {
  return ::testing::TempDir() + "zerosim_plan_time_model_" + std::to_string(getpid()) + "_" + name;
}

// A calibration fitted on a simulated gpt2-xl stage 2 trace at --efficiency 0.3 relabelled as
// measured (as calibration_test.cc makes one), with the shipped nccl-tests all-reduce table.
std::string calibration_file() {
  static const std::string path = [] {
    const std::string sim = tmp("sim.json"), measured = tmp("measured.json");
    std::string cal = tmp("cal.json");
    const auto s = run_cli("simulate --scenario " + std::string(ZEROSIM_SOURCE_DIR) +
                           "/scenarios/gpt2-xl_zero2_8xa100.json --gpu H100-SXM-80GB "
                           "--efficiency 0.3 --trace " +
                           sim);
    EXPECT_EQ(s.exit_code, 0) << s.err;
    std::string text = clitest::read_all(sim);
    const std::string from = "\"clock\": \"simulated\"";
    const auto at = text.find(from);
    EXPECT_NE(at, std::string::npos);
    if (at != std::string::npos) text.replace(at, from.size(), "\"clock\": \"cuda_events\"");
    std::ofstream(measured) << text;
    const auto c = run_cli("calibrate " + measured + " --nccl-tests " +
                           clitest::data("nccl_tests/all_reduce_8xh100.txt") + " -o " + cal);
    EXPECT_EQ(c.exit_code, 0) << c.err;
    return cal;
  }();
  return path;
}

TEST(PlanTimeModel, DefaultsSayDefaultForEachFigure) {
  const json j = plan_json("");
  ASSERT_EQ(j["time_model"].size(), 4u) << j["time_model"].dump();
  for (const char* what : {"compute", "host", "memory-bound ops", "collectives"}) {
    const json& n = note(j, what);
    EXPECT_EQ(n["basis"], "default") << n.dump();
    EXPECT_EQ(n["source"].get<std::string>().rfind("default", 0), 0u) << n.dump();
    EXPECT_FALSE(n["values"].empty()) << n.dump();
  }
  // Structured figures, not only text: the catalog's H100 and the documented host defaults.
  EXPECT_EQ(note(j, "compute")["values"]["dense_tflops"], 989.5);
  EXPECT_EQ(note(j, "memory-bound ops")["values"]["hbm_gbps"], 3350.0);
  EXPECT_EQ(note(j, "host")["values"]["stage3_fetch_hook_us"], 40.0);  // the plan has stage 3 rows
  const auto table = run_cli(std::string("plan ") + kInputs);
  EXPECT_NE(table.out.find("time model (default: docs/time_model.md"), std::string::npos)
      << table.out;
  EXPECT_NE(table.out.find("\n  - [default] collectives: busBw intra-node 360 GB/s, network 50 "
                           "GB/s per GPU"),
            std::string::npos)
      << table.out;
  const auto md = run_cli(std::string("plan ") + kInputs + " --format markdown");
  EXPECT_NE(md.out.find("\n  - [default] compute: "), std::string::npos) << md.out;
  const auto csv = run_cli(std::string("plan ") + kInputs + " --format csv");
  std::istringstream lines(csv.out);
  std::string header, row;
  std::getline(lines, header);
  std::getline(lines, row);
  EXPECT_NE(header.find(",compute_basis,host_basis,memory_bound_basis,collectives_basis"),
            std::string::npos)
      << header;
  EXPECT_EQ(row.substr(row.size() - 32), ",default,default,default,default") << row;
}

TEST(PlanTimeModel, ClusterFlagSaysGiven) {
  const json j = plan_json(" --network-gbps 12.5");
  const json& c = note(j, "collectives");
  EXPECT_EQ(c["basis"], "given") << c.dump();
  EXPECT_EQ(c["source"], "given: --network-gbps 12.5 (network 12.5 GB/s per GPU)") << c.dump();
  EXPECT_EQ(c["values"]["network_gbps"], 12.5);
  EXPECT_EQ(note(j, "compute")["basis"], "default");
  const json g = plan_json(" --gpu-bandwidth 2000");
  EXPECT_EQ(note(g, "memory-bound ops")["basis"], "given");
  EXPECT_EQ(note(g, "memory-bound ops")["values"]["hbm_gbps"], 2000.0);
}

TEST(PlanTimeModel, CalibrationSaysCalibratedWithTheFile) {
  const std::string cal = calibration_file();
  const json j = plan_json(" --calibration " + cal);
  const json& c = note(j, "compute");
  EXPECT_EQ(c["basis"], "calibrated") << c.dump();
  EXPECT_EQ(c["source"].get<std::string>().rfind("calibrated: " + cal, 0), 0u) << c.dump();
  const json& coll = note(j, "collectives");
  EXPECT_EQ(coll["basis"], "calibrated") << coll.dump();
  EXPECT_NE(coll["source"].get<std::string>().find("all_reduce (calibrated: " + cal),
            std::string::npos)
      << coll.dump();
  const auto csv =
      run_cli(std::string("plan ") + kInputs + " --calibration " + cal + " --format csv");
  EXPECT_NE(csv.out.find(",calibrated,"), std::string::npos) << csv.out;
}

// One builder: for the same inputs plan's notes are simulate's, word for word (defaults, a
// cluster flag, a calibration, a GPU given by its figures).
TEST(PlanTimeModel, PlanAndSimulateSayTheSame) {
  for (const std::string& extra :
       {std::string(), std::string(" --network-gbps 12.5 --intra-node-gbps 300"),
        std::string(" --nics-per-node 2"), std::string(" --gpu-bandwidth 2000"),
        " --calibration " + calibration_file(), std::string(" --micro-batch 4 --seq-len 512")}) {
    const std::vector<std::string> sim = simulate_notes(extra);
    ASSERT_EQ(sim.size(), 4u) << extra;
    EXPECT_EQ(texts(plan_json(extra)), sim) << extra;
  }
}

// Nothing is timed (paper accounting, no transformer shape): no time model is claimed.
TEST(PlanTimeModel, UntimedPlanHasNone) {
  const auto r = run_cli("plan --param-list " + std::string(ZEROSIM_SOURCE_DIR) +
                         "/scenarios/tiny_params.json --gpus 4 --mode paper --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_TRUE(j["time_model"].empty()) << j["time_model"].dump();
}

}  // namespace
}  // namespace zerosim
