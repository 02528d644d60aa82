// A scenario file with flags on top: `--scenario FILE --gpus 16` is the scenario with that one
// value changed, so a what-if needs no file edit. Each flag is checked as the flag-only path checks
// it (one line naming the flag), then written into the scenario's JSON at the key it stands for,
// and the edited scenario is loaded by the ordinary scenario loader: "auto" values, DeepSpeed's
// batch rule and every cross-check run on the result exactly as for a file that said so. What
// changed is one note per key in the result's diagnostics ("note: --gpus: overrides s.json
// /cluster/nodes (was 1, now 2)"), which every command prints.
#pragma once

#include <string>
#include <vector>

#include "args.h"
#include "zerosim/scenario.h"

namespace zerosim::cli {

/// The flags a scenario value can be overridden with (the model, cluster and training flags of
/// `plan`, plus --world-size and --stage of the run commands, and --deepspeed-version).
const std::vector<std::string>& scenario_override_flags();

/// Loads `--scenario`'s file and applies every override flag present in `args`.
Result<Scenario> load_scenario_with_overrides(const ParsedArgs& args);

}  // namespace zerosim::cli
