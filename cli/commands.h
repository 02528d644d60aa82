// The zerosim subcommands. Each takes its arguments (after the command name) and returns the
// process exit code: 0 ok, 1 invalid input, 2 infeasible, 3 internal error.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <span>
#include <string>
#include <string_view>
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
int run_validate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_check(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_calibrate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
int run_models(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
/// Defined by ui/app (zerosim_view_command): the viewer, or a one-line "not built" stub.
int run_view(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

/// Each command's --help text (usage, summary, one aligned line per flag).
std::string plan_help();
std::string schedule_help();
std::string simulate_help();
std::string models_help();
std::string validate_help();
std::string check_help();
std::string calibrate_help();
std::string view_help();

/// One subcommand: the single table behind dispatch, `zerosim --help`, `zerosim help <command>`
/// and the "did you mean" of an unknown command.
struct Command {
  std::string_view name;
  std::string_view description;  ///< one line for `zerosim --help`
  int (*run)(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
  std::string (*help)();  ///< what `zerosim <name> --help` prints
};

/// Every command, in the order `zerosim --help` lists them.
std::span<const Command> commands();
/// The command called `name`, or nullptr.
const Command* find_command(std::string_view name);

/// How many diagnostics report() prints; the rest are counted in one last line.
inline constexpr std::size_t kMaxReportedDiagnostics = 50;

/// Prints diagnostics (one line each, at most kMaxReportedDiagnostics, then "zerosim: and N more
/// errors") to `err`; returns true when any is an error.
bool report(const Diagnostics& diags, std::ostream& err);

}  // namespace zerosim::cli
