// The planner's flags for `zerosim view`'s what-if mode (issue #9: "open a scenario (or the
// planner's flags) instead of a trace"): `zerosim view --model gpt2-xl --gpus 8 --stage 2` resolves
// its scenario exactly as `zerosim simulate` does (run_inputs.h: the same flags, the same parser,
// the same errors), and the viewer's what-if session simulates it. Here, in the CLI's objects, so
// the viewer's code (ui/app) reaches the CLI's flag handling through this one header.
#pragma once

#include <string>
#include <vector>

#include "args.h"
#include "zerosim/scenario.h"

namespace zerosim::cli {

/// The run commands' model, cluster and training flags (run_flags() without --scenario, which
/// `view` lists itself).
std::vector<FlagSpec> view_planner_flags();

/// True when `args` holds any of view_planner_flags().
bool has_view_planner_flags(const ParsedArgs& args);

/// The scenario those flags describe (with `--scenario FILE` in `args`: that file with the flags
/// as overrides, as `simulate --scenario FILE --gpus 16`). Errors and notes as resolve_run's: the
/// schedule is not built here (the what-if session builds it, once).
Result<Scenario> view_scenario_from_flags(const ParsedArgs& args);

}  // namespace zerosim::cli
