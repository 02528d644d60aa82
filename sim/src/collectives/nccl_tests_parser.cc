// Reads nccl-tests text output (nccl-tests 2.x, src/util.cu) into tables of (size, time) rows and
// fits each one (nccl_tests_fit.cc). A run looks like
//   # Collective test starting: all_reduce_perf
//   # nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592 step: 2(factor) ...
//   #  Rank  0 Group  0 Pid  1234 on node-a device  0 [0000:18:00] NVIDIA H100 80GB HBM3
//   #  size  count  type  redop  root   time  algbw  busbw  #wrong   time  algbw  busbw  #wrong
//         8      2  float   sum    -1  17.31   0.00   0.00       0  17.92   0.00   0.00       0
//   # Avg bus bandwidth    : 120.5
// The column header decides the layout, so per-iteration columns (-I 1), timestamps and older
// layouts without "root" are read the same way. Lines that are neither '#' lines nor rows inside a
// table (NCCL INFO, MPI warnings, shell prompts) are skipped: real logs are full of them. Inside a
// table, a line that starts with a number must be a well-formed row, or it is an error. Only the
// out-of-place columns are used: in-place runs the same call; one measurement per size is enough.

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "collectives/nccl_tests.h"
#include "zerosim/input_file.h"

namespace zerosim {
namespace collectives {
namespace {

using Tokens = std::vector<std::string_view>;

Tokens split(std::string_view s) {
  Tokens out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    const std::size_t start = i;
    while (i < s.size() && s[i] != ' ' && s[i] != '\t') ++i;
    if (i > start) out.push_back(s.substr(start, i - start));
  }
  return out;
}

// Inside a table, a line is a row (to be checked strictly) when its first word starts with a digit
// and has no ':' — NCCL and MPI log lines start with "host:pid:tid", and host names may be numeric.
bool looks_like_row(std::string_view first) {
  return first.front() >= '0' && first.front() <= '9' && first.find(':') == std::string_view::npos;
}

std::optional<std::uint64_t> to_u64(std::string_view s) {
  std::uint64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> to_double(std::string_view s) {
  double v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::string at_line(std::size_t n) { return "line " + std::to_string(n); }

// Column positions, from the "#  size  count ..." header line.
struct Layout {
  std::vector<std::string> names;  // header labels, in order
  std::size_t columns = 0;         // tokens per data row ("timestamp" prints as date and time)
  std::size_t size = 0, time = 0, algbw = 0, busbw = 0;
  std::optional<std::size_t> wrong;
};

std::optional<Layout> parse_layout(const Tokens& tok) {
  Layout l;
  for (const auto t : tok) l.names.emplace_back(t);
  const auto find = [&](std::string_view a, std::string_view b) -> std::optional<std::size_t> {
    for (std::size_t i = 0; i < tok.size(); ++i) {
      if (tok[i] == a || tok[i] == b) return i;
    }
    return std::nullopt;
  };
  const auto size = find("size", "size");
  const auto time = find("time", "cputime");
  if (!size || !time || *time + 2 >= tok.size() || tok[*time + 1] != "algbw" ||
      tok[*time + 2] != "busbw") {
    return std::nullopt;
  }
  l.size = *size;
  l.time = *time;
  l.algbw = *time + 1;
  l.busbw = *time + 2;
  if (*time + 3 < tok.size() && tok[*time + 3] == "#wrong") l.wrong = *time + 3;
  l.columns = tok.size() + (find("timestamp", "timestamp") ? 1 : 0);
  return l;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

// One program run in the text.
struct Run {
  std::size_t first_line = 0;
  std::string program;  // "" for a table with no "Collective test starting" line
  std::optional<CollectiveKind> kind;
  bool skip = false;  // a collective zerosim does not model
  std::optional<std::uint64_t> group;
  std::uint32_t ranks = 0;
  std::set<std::string> hosts;
  std::optional<Layout> layout;
  std::size_t header_line = 0;
  bool table_open = false;
  bool bad_rows = false;  // some rows were rejected (already reported)
  std::vector<NcclTestsRow> rows;
};

// "/opt/nccl-tests/build/all_reduce_perf_mpi" -> "all_reduce_perf".
std::string program_basename(std::string_view p) {
  if (const auto slash = p.rfind('/'); slash != std::string_view::npos) p.remove_prefix(slash + 1);
  if (p.size() > 4 && p.substr(p.size() - 4) == "_mpi") p.remove_suffix(4);
  return std::string(p);
}

class Reader {
 public:
  Reader(std::string source, std::optional<CollectiveKind> fallback)
      : source_(std::move(source)), fallback_(fallback) {}

  void line(std::size_t no, std::string_view text) {
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    Tokens tok = split(text);
    if (tok.empty()) return;
    if (tok[0].front() == '#') {
      if (tok[0] == "#") {
        tok.erase(tok.begin());
      } else {
        tok[0].remove_prefix(1);
      }
      if (!tok.empty()) comment(no, tok);
    } else if (looks_like_row(tok[0]) && !runs_.empty() && runs_.back().table_open) {
      row(no, tok, runs_.back());
    }
  }

  Result<CalibratedLinks> finish();

 private:
  void start_run(std::size_t no, std::string program) {
    Run r;
    r.first_line = no;
    r.program = std::move(program);
    r.kind = r.program.empty() ? fallback_ : parse_collective(r.program);
    if (!r.program.empty() && !r.kind) {
      r.skip = true;
      diags_.warning(source_, at_line(no),
                     r.program + " is not a collective zerosim models; its table is skipped");
    }
    runs_.push_back(std::move(r));
  }

  Run& current(std::size_t no) {
    if (runs_.empty()) start_run(no, "");
    return runs_.back();
  }

  void comment(std::size_t no, const Tokens& tok) {
    const auto is = [&](std::size_t i, std::string_view w) {
      return i < tok.size() && tok[i] == w;
    };
    if (is(0, "Collective") && is(1, "test") && is(2, "starting:")) {
      start_run(no, tok.size() > 3 ? program_basename(tok[3]) : "");
    } else if (is(0, "nThread")) {
      if (runs_.empty() || runs_.back().layout) start_run(no, "");  // an older run: no banner
    } else if (is(0, "Rank") && is(2, "Group") && is(6, "on") && tok.size() > 7) {
      rank_line(current(no), tok);
    } else if (is(0, "size")) {
      header(no, tok);
    } else if ((is(0, "Out") && is(1, "of") && is(2, "bounds")) || (is(0, "Avg") && is(1, "bus")) ||
               (is(0, "Collective") && is(2, "concluded:"))) {
      if (!runs_.empty()) runs_.back().table_open = false;
    }
  }

  static void rank_line(Run& r, const Tokens& tok) {
    const auto group = to_u64(tok[3]);
    if (!group) return;
    if (!r.group) r.group = group;
    if (*group != *r.group) return;  // NCCL_TESTS_SPLIT: bandwidth is per group; count the first
    ++r.ranks;
    r.hosts.emplace(tok[7]);
  }

  void header(std::size_t no, const Tokens& tok) {
    if (runs_.empty() || runs_.back().layout) start_run(no, "");
    Run& r = runs_.back();
    r.layout = parse_layout(tok);
    r.header_line = no;
    if (!r.layout) {
      diags_.error(source_, at_line(no),
                   "expected an nccl-tests column header with size ... time algbw busbw, got \"# " +
                       join(std::vector<std::string>(tok.begin(), tok.end())) + "\"");
      return;
    }
    r.table_open = true;
  }

  void row(std::size_t no, const Tokens& tok, Run& r);

  std::string source_;
  std::optional<CollectiveKind> fallback_;
  std::vector<Run> runs_;
  Diagnostics diags_;
};

void Reader::row(std::size_t no, const Tokens& tok, Run& r) {
  if (r.skip) return;
  const Layout& l = *r.layout;
  const std::string where = at_line(no);
  if (tok.size() != l.columns) {
    diags_.error(source_, where,
                 "expected " + std::to_string(l.columns) + " columns (" + join(l.names) +
                     "), got " + std::to_string(tok.size()));
    r.bad_rows = true;
    return;
  }
  const auto column = [&](std::size_t i) {
    return "column " + std::to_string(i + 1) + " (" + l.names[i] + "): ";
  };
  bool rejected = false;
  const auto bad = [&](std::size_t i, const std::string& expected) {
    diags_.error(source_, where,
                 column(i) + "expected " + expected + ", got \"" + std::string(tok[i]) + "\"");
    rejected = true;
  };
  NcclTestsRow out;
  out.line = no;
  const auto size = to_u64(tok[l.size]);
  const auto time = to_double(tok[l.time]);
  const auto algbw = to_double(tok[l.algbw]);
  const auto busbw = to_double(tok[l.busbw]);
  if (!size) bad(l.size, "a byte count");
  if (!time || *time <= 0) bad(l.time, "a time in us > 0");
  if (!algbw || *algbw < 0) bad(l.algbw, "a bandwidth in GB/s >= 0");
  if (!busbw || *busbw < 0) bad(l.busbw, "a bandwidth in GB/s >= 0");
  if (l.wrong && tok[*l.wrong] != "N/A") {
    const auto wrong = to_double(tok[*l.wrong]);
    if (!wrong || *wrong < 0) {
      bad(*l.wrong, "a count of wrong elements or N/A");
    } else if (*wrong > 0) {
      diags_.warning(
          source_, where,
          std::string(tok[*l.wrong]) + " wrong elements: this run failed its data check");
    }
  }
  if (rejected) {
    r.bad_rows = true;
    return;
  }
  out.size = *size;
  out.time_us = *time;
  out.algbw_gbps = *algbw;
  out.busbw_gbps = *busbw;
  r.rows.push_back(out);
}

Result<CalibratedLinks> Reader::finish() {
  CalibratedLinks links;
  std::array<std::size_t, kCollectiveKindCount> seen_at{};
  bool any_table = false;
  for (const Run& r : runs_) {
    if (r.skip || (!r.layout && r.program.empty())) continue;
    any_table = true;
    const std::size_t at = r.layout ? r.header_line : r.first_line;
    if (!r.kind) {
      diags_.error(source_, at_line(at),
                   "cannot tell which collective this table measures: expected a line \"# "
                   "Collective test starting: <program>\" before it");
      continue;
    }
    const std::string program(nccl_tests_program(*r.kind));
    if (r.rows.empty()) {
      if (!r.bad_rows) {
        diags_.error(source_, at_line(at), "the " + program + " table has no result rows");
      }
      continue;
    }
    if (r.bad_rows) continue;  // fitting what is left of a broken table would mislead
    std::size_t& first = seen_at[static_cast<std::size_t>(*r.kind)];
    if (first != 0) {
      diags_.error(source_, at_line(r.first_line),
                   "a second " + program + " table (the first starts at line " +
                       std::to_string(first) + "); give one table per collective");
      continue;
    }
    first = r.first_line;
    const NcclTestsTable table{*r.kind, r.first_line, r.ranks,
                               static_cast<std::uint32_t>(r.hosts.size()), r.rows};
    auto fit = fit_nccl_tests_table(table, source_);
    diags_.append(fit.diagnostics());
    if (fit.ok()) links.set(*r.kind, std::move(fit.value()));
  }
  if (!any_table) {
    diags_.error(source_, "",
                 "no nccl-tests result table found: expected a header line \"#  size  count  type "
                 "...\" followed by result rows");
  }
  if (diags_.has_errors()) return diags_;
  return Result<CalibratedLinks>(std::move(links), std::move(diags_));
}

}  // namespace
}  // namespace collectives

Result<CalibratedLinks> parse_nccl_tests(std::string_view text, const std::string& source,
                                         std::optional<CollectiveKind> fallback) {
  collectives::Reader reader(source, fallback);
  std::size_t no = 0;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    reader.line(++no, text.substr(0, nl));
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
  }
  return reader.finish();
}

Result<CalibratedLinks> load_nccl_tests(const std::string& path,
                                        std::optional<CollectiveKind> fallback) {
  Diagnostics d;
  std::string text;
  if (!read_input_file(path, text, d)) return Result<CalibratedLinks>(std::move(d));
  return parse_nccl_tests(text, path, fallback);
}

}  // namespace zerosim
