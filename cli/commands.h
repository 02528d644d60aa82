// The zerosim subcommands. Each takes its arguments (after the command name) and returns the
// process exit code: 0 ok, 1 invalid input, 2 infeasible, 3 internal error.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "zerosim/diagnostic.h"

namespace zerosim::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitInvalidInput = 1;
inline constexpr int kExitInfeasible = 2;
inline constexpr int kExitInternal = 3;

int run_plan(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_schedule(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_simulate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_models(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

/// Prints diagnostics (one line each) to `err`; returns true when any is an error.
bool report(const Diagnostics& diags, std::ostream& err);

}  // namespace zerosim::cli
