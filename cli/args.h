// A small command-line parser for zerosim's subcommands. Every error is one line naming the flag,
// what was expected and what was found (Google Benchmark's commandlineflags.cc style), e.g.
//   zerosim plan: --gpus: expected an integer 1..16777216, got "-3"
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "zerosim/diagnostic.h"
#include "zerosim/ir_types.h"

namespace zerosim::cli {

struct FlagSpec {
  std::string name;        ///< "--gpus"
  std::string value_name;  ///< "N"; empty for a boolean switch
  std::string help;        ///< one line; mention the default
};

struct ParsedArgs {
  std::map<std::string, std::string> values;  ///< flag -> value ("" for switches)
  bool help = false;
  bool has(const std::string& flag) const { return values.count(flag) != 0; }
  std::optional<std::string> get(const std::string& flag) const;
};

/// Parses `--flag value`, `--flag=value` and switches. Unknown flags get a "did you mean" hint;
/// a flag given twice, a missing value and positional arguments are errors.
Result<ParsedArgs> parse_args(const std::vector<std::string>& args,
                              const std::vector<FlagSpec>& specs, const std::string& command);

/// "usage: zerosim <command> [flags]" followed by one aligned line per flag.
std::string format_help(const std::string& command, const std::string& summary,
                        const std::vector<FlagSpec>& specs);

/// An integer in [lo, hi]; accepts "8", "1e3"-style integral values; errors name the flag.
Result<std::uint64_t> parse_uint(const std::string& flag, const std::string& text, std::uint64_t lo,
                                 std::uint64_t hi);
/// A comma-separated list of integers in [lo, hi] ("0,3,7"); at least one.
Result<std::vector<std::uint32_t>> parse_uint_list(const std::string& flag, const std::string& text,
                                                   std::uint32_t lo, std::uint32_t hi);
/// A finite number in [lo, hi].
Result<double> parse_number(const std::string& flag, const std::string& text, double lo, double hi);
/// One of `allowed`.
Result<std::string> parse_choice(const std::string& flag, const std::string& text,
                                 const std::vector<std::string>& allowed);
/// --deepspeed-version: edaa722 (or the full commit) or 0.14.4 (or v0.14.4); plan and the run
/// commands share it.
Result<DeepSpeedVersion> parse_deepspeed_version_flag(const std::string& text);

}  // namespace zerosim::cli
