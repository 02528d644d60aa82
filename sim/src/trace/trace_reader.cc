// Reader of the zerosim trace JSON (trace.h). Layers as style.md §4.4: syntax (line and column of a
// truncated or malformed file), header (format and version; a wrong one stops reading), schema
// (types, enum names, unknown keys), then references and order: span ranks must be traced ranks,
// span/comm cross-references must agree, memory rows must be in time order and add up. Every
// problem is a one-line Diagnostic "file: /spans/12/comm: expected a comm index 0..3, got 9".
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "base/json_reader.h"
#include "zerosim/trace.h"

namespace zerosim {
namespace {

using json::JsonReader;
constexpr std::uint64_t kU32 = std::numeric_limits<std::uint32_t>::max();
constexpr std::int64_t kI64 = std::numeric_limits<std::int64_t>::max();

template <class E, class F>
std::vector<std::string> enum_names(std::size_t count, F&& name) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < count; ++i) out.emplace_back(name(static_cast<E>(i)));
  return out;
}

template <class E>
void read_enum(JsonReader& r, std::string_view key, const std::vector<std::string>& names, E& out) {
  auto s = r.get_enum(key, names);
  if (s) out = static_cast<E>(std::find(names.begin(), names.end(), *s) - names.begin());
}

template <class T>
void read_uint(JsonReader& r, std::string_view key, T& out, std::uint64_t hi = kU32,
               bool required = false) {
  if (required && !r.has(key)) r.error("expected a \"" + std::string(key) + "\" key, got none");
  if (auto v = r.get_uint(key, 0, hi)) out = static_cast<T>(*v);
}

void read_time(JsonReader& r, std::string_view key, SimTime& out) {
  if (!r.has(key)) r.error("expected a \"" + std::string(key) + "\" key, got none");
  if (auto v = r.get_int(key, 0, kI64)) out = *v;
}

void read_string(JsonReader& r, std::string_view key, std::string& out) {
  if (auto v = r.get_string(key)) out = *v;
}

bool check_header(JsonReader& root) {
  const auto fail_key = [&](const char* key, const std::string& want) {
    root.error("expected \"" + std::string(key) + "\": " + want + ", got no \"" + key + "\" key");
  };
  if (!root.has("format")) return fail_key("format", quote(kTraceFormat)), false;
  auto f = root.child("format");
  if (!f->value().is_string() || f->value().get<std::string>() != kTraceFormat)
    return f->error("expected " + quote(kTraceFormat) + ", got " + json::describe(f->value())),
           false;
  if (!root.has("version")) return fail_key("version", std::to_string(kTraceVersion)), false;
  auto v = root.child("version");
  if (!v->value().is_number_integer() || v->value().get<std::int64_t>() != kTraceVersion)
    return v->error("expected version " + std::to_string(kTraceVersion) + ", got " +
                    json::describe(v->value())),
           false;
  return true;
}

TraceMeta read_meta(JsonReader& root) {
  TraceMeta m;
  auto r = root.child("meta");
  if (!r) return root.error("expected a \"meta\" object, got none"), m;
  if (!r->expect_object()) return m;
  read_string(*r, "backend", m.backend);
  read_string(*r, "zerosim_version", m.zerosim_version);
  read_string(*r, "deepspeed_version", m.deepspeed_version);
  read_string(*r, "mode", m.mode);
  read_string(*r, "model", m.model);
  read_string(*r, "optimizer", m.optimizer);
  read_string(*r, "gpu", m.gpu);
  if (auto v = r->get_int("stage", 0, 3)) m.stage = static_cast<int>(*v);
  read_uint(*r, "world", m.world);
  read_uint(*r, "nodes", m.nodes);
  read_uint(*r, "gpus_per_node", m.gpus_per_node);
  read_uint(*r, "steps", m.steps);
  read_uint(*r, "grad_accum", m.grad_accum);
  read_uint(*r, "device_capacity", m.device_capacity, UINT64_MAX);
  if (auto notes = r->child("notes"))
    if (auto items = notes->elements())
      for (auto& n : *items)
        if (auto s = n.as_string()) m.notes.push_back(*s);
  r->reject_unknown({"backend", "zerosim_version", "deepspeed_version", "mode", "model",
                     "optimizer", "gpu", "stage", "world", "nodes", "gpus_per_node", "steps",
                     "grad_accum", "device_capacity", "notes"});
  return m;
}

void check_columns(JsonReader& root) {
  std::vector<std::string> want = {"t_ns", "total"};
  for (BufferCategory c : kAllCategories) want.emplace_back(category_name(c));
  auto c = root.child("memory_columns");
  if (!c) return;  // optional: the columns are fixed by the version
  if (!c->value().is_array() || c->value().get<std::vector<nlohmann::json>>() !=
                                    std::vector<nlohmann::json>(want.begin(), want.end()))
    c->error("expected the version-1 columns [\"t_ns\", \"total\", \"param16\", ...], got " +
             json::describe(c->value()));
}

void read_sample(JsonReader& row, MemorySample& s, SimTime prev_t) {
  const auto& v = row.value();
  if (!v.is_array() || v.size() != 2 + kCategoryCount)
    return row.error("expected an array of " + std::to_string(2 + kCategoryCount) +
                     " integers, got " + json::describe(v));
  for (const auto& x : v)
    if (!x.is_number_unsigned() && !(x.is_number_integer() && x.get<std::int64_t>() >= 0))
      return row.error("expected integers >= 0, got " + json::describe(x));
  s.t = static_cast<SimTime>(std::min<std::uint64_t>(v[0].get<std::uint64_t>(), kI64));
  s.total = v[1].get<std::uint64_t>();
  Bytes sum = 0;
  for (std::size_t k = 0; k < kCategoryCount; ++k) {
    s.by_category[k] = v[2 + k].get<std::uint64_t>();
    sum += s.by_category[k];
  }
  if (s.t < prev_t)
    row.error("expected memory samples in time order, got t = " + std::to_string(s.t) +
              " ns after " + std::to_string(prev_t) + " ns");
  if (sum != s.total)
    row.error("expected the categories to add up to the total " + std::to_string(s.total) +
              ", got " + std::to_string(sum));
}

void read_ranks(JsonReader& root, Trace& t) {
  auto r = root.child("ranks");
  if (!r) return root.error("expected a \"ranks\" array, got none");
  auto items = r->elements();
  if (!items) return;
  for (auto& item : *items) {
    if (!item.expect_object()) continue;
    TraceRank tr;
    read_uint(item, "rank", tr.rank, kU32, true);
    read_uint(item, "role", tr.role, kU32, true);
    if (auto n = item.get_uint("rank_count", 1, UINT64_MAX)) tr.rank_count = *n;
    if (!t.ranks.empty() && tr.rank <= t.ranks.back().rank)
      item.error("expected ranks in ascending order without repeats, got " +
                     std::to_string(tr.rank) + " after " + std::to_string(t.ranks.back().rank),
                 "rank");
    if (auto mem = item.child("memory"))
      if (auto rows = mem->elements())
        for (auto& row : *rows) {
          MemorySample s;
          read_sample(row, s, tr.memory.empty() ? 0 : tr.memory.back().t);
          tr.memory.push_back(s);
        }
    item.reject_unknown({"rank", "role", "rank_count", "memory"});
    t.ranks.push_back(std::move(tr));
  }
}

void read_span(JsonReader& item, Span& s) {
  static const auto streams = enum_names<Stream>(kStreamCount, stream_name);
  read_uint(item, "op", s.op, kU32, true);
  read_uint(item, "rank", s.rank);
  if (!item.has("stream")) item.error("expected a \"stream\" key, got none");
  read_enum(item, "stream", streams, s.stream);
  read_string(item, "name", s.name);
  read_string(item, "cat", s.category);
  read_time(item, "start_ns", s.start_ns);
  read_time(item, "dur_ns", s.dur_ns);
  read_uint(item, "step", s.step);
  read_uint(item, "micro_step", s.micro_step);
  read_uint(item, "layer", s.layer);
  read_uint(item, "bucket", s.bucket);
  read_uint(item, "comm", s.comm);
  read_uint(item, "bytes", s.bytes, UINT64_MAX);
  read_uint(item, "numel", s.numel, UINT64_MAX);
  if (auto f = item.get_number("flops", 0, std::numeric_limits<double>::max())) s.flops = *f;
  item.reject_unknown({"op", "rank", "stream", "name", "cat", "start_ns", "dur_ns", "step",
                       "micro_step", "layer", "bucket", "comm", "bytes", "numel", "flops"});
}

void read_spans(JsonReader& root, Trace& t) {
  auto r = root.child("spans");
  if (!r) return root.error("expected a \"spans\" array, got none");
  auto items = r->elements();
  if (!items) return;
  t.spans.reserve(items->size());
  for (auto& item : *items) {
    if (!item.expect_object()) continue;
    Span s;
    read_span(item, s);
    if (!t.spans.empty() && s.start_ns < t.spans.back().start_ns)
      item.error("expected spans in start-time order, got " + std::to_string(s.start_ns) +
                     " ns after " + std::to_string(t.spans.back().start_ns) + " ns",
                 "start_ns");
    t.spans.push_back(std::move(s));
  }
}

void read_comm(JsonReader& item, CommRecord& c) {
  static const auto kinds = enum_names<CollectiveKind>(kCollectiveKindCount, collective_name);
  static const auto phases = enum_names<Phase>(kPhaseCount, phase_name);
  static const auto dtypes = enum_names<DType>(kDTypeCount, dtype_name);
  read_uint(item, "op", c.op, kU32, true);
  read_uint(item, "rank", c.rank);
  if (!item.has("kind")) item.error("expected a \"kind\" key, got none");
  read_enum(item, "kind", kinds, c.kind);
  read_enum(item, "phase", phases, c.phase);
  read_uint(item, "step", c.step);
  read_uint(item, "bucket", c.bucket);
  read_uint(item, "numel", c.numel, UINT64_MAX);
  read_uint(item, "out_numel", c.out_numel, UINT64_MAX);
  read_enum(item, "dtype", dtypes, c.dtype);
  if (auto g = item.get_uint("group_size", 1, kU32)) c.group_size = static_cast<std::uint32_t>(*g);
  read_uint(item, "bytes", c.bytes, UINT64_MAX);
  read_uint(item, "bytes_sent", c.bytes_sent, UINT64_MAX);
  read_uint(item, "bytes_received", c.bytes_received, UINT64_MAX);
  read_time(item, "start_ns", c.start_ns);
  read_time(item, "dur_ns", c.dur_ns);
  const double big = std::numeric_limits<double>::max();
  if (auto v = item.get_number("algbw_gbps", 0, big)) c.algbw_gbps = *v;
  if (auto v = item.get_number("busbw_gbps", 0, big)) c.busbw_gbps = *v;
  read_string(item, "algorithm", c.algorithm);
  item.reject_unknown({"op", "rank", "kind", "phase", "step", "bucket", "numel", "out_numel",
                       "dtype", "group_size", "bytes", "bytes_sent", "bytes_received", "start_ns",
                       "dur_ns", "algbw_gbps", "busbw_gbps", "algorithm"});
}

void read_comms(JsonReader& root, Trace& t) {
  auto r = root.child("comms");
  if (!r) return root.error("expected a \"comms\" array, got none");
  auto items = r->elements();
  if (!items) return;
  for (auto& item : *items) {
    if (!item.expect_object()) continue;
    CommRecord c;
    read_comm(item, c);
    t.comms.push_back(std::move(c));
  }
}

bool traced(const Trace& t, std::uint32_t rank) {
  if (rank == kAllRanks) return true;
  auto it = std::lower_bound(t.ranks.begin(), t.ranks.end(), rank,
                             [](const TraceRank& r, std::uint32_t v) { return r.rank < v; });
  return it != t.ranks.end() && it->rank == rank;
}

// Cross-references: span and comm ranks are traced ranks; a span's comm names a record of the same
// op, rank and times.
void check_references(Diagnostics& d, const std::string& src, const Trace& t) {
  const auto list = [&] {
    std::string s;
    for (const TraceRank& r : t.ranks) s += (s.empty() ? "" : ", ") + std::to_string(r.rank);
    return s.empty() ? std::string("none") : s;
  };
  for (std::size_t i = 0; i < t.spans.size(); ++i) {
    const Span& s = t.spans[i];
    const std::string ptr = "/spans/" + std::to_string(i);
    if (!traced(t, s.rank))
      d.error(src, ptr + "/rank",
              "expected a traced rank (" + list() + "), got " + std::to_string(s.rank));
    if (s.comm == kNone) continue;
    if (s.comm >= t.comms.size()) {
      d.error(src, ptr + "/comm",
              t.comms.empty() ? "expected no comm index (the trace has no comm records), got " +
                                    std::to_string(s.comm)
                              : "expected a comm index 0.." + std::to_string(t.comms.size() - 1) +
                                    ", got " + std::to_string(s.comm));
    } else if (const CommRecord& c = t.comms[s.comm]; c.op != s.op || c.rank != s.rank) {
      d.error(src, ptr + "/comm",
              "expected comm record " + std::to_string(s.comm) + " to be op " +
                  std::to_string(s.op) + " of the same rank, got op " + std::to_string(c.op));
    }
  }
  for (std::size_t i = 0; i < t.comms.size(); ++i)
    if (!traced(t, t.comms[i].rank))
      d.error(src, "/comms/" + std::to_string(i) + "/rank",
              "expected a traced rank (" + list() + "), got " + std::to_string(t.comms[i].rank));
}

}  // namespace

Result<Trace> read_trace_json(const std::string& text, const std::string& source) {
  Diagnostics d;
  auto j = json::parse(text, source, d);
  if (!j) return d;
  JsonReader root(*j, source, "", d);
  if (!root.expect_object() || !check_header(root)) return d;
  Trace t;
  t.meta = read_meta(root);
  check_columns(root);
  read_ranks(root, t);
  read_comms(root, t);
  read_spans(root, t);
  root.reject_unknown({"format", "version", "meta", "memory_columns", "ranks", "spans", "comms"});
  if (!d.has_errors()) check_references(d, source, t);
  if (d.has_errors()) return d;
  return Result<Trace>(std::move(t), std::move(d));
}

Result<Trace> read_trace_file(const std::string& path) {
  Diagnostics d;
  std::string text;
  if (!json::read_file(path, text, d)) return d;
  return read_trace_json(text, path);
}

}  // namespace zerosim
