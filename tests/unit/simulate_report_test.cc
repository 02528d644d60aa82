// write_simulate_report (simulate_report.h): the text report `zerosim simulate` prints, and its
// JSON form, the summary JSON. The golden outputs pin every byte of the shipped scenarios' reports;
// these tests pin the parts that depend on the run (the OOM line and its zero.Init hint).
#include "zerosim/simulate_report.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "zerosim/engine.h"
#include "zerosim/partition_plan.h"
#include "zerosim/scenario.h"
#include "zerosim/schedule_builder.h"
#include "zerosim/time_model.h"

namespace zerosim {
namespace {

struct SimRun {
  Schedule schedule;
  SimulationResult result;
};

// The shipped tiny scenario at `stage`, on a GPU with `memory` bytes (0: the scenario's GPU).
SimRun run_tiny(int stage, bool zero_init, Bytes memory = 0) {
  auto sc = load_scenario_file(std::string(ZEROSIM_SOURCE_DIR) + "/scenarios/tiny_zero2_4gpu.json");
  EXPECT_TRUE(sc.ok()) << sc.diagnostics().to_string();
  Scenario& s = sc.value();
  s.ds.zero.stage = stage;
  s.training.zero_init = zero_init;
  if (memory != 0) s.cluster.gpu.memory_bytes = memory;
  auto plan = plan_partition(
      s.model, partition_options(s.ds, static_cast<std::uint32_t>(s.cluster.world_size())));
  EXPECT_TRUE(plan.ok()) << plan.diagnostics().to_string();
  ScheduleInput in;
  in.model = &s.model;
  in.plan = &plan.value();
  in.ds = &s.ds;
  in.cluster = s.cluster;
  in.training = s.training;
  SimRun r;
  auto built = build_schedule(in);
  EXPECT_TRUE(built.ok()) << built.diagnostics().to_string();
  r.schedule = built.value();
  auto sim = simulate(r.schedule, s.cluster.gpu);
  EXPECT_TRUE(sim.ok()) << sim.diagnostics().to_string();
  r.result = std::move(sim.value());
  return r;
}

std::string report(const SimRun& r, OutputFormat f) {
  std::ostringstream out;
  write_simulate_report(r.result.summary, r.schedule, f, out);
  return out.str();
}

TEST(SimulateReport, TableAndJson) {
  const SimRun r = run_tiny(2, false);
  const std::string table = report(r, OutputFormat::Table);
  EXPECT_EQ(table.rfind("zerosim simulate: ", 0), 0u) << table;
  EXPECT_NE(table.find(std::to_string(r.schedule.ops.size()) + " ops simulated"),
            std::string::npos);
  EXPECT_EQ(table.find("OUT OF MEMORY"), std::string::npos);
  std::ostringstream json;
  write_summary_json(r.result.summary, json);
  EXPECT_EQ(report(r, OutputFormat::Json), json.str());
}

// Each step's line names the rest of the step beside compute, exposed communication and exposed
// offload (the optimizer step and copies): the parts did not add up to the step time (a
// new-user pass found 19.6 ms of a 555 ms step unaccounted).
TEST(SimulateReport, AStepsPartsAddUpToTheStep) {
  for (int stage : {0, 2, 3}) {
    const SimRun r = run_tiny(stage, false);
    const std::string table = report(r, OutputFormat::Table);
    for (const StepSummary& st : r.result.summary.steps) {
      const SimTime dur = st.end_ns - st.start_ns;
      const SimTime rest = dur - st.compute_ns - st.exposed_comm_ns - st.exposed_offload_ns;
      ASSERT_GE(rest, 0) << "stage " << stage;
      const std::string line = "  step " + std::to_string(st.step) + "  " + human_duration(dur) +
                               "  (compute " + human_duration(st.compute_ns) +
                               ", exposed communication " + human_duration(st.exposed_comm_ns) +
                               ", exposed offload " + human_duration(st.exposed_offload_ns) +
                               ", the rest " + human_duration(rest) + ": optimizer step, copies)\n";
      EXPECT_NE(table.find(line), std::string::npos) << "stage " << stage << "\n" << line << table;
    }
  }
}

// An OOM while the whole unpartitioned model is live (stage 3 without zero.Init) points at
// --zero-init; the same GPU under zero.Init never allocates that buffer, so never gets the hint.
TEST(SimulateReport, InitOomHintsAtZeroInit) {
  const Bytes tiny_gpu = 400000;  // the model's 16-bit params alone take ~454 kB
  const std::string without = report(run_tiny(3, false, tiny_gpu), OutputFormat::Table);
  EXPECT_NE(without.find("OUT OF MEMORY"), std::string::npos) << without;
  EXPECT_NE(without.find("allocating " + std::string(kStage3WholeModelBuffer)), std::string::npos)
      << without;
  EXPECT_NE(without.find("hint: the OOM is at initialization"), std::string::npos) << without;
  const std::string with = report(run_tiny(3, true, tiny_gpu), OutputFormat::Table);
  EXPECT_EQ(with.find("hint: the OOM is at initialization"), std::string::npos) << with;
}

}  // namespace
}  // namespace zerosim
