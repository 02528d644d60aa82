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
  // resolve_run applies and checks the flags as simulate does but builds nothing: the what-if
  // session partitions and builds the schedule of this scenario itself (a plan that cannot
  // partition is refused there, in one line, before the viewer opens), so it is built once.
  Result<ResolvedRun> run = resolve_run(args);
  if (!run.ok()) return Result<Scenario>(run.diagnostics());
  return Result<Scenario>(std::move(run.value().scenario), run.diagnostics());
}

}  // namespace zerosim::cli
