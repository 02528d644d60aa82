// `zerosim view`'s planner flags, through the run commands' own resolution (build_run), so the
// viewer accepts and refuses exactly what `zerosim simulate` does.
#include "cmd_view_inputs.h"

#include <algorithm>
#include <utility>

#include "run_inputs.h"

namespace zerosim::cli {

std::vector<FlagSpec> view_planner_flags() {
  std::vector<FlagSpec> f = run_flags();
  f.erase(
      std::remove_if(f.begin(), f.end(), [](const FlagSpec& s) { return s.name == "--scenario"; }),
      f.end());
  return f;
}

bool has_view_planner_flags(const ParsedArgs& args) {
  const std::vector<FlagSpec> flags = view_planner_flags();
  return std::any_of(flags.begin(), flags.end(),
                     [&](const FlagSpec& s) { return args.has(s.name); });
}

Result<Scenario> view_scenario_from_flags(const ParsedArgs& args) {
  // build_run also partitions and builds the schedule: the same checks simulate runs (work limits,
  // a plan that cannot partition) refuse here, before the viewer opens; the what-if session then
  // builds its own run from the scenario.
  Result<BuiltRun> run = build_run(args);
  if (!run.ok()) return Result<Scenario>(run.diagnostics());
  return Result<Scenario>(std::move(run.value().scenario), run.diagnostics());
}

}  // namespace zerosim::cli
