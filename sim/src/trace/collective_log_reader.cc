// read_collective_log and collectives_of (trace_compare.h): both sides of a sequence comparison as
// logged collectives.
#include <algorithm>
#include <string>
#include <vector>

#include "base/json_reader.h"
#include "zerosim/trace_compare.h"

namespace zerosim {
namespace {

using json::enum_names;

template <class E>
bool read_enum(json::JsonReader& r, const char* key, const std::vector<std::string>& names,
               E& out) {
  auto v = r.get_enum(key, names);
  if (!v) return false;
  out = static_cast<E>(std::find(names.begin(), names.end(), *v) - names.begin());
  return true;
}

constexpr std::size_t kMaxErrors = 20;  // a broken 100k-line log gives 20 lines and a count

bool read_line(const std::string& line, const std::string& source, LoggedCollective& c,
               Diagnostics& d) {
  auto doc = json::parse(line, source, d);
  if (!doc) return false;
  json::JsonReader r(*doc, source, "", d);
  if (!r.expect_object()) return false;
  static const auto phases = enum_names<Phase>(kPhaseCount, phase_name);
  static const auto kinds = enum_names<CollectiveKind>(kCollectiveKindCount, collective_name);
  static const auto dtypes = enum_names<DType>(kDTypeCount, dtype_name);
  static const std::vector<std::string> reduce_ops = {"sum", "max"};
  for (const char* k : {"rank", "step", "phase", "op", "numel", "out_numel", "dtype", "group_size"})
    if (!r.has(k)) r.error(std::string("expected key \"") + k + "\", got none");
  // A log names no world; its ranks and groups are held to the largest one zerosim reads (check
  // keeps a sequence per rank up to the largest: rank 4294967294 ran out of memory).
  if (auto v = r.get_uint("rank", 0, kMaxTracedWorld - 1)) c.rank = static_cast<std::uint32_t>(*v);
  if (auto v = r.get_uint("step", 0, 0xFFFFFFFEu)) c.step = static_cast<std::uint32_t>(*v);
  if (auto v = r.get_uint("micro_step", 0, 0xFFFFFFFEu))
    c.micro_step = static_cast<std::uint32_t>(*v);
  read_enum(r, "phase", phases, c.phase);
  read_enum(r, "op", kinds, c.kind);
  if (auto v = r.get_uint("numel", 0, UINT64_MAX)) c.numel = *v;
  if (auto v = r.get_uint("out_numel", 0, UINT64_MAX)) c.out_numel = *v;
  read_enum(r, "dtype", dtypes, c.dtype);
  if (auto v = r.get_uint("group_size", 1, kMaxTracedWorld))
    c.group_size = static_cast<std::uint32_t>(*v);
  if (r.has("reduce_op")) {
    ReduceOp op = ReduceOp::None;
    std::size_t i = 0;
    if (read_enum(r, "reduce_op", reduce_ops, i)) op = i == 0 ? ReduceOp::Sum : ReduceOp::Max;
    c.reduce_op = op;
  }
  // One root: a line with both had src win without a word (found by a hostile-input pass).
  if (r.has("dst") && r.has("src"))
    r.error("expected one of dst (a reduce's root) and src (a broadcast's), got both", "src");
  for (const char* k : {"dst", "src"})
    if (auto v = r.get_int(k, 0, 0x7FFFFFFF)) c.root = static_cast<std::int32_t>(*v);
  if (auto v = r.get_uint("bucket", 0, 0xFFFFFFFEu)) c.bucket = static_cast<std::uint32_t>(*v);
  r.reject_unknown({"rank", "step", "micro_step", "phase", "op", "numel", "out_numel", "dtype",
                    "group_size", "reduce_op", "dst", "src", "bucket"});
  return !d.has_errors();
}

}  // namespace

Result<std::vector<LoggedCollective>> read_collective_log(const std::string& text,
                                                          const std::string& source) {
  std::vector<LoggedCollective> out;
  Diagnostics d;
  std::size_t errors = 0, line_no = 0, pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    Diagnostics one;
    LoggedCollective c;
    if (read_line(line, source + ":" + std::to_string(line_no), c, one)) {
      out.push_back(c);
    } else {
      for (const Diagnostic& x : one.items())
        if (errors++ < kMaxErrors) d.add(x);
    }
  }
  if (errors > kMaxErrors)
    d.error(source, "", "and " + std::to_string(errors - kMaxErrors) + " more errors");
  if (d.has_errors()) return d;
  if (out.empty())
    return fail<std::vector<LoggedCollective>>(source, "",
                                               "expected at least one collective line, got none");
  return out;
}

std::vector<LoggedCollective> collectives_of(const Trace& t) {
  std::vector<LoggedCollective> out;
  out.reserve(t.comms.size());
  for (const CommRecord& r : t.comms) {
    LoggedCollective c;
    c.rank = r.rank;
    c.step = r.step;
    c.phase = r.phase;
    c.kind = r.kind;
    c.numel = r.numel;
    c.out_numel = r.out_numel;
    c.dtype = r.dtype;
    c.group_size = r.group_size;
    if (r.bucket != kNone) c.bucket = r.bucket;
    out.push_back(c);
  }
  return out;
}

}  // namespace zerosim
