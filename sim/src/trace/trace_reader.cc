// Reader of the zerosim trace JSON (trace.h), versions 1 and 2. Layers as style.md §4.4: syntax
// (line and column of a truncated or malformed file), header (format and version; a wrong one stops
// reading), schema (types, enum names, unknown keys; a version-1 file may not use version-2 keys),
// then references and order: span, comm and counter ranks must be traced ranks, span/comm
// cross-references must agree, memory rows and counter samples must be in time order. Every
// problem is a one-line Diagnostic "file: /spans/12/comm: expected a comm index 0..3, got 9".
//
// The text is streamed (json::parse_streaming): spans, comm records, memory rows and counter
// samples are read one element at a time as the parser meets them and never form a DOM, so time
// and memory are linear and the memory is mostly the Trace itself (bench/trace_read_bench.cc).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "base/json_reader.h"
#include "trace/trace_reader_items.h"
#include "zerosim/trace.h"

namespace zerosim {
namespace {

using json::JsonReader;
using trace_read::ItemContext;
constexpr std::uint64_t kU32 = std::numeric_limits<std::uint32_t>::max();

template <class T>
void read_uint(JsonReader& r, std::string_view key, T& out, std::uint64_t hi = kU32,
               bool required = false) {
  if (required && !r.has(key)) r.error("expected a \"" + std::string(key) + "\" key, got none");
  if (auto v = r.get_uint(key, 0, hi)) out = static_cast<T>(*v);
}

// The meta strings are names shown in report lines: no control characters (get_name).
void read_string(JsonReader& r, std::string_view key, std::string& out) {
  if (auto v = r.get_name(key)) out = *v;
}

// The version (1 or 2), or 0 after reporting a wrong format or version.
int check_header(JsonReader& root) {
  const auto fail_key = [&](const char* key, const std::string& want) {
    root.error("expected \"" + std::string(key) + "\": " + want + ", got no \"" + key + "\" key");
  };
  if (!root.has("format")) return fail_key("format", quote(kTraceFormat)), 0;
  auto f = root.child("format");
  if (!f->value().is_string() || f->value().get<std::string>() != kTraceFormat)
    return f->error("expected " + quote(kTraceFormat) + ", got " + json::describe(f->value())), 0;
  const std::string want = "1 or " + std::to_string(kTraceVersion);
  if (!root.has("version")) return fail_key("version", want), 0;
  auto v = root.child("version");
  if (!v->value().is_number_integer() || v->value().get<std::int64_t>() < 1 ||
      v->value().get<std::int64_t>() > kTraceVersion)
    return v->error("expected version " + want + ", got " + json::describe(v->value())), 0;
  return static_cast<int>(v->value().get<std::int64_t>());
}

bool valid_digest(const std::string& d) {
  for (const std::string head : {kScheduleDigestScheme, kScheduleDigestSchemeV1})
    if (d.size() == head.size() + 16 && d.compare(0, head.size(), head) == 0)
      return std::all_of(d.begin() + static_cast<std::ptrdiff_t>(head.size()), d.end(),
                         [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
  return false;
}

void read_meta_v2(JsonReader& r, TraceMeta& m, int version) {
  const std::vector<std::string> v2 = {"schedule_digest", "clock",        "host",
                                       "driver_version",  "cuda_version", "nccl_version",
                                       "warmup_steps",    "timed_steps"};
  if (version < 2) {
    for (const std::string& k : v2)
      if (r.has(k)) r.error("expected no version-2 key in a version-1 trace, got " + quote(k), k);
    m.clock = "simulated";
    m.timed_steps = m.steps;
    return;
  }
  if (auto d = r.get_string("schedule_digest")) {
    if (!d->empty() && !valid_digest(*d))
      r.error("expected \"" + std::string(kScheduleDigestScheme) + "\" (or \"" +
                  kScheduleDigestSchemeV1 + "\") and 16 lowercase hex digits, got " + quote(*d),
              "schedule_digest");
    else
      m.schedule_digest = *d;
  }
  if (auto c = r.get_enum("clock",
                          std::vector<std::string>(std::begin(kClockNames), std::end(kClockNames))))
    m.clock = *c;
  read_string(r, "host", m.host);
  read_string(r, "driver_version", m.driver_version);
  read_string(r, "cuda_version", m.cuda_version);
  read_string(r, "nccl_version", m.nccl_version);
  read_uint(r, "warmup_steps", m.warmup_steps);
  m.timed_steps = m.steps;
  if (auto v = r.get_uint("timed_steps", 1, kU32)) m.timed_steps = static_cast<std::uint32_t>(*v);
}

TraceMeta read_meta(JsonReader& root, int version) {
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
  // 0 ranks is no run; it also wrapped the rank range every record is checked against. Above
  // kMaxTracedWorld: check sized its per-rank sequences by it (200000000: 7.6 GB).
  if (auto v = r->get_uint("world", 1, kMaxTracedWorld))
    m.world = static_cast<std::uint32_t>(*v);
  else if (r->has("world"))
    m.world = 0;  // refused: the ranks are not checked against it
  read_uint(*r, "nodes", m.nodes);
  read_uint(*r, "gpus_per_node", m.gpus_per_node);
  read_uint(*r, "steps", m.steps);
  read_uint(*r, "grad_accum", m.grad_accum);
  read_uint(*r, "device_capacity", m.device_capacity, UINT64_MAX);
  if (auto notes = r->child("notes"))
    if (auto items = notes->elements())
      for (auto& n : *items)
        if (auto s = n.as_string()) m.notes.push_back(*s);
  read_meta_v2(*r, m, version);
  r->reject_unknown({"backend",
                     "zerosim_version",
                     "deepspeed_version",
                     "mode",
                     "model",
                     "optimizer",
                     "gpu",
                     "stage",
                     "world",
                     "nodes",
                     "gpus_per_node",
                     "steps",
                     "grad_accum",
                     "device_capacity",
                     "notes",
                     "schedule_digest",
                     "clock",
                     "host",
                     "driver_version",
                     "cuda_version",
                     "nccl_version",
                     "warmup_steps",
                     "timed_steps"});
  return m;
}

void check_columns(JsonReader& root) {
  std::vector<std::string> want = {"t_ns", "total"};
  for (BufferCategory c : kAllCategories) want.emplace_back(category_name(c));
  auto c = root.child("memory_columns");
  if (!c) return;  // optional: the columns are fixed by the version
  if (!c->value().is_array() || c->value().get<std::vector<nlohmann::json>>() !=
                                    std::vector<nlohmann::json>(want.begin(), want.end()))
    c->error("expected the columns [\"t_ns\", \"total\", \"param16\", ...], got " +
             json::describe(c->value()));
}

// The rows streamed for "/ranks/N/memory" or "/counters/N/samples", by N. Sparse: N is read from
// the pointer before the parent is known to be an array ("ranks": {"4000000000": {"memory": ...}}
// has the same pointer, and read_ranks then refuses the object), so rows sized by N allocated
// 100 GB for one row (bad_alloc; found by a hostile-input pass).
template <class T>
class RowsByIndex {
 public:
  std::vector<T>& at(std::size_t i) {
    if (i != last_ || !last_rows_) {
      last_ = i;
      last_rows_ = &rows_[i];
    }
    return *last_rows_;
  }
  std::vector<T> take(std::size_t i) {
    auto it = rows_.find(i);
    return it == rows_.end() ? std::vector<T>{} : std::move(it->second);
  }

 private:
  std::map<std::size_t, std::vector<T>> rows_;
  std::size_t last_ = 0;                 // the index of the previous row: rows come in runs
  std::vector<T>* last_rows_ = nullptr;  // map nodes do not move
};

// What the streamed elements became, filled while the text is parsed.
struct Streamed {
  RowsByIndex<MemorySample> memory;            // by index in "ranks"
  RowsByIndex<CounterSample> counter_samples;  // by index in "counters"
  Diagnostics diags;  // kept apart: a wrong header or a syntax error discards them
  ItemContext ctx;
};

// "/ranks/12/memory" -> 12 (prefix "/ranks/", suffix "/memory"); npos when it does not match.
std::size_t index_between(const std::string& p, std::string_view prefix, std::string_view suffix) {
  if (p.size() <= prefix.size() + suffix.size() || p.compare(0, prefix.size(), prefix) != 0 ||
      p.compare(p.size() - suffix.size(), suffix.size(), suffix) != 0)
    return std::string::npos;
  std::size_t v = 0;
  for (std::size_t i = prefix.size(); i < p.size() - suffix.size(); ++i) {
    if (p[i] < '0' || p[i] > '9') return std::string::npos;
    v = v * 10 + static_cast<std::size_t>(p[i] - '0');
  }
  return v;
}

// A span or comm must end inside int64 ns: every consumer computes its end (summaries, trace
// comparison) or its middle (the Chrome trace's flows) from start_ns and dur_ns.
template <class Item>
void check_end(SimTime start, SimTime dur, const Item& item) {
  if (start >= 0 && dur >= 0 && dur > std::numeric_limits<SimTime>::max() - start)
    item().error(
        "expected start_ns + dur_ns <= " + std::to_string(std::numeric_limits<SimTime>::max()) +
            ", got " + std::to_string(start) + " + " + std::to_string(dur),
        "dur_ns");
}

void on_element(const std::string& source, const std::string& array, std::size_t i,
                nlohmann::json& value, Trace& t, Streamed& st) {
  const auto item = [&] {
    return JsonReader(value, source, array + "/" + std::to_string(i), st.diags);
  };
  if (array == "/spans") {
    Span& s = t.spans.emplace_back();
    if (!trace_read::read_span_fast(value, s, st.ctx)) {
      s = Span{};
      JsonReader r = item();
      if (!r.expect_object()) return t.spans.pop_back();
      trace_read::read_span(r, s, st.ctx);
    }
    check_end(s.start_ns, s.dur_ns, item);
    if (t.spans.size() > 1 && s.start_ns < t.spans[t.spans.size() - 2].start_ns)
      item().error("expected spans in start-time order, got " + std::to_string(s.start_ns) +
                       " ns after " + std::to_string(t.spans[t.spans.size() - 2].start_ns) + " ns",
                   "start_ns");
  } else if (array == "/comms") {
    CommRecord& c = t.comms.emplace_back();
    if (!trace_read::read_comm_fast(value, c, st.ctx)) {
      c = CommRecord{};
      JsonReader r = item();
      if (!r.expect_object()) return t.comms.pop_back();
      trace_read::read_comm(r, c, st.ctx);
    }
    check_end(c.start_ns, c.dur_ns, item);
  } else if (const std::size_t r = index_between(array, "/ranks/", "/memory");
             r != std::string::npos) {
    std::vector<MemorySample>& m = st.memory.at(r);
    const SimTime prev = m.empty() ? 0 : m.back().t;
    JsonReader row = item();
    trace_read::read_sample(row, m.emplace_back(), prev);
  } else if (const std::size_t c = index_between(array, "/counters/", "/samples");
             c != std::string::npos) {
    std::vector<CounterSample>& m = st.counter_samples.at(c);
    const SimTime prev = m.empty() ? 0 : m.back().t;
    JsonReader row = item();
    trace_read::read_counter_sample(row, m.emplace_back(), prev);
  }
}

bool streamed_array(const std::string& p) {
  return p == "/spans" || p == "/comms" ||
         index_between(p, "/ranks/", "/memory") != std::string::npos ||
         index_between(p, "/counters/", "/samples") != std::string::npos;
}

void read_ranks(JsonReader& root, Trace& t, Streamed& st, int version) {
  auto r = root.child("ranks");
  if (!r) return root.error("expected a \"ranks\" array, got none");
  auto items = r->elements();
  if (!items) return;
  for (std::size_t i = 0; i < items->size(); ++i) {
    JsonReader& item = (*items)[i];
    if (!item.expect_object()) continue;
    TraceRank tr;
    read_uint(item, "rank", tr.rank, kU32, true);
    read_uint(item, "role", tr.role, kU32, true);
    if (auto n = item.get_uint("rank_count", 1, UINT64_MAX)) tr.rank_count = *n;
    // A rank past the world was reported only by the next rank, as out of order ("got 2 after
    // 99"; found by a hostile-input pass).
    if (t.meta.world > 0 && tr.rank >= t.meta.world) {
      item.error("expected a rank 0.." + std::to_string(t.meta.world - 1) + " (meta/world " +
                     std::to_string(t.meta.world) + "), got " + std::to_string(tr.rank),
                 "rank");
      continue;
    }
    if (!t.ranks.empty() && tr.rank <= t.ranks.back().rank)
      item.error("expected ranks in ascending order without repeats, got " +
                     std::to_string(tr.rank) + " after " + std::to_string(t.ranks.back().rank),
                 "rank");
    if (auto mem = item.child("memory")) {
      if (mem->elements()) tr.memory = st.memory.take(i);
    }
    for (const char* k : {"peaks", "oom"})
      if (version < 2 && item.has(k))
        item.error("expected no version-2 key in a version-1 trace, got " + quote(k), k);
    if (auto p = item.child("peaks"); p && version >= 2)
      trace_read::read_peaks(*p, tr.peaks.emplace());
    if (auto o = item.child("oom"); o && version >= 2) trace_read::read_oom(*o, tr.oom.emplace());
    item.reject_unknown({"rank", "role", "rank_count", "memory", "peaks", "oom"});
    t.ranks.push_back(std::move(tr));
  }
}

bool valid_counter_name(const std::string& n) {
  return !n.empty() && std::all_of(n.begin(), n.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
  });
}

void read_counters(JsonReader& root, Trace& t, Streamed& st, int version) {
  auto r = root.child("counters");
  if (!r) return;  // optional
  if (version < 2)
    return root.error("expected no version-2 key in a version-1 trace, got \"counters\"",
                      "counters");
  auto items = r->elements();
  if (!items) return;
  for (std::size_t i = 0; i < items->size(); ++i) {
    JsonReader& item = (*items)[i];
    if (!item.expect_object()) continue;
    TraceCounter c;
    read_uint(item, "rank", c.rank, kU32, true);
    if (!item.has("name")) item.error("expected a \"name\" key, got none");
    if (auto n = item.get_string("name")) {
      if (!valid_counter_name(*n))
        item.error("expected a name of [a-z0-9_.], got " + quote(*n), "name");
      c.name = *n;
    }
    for (const TraceCounter& o : t.counters)
      if (o.rank == c.rank && o.name == c.name && !c.name.empty())
        item.error("expected one counter " + quote(c.name) + " per rank, got a second one", "name");
    if (!item.has("samples")) item.error("expected a \"samples\" array, got none");
    if (auto s = item.child("samples"))
      if (s->elements()) c.samples = st.counter_samples.take(i);
    item.reject_unknown({"rank", "name", "samples"});
    t.counters.push_back(std::move(c));
  }
}

bool traced(const Trace& t, std::uint32_t rank) {
  if (rank == kAllRanks) return true;
  auto it = std::lower_bound(t.ranks.begin(), t.ranks.end(), rank,
                             [](const TraceRank& r, std::uint32_t v) { return r.rank < v; });
  return it != t.ranks.end() && it->rank == rank;
}

// Cross-references: span, comm and counter ranks are traced ranks; a span's comm names a record of
// the same op, rank and times; a comm's root is a rank of the world.
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
  for (std::size_t i = 0; i < t.comms.size(); ++i) {
    const CommRecord& c = t.comms[i];
    if (!traced(t, c.rank))
      d.error(src, "/comms/" + std::to_string(i) + "/rank",
              "expected a traced rank (" + list() + "), got " + std::to_string(c.rank));
    if (c.root != kNone && c.root >= t.meta.world)
      d.error(src, "/comms/" + std::to_string(i) + "/root",
              "expected a rank 0.." + std::to_string(t.meta.world - 1) + " (meta/world " +
                  std::to_string(t.meta.world) + "), got " + std::to_string(c.root));
  }
  for (std::size_t i = 0; i < t.counters.size(); ++i)
    if (!traced(t, t.counters[i].rank))
      d.error(src, "/counters/" + std::to_string(i) + "/rank",
              "expected a traced rank (" + list() + "), got " + std::to_string(t.counters[i].rank));
}

}  // namespace

Result<Trace> read_trace_json(const std::string& text, const std::string& source) {
  Diagnostics d;
  Trace t;
  Streamed st;
  auto j = json::parse_streaming(text, source, d, streamed_array,
                                 [&](const std::string& array, std::size_t i, nlohmann::json& v) {
                                   on_element(source, array, i, v, t, st);
                                 });
  if (!j) return d;
  JsonReader root(*j, source, "", d);
  if (!root.expect_object()) return d;
  const int version = check_header(root);
  if (version == 0) return d;
  d.append(st.diags);
  if (version < 2 && !st.ctx.v2_pointer.empty()) {
    const std::string& p = st.ctx.v2_pointer;
    d.error(
        source, p,
        "expected no version-2 key in a version-1 trace, got " + quote(p.substr(p.rfind('/') + 1)));
  }
  t.meta = read_meta(root, version);
  check_columns(root);
  read_ranks(root, t, st, version);
  read_counters(root, t, st, version);
  for (const char* k : {"spans", "comms"}) {
    auto a = root.child(k);
    if (!a)
      root.error("expected a \"" + std::string(k) + "\" array, got none");
    else if (!a->value().is_array())
      a->error("expected an array, got " + json::describe(a->value()));
  }
  root.reject_unknown(
      {"format", "version", "meta", "memory_columns", "ranks", "spans", "comms", "counters"});
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
