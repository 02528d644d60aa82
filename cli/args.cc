// Command-line parsing with one-line diagnostics.
#include "args.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace zerosim::cli {

std::optional<std::string> ParsedArgs::get(const std::string& flag) const {
  auto it = values.find(flag);
  if (it == values.end()) return std::nullopt;
  return it->second;
}

Result<ParsedArgs> parse_args(const std::vector<std::string>& args,
                              const std::vector<FlagSpec>& specs, const std::string& command) {
  ParsedArgs out;
  Diagnostics d;
  const std::string src = "zerosim " + command;
  std::vector<std::string> names;
  names.reserve(specs.size());
  for (const auto& s : specs) names.push_back(s.name);
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    if (a == "--help" || a == "-h") {
      out.help = true;
      continue;
    }
    // -o is --output's short form (as in cc, curl, nsys), for every command that writes a file.
    if (a == "-o" && std::find(names.begin(), names.end(), "--output") != names.end())
      a = "--output";
    if (a == "-o") {  // a command without --output (simulate): name the flags that write files
      std::string writers;
      for (const auto& s : specs)
        if (s.help.rfind("write ", 0) == 0)
          writers += (writers.empty() ? "" : ", ") + s.name + " " + s.value_name;
      d.error(src, "", "unexpected argument \"-o\": " + command + " has no --output",
              writers.empty() ? "see --help" : "it writes files with " + writers);
      if (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) ++i;  // its file ("-" too)
      continue;
    }
    if (a.rfind("--", 0) != 0) {
      d.error(src, "", "unexpected argument " + quote(a), "flags start with --; see --help");
      continue;
    }
    std::optional<std::string> inline_value;
    if (auto eq = a.find('='); eq != std::string::npos) {
      inline_value = a.substr(eq + 1);
      a = a.substr(0, eq);
    }
    const FlagSpec* spec = nullptr;
    for (const auto& s : specs)
      if (s.name == a) spec = &s;
    if (!spec) {
      std::string m = closest_match(a, names);
      // Hugging Face's name for it: the closest spelling is --gradient-clipping, another knob.
      if (a == "--gradient-checkpointing" &&
          std::find(names.begin(), names.end(), "--activation-checkpointing") != names.end())
        m = "--activation-checkpointing (Hugging Face's gradient checkpointing)";
      d.error(src, "", "unknown flag " + a, m.empty() ? "see --help" : "did you mean " + m + "?");
      // Its value, if it has one, is not a second error.
      if (!inline_value && i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) ++i;
      continue;
    }
    if (out.values.count(a)) {
      d.error(src, "", a + ": given twice");
      if (!spec->value_name.empty() && !inline_value && i + 1 < args.size()) ++i;  // skip its value
      continue;
    }
    if (spec->value_name.empty()) {
      if (inline_value) d.error(src, "", a + ": takes no value, got " + quote(*inline_value));
      out.values[a] = "";
      continue;
    }
    const std::string* value = inline_value ? &*inline_value
                               : i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0
                                   ? &args[i + 1]
                                   : nullptr;
    if (value && value->empty() && (spec->value_name == "FILE" || spec->value_name == "DIR")) {
      // Else the reader's "cannot read file: No such file or directory" named no file and no flag.
      d.error(src, "",
              a + ": expected a " + (spec->value_name == "DIR" ? "directory" : "file") +
                  " path, got an empty string");
      if (!inline_value) ++i;
      continue;
    }
    if (inline_value) {
      out.values[a] = *inline_value;
    } else if (i + 1 < args.size() && args[i + 1].rfind("--", 0) == 0 && args[i + 1] != "--") {
      // A flag where the value belongs: `--output --sweep` wrote a file named "--sweep" and never
      // ran the sweep. (A value that starts with "--" can be given as --output=--name.)
      std::string m = a;
      m += ": expected a value (" + spec->value_name + "), got the flag ";
      m += args[i + 1];
      m += " (write " + a + "=VALUE for a value starting with --)";
      d.error(src, "", m);
    } else if (i + 1 < args.size()) {
      out.values[a] = args[++i];
    } else {
      d.error(src, "", a + ": expected a value (" + spec->value_name + "), got nothing");
    }
  }
  if (d.has_errors()) return Result<ParsedArgs>(d);
  return out;
}

std::string format_help(const std::string& command, const std::string& summary,
                        const std::vector<FlagSpec>& specs) {
  std::string s = "usage: zerosim " + command + " [flags]\n\n" + summary + "\n\nflags:\n";
  std::size_t w = 0;
  for (const auto& f : specs)
    w = std::max(w, f.name.size() + (f.value_name.empty() ? 0 : f.value_name.size() + 1));
  for (const auto& f : specs) {
    std::string left = f.name + (f.value_name.empty() ? "" : " " + f.value_name);
    s += "  " + left + std::string(w - left.size() + 2, ' ') + f.help +
         (f.name == "--output" ? " (short: -o FILE)" : "") + "\n";
  }
  s += "  --help" + std::string(w > 4 ? w - 4 : 2, ' ') + "show this help\n";
  return s;
}

Result<std::uint64_t> parse_uint(const std::string& flag, const std::string& text, std::uint64_t lo,
                                 std::uint64_t hi) {
  std::string expected = "expected an integer " + std::to_string(lo) + ".." + std::to_string(hi) +
                         ", got " + quote(text);
  // Decimal digits only, read as an integer: strtod took " 8", "+8", "8.0", "0x10" and "1e3", and
  // a value that rounds to the limit as a double (18446744073709552000 is 2^64 there) passed the
  // range check and was then cast past uint64_t.
  const bool digits = !text.empty() && std::all_of(text.begin(), text.end(),
                                                   [](char c) { return c >= '0' && c <= '9'; });
  if (!digits) return fail<std::uint64_t>(flag, "", expected);
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (errno == ERANGE || end != text.c_str() + text.size() || v < lo || v > hi)
    return fail<std::uint64_t>(flag, "", expected);
  return static_cast<std::uint64_t>(v);
}

Result<std::vector<std::uint32_t>> parse_uint_list(const std::string& flag, const std::string& text,
                                                   std::uint32_t lo, std::uint32_t hi) {
  std::vector<std::uint32_t> out;
  std::size_t at = 0;
  while (!text.empty() && at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    auto v = parse_uint(flag, text.substr(at, comma - at), lo, hi);
    if (!v.ok()) return Result<std::vector<std::uint32_t>>(v.diagnostics());
    out.push_back(static_cast<std::uint32_t>(v.value()));
    at = comma + 1;
  }
  if (out.empty())
    return fail<std::vector<std::uint32_t>>(
        flag, "", "expected a comma-separated list of integers, got \"\"");
  return out;
}

Result<double> parse_number(const std::string& flag, const std::string& text, double lo,
                            double hi) {
  // A decimal number: strtod also took leading spaces (" 0.5") and hexadecimal floats ("0x1p4",
  // 16), which no user means.
  const bool decimal = !text.empty() &&
                       text.find_first_not_of("0123456789.eE+-") == std::string::npos &&
                       std::string_view("0123456789.-").find(text.front()) != std::string::npos;
  errno = 0;
  char* end = nullptr;
  double v = decimal ? std::strtod(text.c_str(), &end) : 0;
  if (!decimal || end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(v) ||
      v < lo || v > hi) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "expected a number in [%g, %g], got ", lo, hi);
    return fail<double>(flag, "", buf + quote(text));
  }
  return v;
}

Result<DeepSpeedVersion> parse_deepspeed_version_flag(const std::string& text) {
  if (auto v = parse_deepspeed_version(text)) return *v;
  return fail<DeepSpeedVersion>("--deepspeed-version", "",
                                "expected one of edaa722, 0.14.4, got " + quote(text),
                                "edaa722 is DeepSpeed's master 27 commits after v0.19.5; no "
                                "other release is modelled");
}

Result<std::string> parse_choice(const std::string& flag, const std::string& text,
                                 const std::vector<std::string>& allowed) {
  // Case-insensitive (BF16, Flash, JSON), answering with the canonical spelling.
  for (const auto& a : allowed)
    if (a.size() == text.size() &&
        std::equal(a.begin(), a.end(), text.begin(), [](unsigned char x, unsigned char y) {
          return std::tolower(x) == std::tolower(y);
        }))
      return a;
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  std::string m = closest_match(text, allowed);
  return fail<std::string>(flag, "", "expected one of " + list + ", got " + quote(text),
                           m.empty() ? "" : "did you mean " + m + "?");
}

}  // namespace zerosim::cli
