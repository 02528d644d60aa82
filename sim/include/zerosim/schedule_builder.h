// Schedule builders: the pure function that turns a model, its partition plan, a DeepSpeed config,
// a cluster and training settings into the Schedule IR (schedule.h) that DeepSpeed would run, and
// the input rules shared with the CLI and the scenario loader.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zerosim/diagnostic.h"
#include "zerosim/ds_config.h"
#include "zerosim/gpu_catalog.h"
#include "zerosim/memory_model.h"
#include "zerosim/model_desc.h"
#include "zerosim/partition_plan.h"
#include "zerosim/scenario.h"
#include "zerosim/schedule.h"
#include "zerosim/schedule_graph.h"

namespace zerosim {

/// Everything a schedule is built from.
struct ScheduleInput {
  const ModelDesc* model = nullptr;
  const PartitionPlan* plan = nullptr;  ///< for the stage (stage 3 layout when ds.zero.stage == 3)
  const DsConfig* ds = nullptr;
  Cluster cluster;
  TrainingSettings training;
  std::uint32_t steps = 1;  ///< consecutive optimizer steps to emit (step 0 first)
  /// Steps whose fp16/bf16 overflow check finds an inf/nan (ascending, each before the last step,
  /// which is the steady state a simulation reports): step() issues the check and returns (§5,
  /// §7.7); no norm, update or gather. Stages 1-3 only.
  std::vector<std::uint32_t> overflow_steps;
  Accounting mode = Accounting::DeepSpeed;
  DeepSpeedVersion version = DeepSpeedVersion::Edaa722;
  /// How build_schedule checks what it built (a failure is a builder bug, reported, never handed
  /// on). Replan: every rule, operands included (what executors and files need). nullopt: no
  /// check here, for a caller that only simulates: simulate() lowers the schedule itself with
  /// LayoutCheck::References (structure and ordering; the engine reads no operand) and reports
  /// what that finds. The planner, which builds every row and sweep cell, does so; the same inputs
  /// through `zerosim simulate` or `schedule` still pass the full check (plan_simulate_test builds
  /// them so).
  std::optional<LayoutCheck> self_check = LayoutCheck::Replan;
  /// Op::label filled in. false: every label empty, for a caller that never shows one (the
  /// planner: its rows report memory, traffic and time, and a label is only text).
  bool labels = true;
};

/// Stage 3 without zero.Init: the init buffer holding every whole param before partitioning (an
/// out-of-memory there is what building the model under zero.Init avoids).
inline constexpr const char* kStage3WholeModelBuffer = "model params before partitioning";

/// The first problem of an overflow-step list for `steps` simulated steps (the steps must ascend
/// without repeats and come before the last step, the steady state a simulation reports), as an
/// "expected ..., got ..." message; empty when the list is fine. One rule for the CLI, scenario
/// files and build_schedule.
std::string overflow_steps_problem(const std::vector<std::uint32_t>& overflow_steps,
                                   std::uint32_t steps);

/// Why zero.Init cannot apply to this stage in this mode ("expected ..., got ..."), or empty:
/// zero.Init is stage 3's (paper mode models no init). One rule for the CLI, scenario files and
/// build_schedule.
std::string zero_init_problem(int stage, Accounting mode);

/// The builder input of a loaded scenario with its partition plan (both must outlive the input).
ScheduleInput schedule_input(const Scenario& s, const PartitionPlan& plan);

/// Builds the schedule (pure function). Dispatches on mode and ds->optimizer_path().
Result<Schedule> build_schedule(const ScheduleInput& in);

}  // namespace zerosim
