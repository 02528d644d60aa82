// Inputs of `zerosim schedule` and `zerosim simulate`: a scenario file, or the planner's model and
// cluster flags plus the stage to run. Resolves everything into a Scenario and builds the Schedule.
#pragma once

#include <string>
#include <vector>

#include "args.h"
#include "zerosim/partition_plan.h"
#include "zerosim/scenario.h"
#include "zerosim/schedule.h"
#include "zerosim/schedule_builder.h"

namespace zerosim::cli {

/// --scenario, the model/cluster flags, --stage, --world-size, --steps, --deepspeed-version,
/// --mode.
std::vector<FlagSpec> run_flags();

/// A scenario with every run flag applied and checked (steps, version, mode, zero.Init, the work
/// limit), before anything is partitioned or built.
struct ResolvedRun {
  Scenario scenario;
  std::string links_basis;  ///< what the cluster link flags replaced (empty: the catalog's)
};

/// Loads the scenario (file or flags) and applies the run flags; builds nothing. For a caller that
/// builds the schedule its own way (the viewer's what-if session), so it is built once.
Result<ResolvedRun> resolve_run(const ParsedArgs& args);

/// A scenario with its partition plan and schedule (the plan outlives the schedule's build).
struct BuiltRun {
  Scenario scenario;
  PartitionPlan plan;
  Schedule schedule;
  std::string links_basis;  ///< what the cluster link flags replaced (empty: the catalog's)
};

/// resolve_run, then partitions and builds the schedule.
Result<BuiltRun> build_run(const ParsedArgs& args);

}  // namespace zerosim::cli
