// Helpers for the host backend's tests: a shipped scenario built into its schedule and graph, and
// options with a short stall timeout.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "zerosim/host_backend.h"
#include "zerosim/partition_plan.h"
#include "zerosim/scenario.h"
#include "zerosim/schedule_builder.h"

namespace zerosim::exec::hosttest {

struct Built {
  Scenario scenario;
  PartitionPlan plan;
  Schedule schedule;
  ScheduleGraph graph;
};

/// scenarios/`scenario_file`, with `steps` steps when not 0.
inline Built build(const std::string& scenario_file, std::uint32_t steps = 0) {
  Built b;
  auto sc = load_scenario_file(std::string(ZEROSIM_SOURCE_DIR) + "/scenarios/" + scenario_file);
  EXPECT_TRUE(sc.ok()) << sc.diagnostics().to_string();
  b.scenario = sc.value();
  if (steps) b.scenario.steps = steps;
  const Scenario& s = b.scenario;
  auto plan = plan_partition(
      s.model, partition_options(s.ds, static_cast<std::uint32_t>(s.cluster.world_size())));
  EXPECT_TRUE(plan.ok()) << plan.diagnostics().to_string();
  b.plan = plan.value();
  auto sched = build_schedule(schedule_input(b.scenario, b.plan));
  EXPECT_TRUE(sched.ok()) << sched.diagnostics().to_string();
  b.schedule = sched.value();
  auto g = lower_schedule(b.schedule);
  EXPECT_TRUE(g.ok()) << g.diagnostics().to_string();
  b.graph = g.value();
  return b;
}

inline HostOptions quick() {
  HostOptions o;
  o.stall_timeout = std::chrono::milliseconds(2000);
  return o;
}

}  // namespace zerosim::exec::hosttest
