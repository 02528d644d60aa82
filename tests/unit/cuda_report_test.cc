// The CUDA run's predicted-vs-measured report (cuda_report.h) on runs fabricated from a
// host-backend run of the toy scenario (no GPU): memory equal to the ledger passes, one category
// off by a byte fails, a missing collective fails, the time error is the median's after the warm-up
// steps, and single-GPU mode marks communication "model only".
#include "zerosim/cuda_report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "zerosim/engine.h"
#include "zerosim/partition_plan.h"
#include "zerosim/scenario.h"
#include "zerosim/schedule_builder.h"

namespace zerosim::cuda {
namespace {

struct Case {
  Scenario scenario;
  Schedule schedule;
  ScheduleGraph graph;
  SimulationResult predicted;
  CudaRun run;  ///< every rank as the host backend measured it
};

Case make_case() {
  Case c;
  auto sc = load_scenario_file(std::string(ZEROSIM_SOURCE_DIR) + "/scenarios/tiny_zero2_4gpu.json");
  EXPECT_TRUE(sc.ok()) << sc.diagnostics().to_string();
  c.scenario = sc.value();
  c.scenario.steps = 3;
  const Scenario& s = c.scenario;
  auto plan = plan_partition(
      s.model, partition_options(s.ds, static_cast<std::uint32_t>(s.cluster.world_size())));
  EXPECT_TRUE(plan.ok());
  auto sched = build_schedule(schedule_input(c.scenario, plan.value()));
  EXPECT_TRUE(sched.ok()) << sched.diagnostics().to_string();
  c.schedule = sched.value();
  auto g = lower_schedule(c.schedule);
  EXPECT_TRUE(g.ok());
  c.graph = g.value();
  EngineOptions eo;
  eo.record_trace = false;
  auto sim = simulate(c.schedule, c.graph, s.cluster.gpu, eo);
  EXPECT_TRUE(sim.ok());
  c.predicted = sim.value();
  exec::HostOptions ho;
  auto host = exec::run_host(c.schedule, c.graph, ho);
  EXPECT_TRUE(host.ok()) << host.diagnostics().to_string();
  c.run.gpu_name = "fabricated";
  for (const exec::HostRankResult& h : host->ranks) {
    CudaRankResult r;
    r.rank = h.rank;
    r.role = h.role;
    r.memory.tracked = h.memory;
    r.collectives = h.collectives;
    r.step_device_ns = {5000000, 2000000, 1000000};  // warm-up, then 2 ms and 1 ms
    c.run.ranks.push_back(r);
  }
  return c;
}

nlohmann::json report_json(const Case& c, std::uint32_t warmup = 1) {
  std::ostringstream out;
  ReportOptions o;
  o.json = true;
  o.warmup_steps = warmup;
  write_cuda_report(c.schedule, c.predicted, c.run, o, out);
  return nlohmann::json::parse(out.str());
}

TEST(CudaReport, EqualMemoryAndCallsPass) {
  const Case c = make_case();
  std::ostringstream out;
  EXPECT_TRUE(write_cuda_report(c.schedule, c.predicted, c.run, {}, out));
  EXPECT_NE(out.str().find("verdict: PASS"), std::string::npos) << out.str();
  const auto j = report_json(c);
  EXPECT_TRUE(j["passed"].get<bool>());
  ASSERT_EQ(j["ranks"].size(), 4u);
  for (const auto& r : j["ranks"]) {
    EXPECT_TRUE(r["memory_equal"].get<bool>());
    EXPECT_TRUE(r["collective_calls_equal"].get<bool>());
  }
}

TEST(CudaReport, NcclMemoryPerCommunicatorIsReported) {
  Case c = make_case();
  c.run.ranks[0].memory.nccl_by_comm = {{kNone, 123456}, {1, 789}};
  const auto j = report_json(c);
  const auto& by = j["ranks"][0]["nccl_bytes_by_comm"];
  ASSERT_EQ(by.size(), 2u);
  EXPECT_EQ(by[0]["comm"], "world");
  EXPECT_EQ(by[0]["bytes"], 123456);
  EXPECT_EQ(by[1]["comm"], 1);
  EXPECT_TRUE(j["ranks"][1]["nccl_bytes_by_comm"].empty());
}

TEST(CudaReport, OneCategoryOffByOneByteFails) {
  Case c = make_case();
  CudaRankResult& r = c.run.ranks[2];
  // Same total, one byte moved between categories: still a difference.
  r.memory.tracked.device_peak_by_category[0] -= 1;
  r.memory.tracked.device_peak_by_category[1] += 1;
  std::ostringstream out;
  EXPECT_FALSE(write_cuda_report(c.schedule, c.predicted, c.run, {}, out));
  EXPECT_NE(out.str().find("DIFFERS"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("verdict: FAIL"), std::string::npos);
  const auto j = report_json(c);
  EXPECT_FALSE(j["ranks"][2]["memory_equal"].get<bool>());
  EXPECT_TRUE(j["ranks"][1]["memory_equal"].get<bool>());
}

TEST(CudaReport, AMissingCollectiveFails) {
  Case c = make_case();
  ASSERT_FALSE(c.run.ranks[0].collectives.empty());
  c.run.ranks[0].collectives.pop_back();
  const auto j = report_json(c);
  EXPECT_FALSE(j["passed"].get<bool>());
  EXPECT_FALSE(j["ranks"][0]["collective_calls_equal"].get<bool>());
}

TEST(CudaReport, StepTimeIsTheMedianAfterWarmup) {
  EXPECT_EQ(median_step_ns({5, 2, 1}, 1), 2);  // {2, 1}: the upper median
  EXPECT_EQ(median_step_ns({5, 3, 1, 2}, 1), 2);
  EXPECT_EQ(median_step_ns({5}, 1), 0);
  const Case c = make_case();
  const auto j = report_json(c);
  const auto& r = j["ranks"][0];
  EXPECT_EQ(r["measured_step_ns"].get<std::int64_t>(), 2000000);
  const double predicted = r["predicted_step_ns"].get<double>();
  ASSERT_GT(predicted, 0);
  EXPECT_NEAR(r["step_error_pct"].get<double>(), 100.0 * (2e6 - predicted) / predicted, 0.01);
  EXPECT_EQ(report_json(c, 0)["ranks"][0]["measured_step_ns"].get<std::int64_t>(), 2000000);
}

TEST(CudaReport, SingleGpuMarksCommunicationModelOnly) {
  Case c = make_case();
  for (CudaRankResult& r : c.run.ranks) r.comm_model_only = true;
  std::ostringstream out;
  write_cuda_report(c.schedule, c.predicted, c.run, {}, out);
  EXPECT_NE(out.str().find("(comm: model only)"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("single-GPU mode"), std::string::npos);
  EXPECT_TRUE(report_json(c)["single_gpu"].get<bool>());
}

}  // namespace
}  // namespace zerosim::cuda
