// Readers of the trace's repeated elements (trace_reader_items.h): spans, comm records, memory
// rows, counter samples, and the v2 peak and OOM records of a rank. Each is called once per element
// while the text streams (trace_reader.cc), with a JsonReader on that element alone.
#include "trace/trace_reader_items.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace zerosim::trace_read {
namespace {

using json::JsonReader;
constexpr std::uint64_t kU32 = std::numeric_limits<std::uint32_t>::max();
constexpr std::int64_t kI64 = std::numeric_limits<std::int64_t>::max();

using json::enum_names;

template <class E>
bool read_enum(JsonReader& r, std::string_view key, const std::vector<std::string>& names, E& out,
               std::size_t first = 0) {
  auto s = r.get_enum(key, names);
  if (s) out = static_cast<E>(first + (std::find(names.begin(), names.end(), *s) - names.begin()));
  return s.has_value();
}

template <class T>
void read_uint(JsonReader& r, std::string_view key, T& out, std::uint64_t hi = kU32,
               bool required = false) {
  if (required && !r.has(key)) r.error("expected a \"" + std::string(key) + "\" key, got none");
  if (auto v = r.get_uint(key, 0, hi)) out = static_cast<T>(*v);
}

void read_time(JsonReader& r, std::string_view key, SimTime& out, bool required = true) {
  if (required && !r.has(key)) r.error("expected a \"" + std::string(key) + "\" key, got none");
  if (auto v = r.get_int(key, 0, kI64)) out = *v;
}

void read_string(JsonReader& r, std::string_view key, std::string& out) {
  if (auto v = r.get_string(key)) out = *v;
}

const std::vector<std::string>& stream_names() {
  static const auto names = enum_names<Stream>(kStreamCount, stream_name);
  return names;
}

const std::vector<std::string>& phase_names() {
  static const auto names = enum_names<Phase>(kPhaseCount, phase_name);
  return names;
}

const std::vector<std::string>& category_names() {
  static const auto names = enum_names<BufferCategory>(kCategoryCount, category_name);
  return names;
}

// An array of `n` integers >= 0 (memory rows, breakdowns); false after reporting otherwise.
bool expect_uints(JsonReader& row, std::size_t n, const char* what) {
  const auto& v = row.value();
  if (!v.is_array() || v.size() != n) {
    row.error("expected an array of " + std::to_string(n) + " " + what + ", got " +
              json::describe(v));
    return false;
  }
  for (const auto& x : v)
    if (!x.is_number_unsigned() && !(x.is_number_integer() && x.get<std::int64_t>() >= 0)) {
      row.error("expected integers >= 0, got " + json::describe(x));
      return false;
    }
  return true;
}

// The sum of per-category bytes, or nullopt past 2^64 - 1 (a wrapped sum could equal the total).
std::optional<Bytes> category_sum(const CategoryBytes& by_category) {
  Bytes sum = 0;
  for (Bytes b : by_category)
    if (__builtin_add_overflow(sum, b, &sum)) return std::nullopt;
  return sum;
}

void read_peak(JsonReader& parent, std::string_view key, MemoryPeak& p) {
  auto r = parent.child(key);
  if (!r) return parent.error("expected a \"" + std::string(key) + "\" object, got none");
  if (!r->expect_object()) return;
  read_uint(*r, "bytes", p.bytes, UINT64_MAX, true);
  read_time(*r, "t_ns", p.t);
  if (auto c = r->child("by_category"); c && expect_uints(*c, kCategoryCount, "integers")) {
    for (std::size_t k = 0; k < kCategoryCount; ++k)
      p.by_category[k] = c->value()[k].get<std::uint64_t>();
    const std::optional<Bytes> sum = category_sum(p.by_category);
    if (sum != p.bytes)
      c->error("expected the categories to add up to bytes " + std::to_string(p.bytes) + ", got " +
               (sum ? std::to_string(*sum) : std::string("a sum beyond 2^64 - 1")));
  }
  r->reject_unknown({"bytes", "t_ns", "by_category"});
}

// Exact-type getters of the fast paths: false on anything the full reader would have to judge.
bool get_u64(const nlohmann::json& v, std::uint64_t hi, std::uint64_t& out) {
  if (!v.is_number_unsigned()) return false;
  out = v.get<std::uint64_t>();
  return out <= hi;
}
template <class T>
bool get_u(const nlohmann::json& v, T& out, std::uint64_t hi = kU32) {
  std::uint64_t x = 0;
  if (!get_u64(v, hi, x)) return false;
  out = static_cast<T>(x);
  return true;
}
bool get_time(const nlohmann::json& v, SimTime& out) {
  std::uint64_t x = 0;
  if (!get_u64(v, static_cast<std::uint64_t>(kI64), x)) return false;
  out = static_cast<SimTime>(x);
  return true;
}
bool get_str(const nlohmann::json& v, std::string& out) {
  if (!v.is_string()) return false;
  out = v.get_ref<const std::string&>();
  return true;
}
template <class E>
bool get_enum(const nlohmann::json& v, const std::vector<std::string>& names, E& out,
              std::size_t first = 0) {
  if (!v.is_string()) return false;
  const auto& s = v.get_ref<const std::string&>();
  const auto it = std::find(names.begin(), names.end(), s);
  if (it == names.end()) return false;
  out = static_cast<E>(first + static_cast<std::size_t>(it - names.begin()));
  return true;
}
bool get_double(const nlohmann::json& v, double& out) {
  if (!v.is_number()) return false;
  out = v.get<double>();
  return std::isfinite(out) && out >= 0;
}

}  // namespace

// The common case without a JsonReader per key (a trace holds ~10^6 spans): every key known and
// of the exact type the writer writes. Anything else returns false, and read_span reads the
// element again with full diagnostics.
bool read_span_fast(const nlohmann::json& v, Span& s, ItemContext& ctx) {
  if (!v.is_object()) return false;
  bool op = false, stream = false, start = false, dur = false;
  for (auto it = v.begin(); it != v.end(); ++it) {
    const std::string& k = it.key();
    const nlohmann::json& x = it.value();
    bool ok = false;
    if (k == "op")
      ok = op = get_u(x, s.op);
    else if (k == "rank")
      ok = get_u(x, s.rank);
    else if (k == "stream")
      ok = stream = get_enum(x, stream_names(), s.stream);
    else if (k == "name")
      ok = get_str(x, s.name);
    else if (k == "cat")
      ok = get_str(x, s.category);
    else if (k == "start_ns")
      ok = start = get_time(x, s.start_ns);
    else if (k == "dur_ns")
      ok = dur = get_time(x, s.dur_ns);
    else if (k == "step")
      ok = get_u(x, s.step);
    else if (k == "micro_step")
      ok = get_u(x, s.micro_step);
    else if (k == "layer")
      ok = get_u(x, s.layer);
    else if (k == "bucket")
      ok = get_u(x, s.bucket);
    else if (k == "comm")
      ok = get_u(x, s.comm);
    else if (k == "bytes")
      ok = get_u(x, s.bytes, UINT64_MAX);
    else if (k == "numel")
      ok = get_u(x, s.numel, UINT64_MAX);
    else if (k == "flops")
      ok = get_double(x, s.flops);
    else if (k == "phase")
      ok = get_enum(x, phase_names(), s.phase);
    else if (k == "issue_ns")
      ok = get_time(x, s.issue_ns);
    else if (k == "wait_ns")
      ok = get_time(x, s.wait_ns);
    else if (k == "wait_stream") {
      Stream w = Stream::Compute;
      ok = get_enum(x, stream_names(), w);
      s.wait_stream = w;
    }
    if (!ok) return false;
    if (ctx.v2_pointer.empty() &&
        (k == "phase" || k == "issue_ns" || k == "wait_ns" || k == "wait_stream"))
      return false;  // the full reader notes the pointer
  }
  return op && stream && start && dur && (!s.wait_stream || s.wait_ns > 0);
}

bool read_comm_fast(const nlohmann::json& v, CommRecord& c, ItemContext& ctx) {
  static const auto kinds = enum_names<CollectiveKind>(kCollectiveKindCount, collective_name);
  static const auto dtypes = enum_names<DType>(kDTypeCount, dtype_name);
  static const auto reduce_ops =
      enum_names<ReduceOp>(static_cast<std::size_t>(ReduceOp::Max) + 1, reduce_op_name, 1);
  if (!v.is_object()) return false;
  bool op = false, kind = false, start = false, dur = false;
  for (auto it = v.begin(); it != v.end(); ++it) {
    const std::string& k = it.key();
    const nlohmann::json& x = it.value();
    bool ok = false;
    if (k == "op")
      ok = op = get_u(x, c.op);
    else if (k == "rank")
      ok = get_u(x, c.rank);
    else if (k == "kind")
      ok = kind = get_enum(x, kinds, c.kind);
    else if (k == "phase")
      ok = get_enum(x, phase_names(), c.phase);
    else if (k == "step")
      ok = get_u(x, c.step);
    else if (k == "bucket")
      ok = get_u(x, c.bucket);
    else if (k == "numel")
      ok = get_u(x, c.numel, UINT64_MAX);
    else if (k == "out_numel")
      ok = get_u(x, c.out_numel, UINT64_MAX);
    else if (k == "dtype")
      ok = get_enum(x, dtypes, c.dtype);
    else if (k == "group_size")
      ok = get_u(x, c.group_size) && c.group_size >= 1;
    else if (k == "bytes")
      ok = get_u(x, c.bytes, UINT64_MAX);
    else if (k == "bytes_sent")
      ok = get_u(x, c.bytes_sent, UINT64_MAX);
    else if (k == "bytes_received")
      ok = get_u(x, c.bytes_received, UINT64_MAX);
    else if (k == "start_ns")
      ok = start = get_time(x, c.start_ns);
    else if (k == "dur_ns")
      ok = dur = get_time(x, c.dur_ns);
    else if (k == "algbw_gbps")
      ok = get_double(x, c.algbw_gbps);
    else if (k == "busbw_gbps")
      ok = get_double(x, c.busbw_gbps);
    else if (k == "algorithm")
      ok = get_str(x, c.algorithm);
    else if (k == "micro_step")
      ok = get_u(x, c.micro_step);
    else if (k == "reduce_op")
      ok = get_enum(x, reduce_ops, c.reduce_op, 1);
    else if (k == "root")
      ok = get_u(x, c.root, kU32 - 1);
    if (!ok) return false;
    if (ctx.v2_pointer.empty() && (k == "micro_step" || k == "reduce_op" || k == "root"))
      return false;
  }
  return op && kind && start && dur;
}

void read_span(JsonReader& item, Span& s, ItemContext& ctx) {
  read_uint(item, "op", s.op, kU32, true);
  read_uint(item, "rank", s.rank);
  if (!item.has("stream")) item.error("expected a \"stream\" key, got none");
  read_enum(item, "stream", stream_names(), s.stream);
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
  for (const char* k : {"phase", "issue_ns", "wait_ns", "wait_stream"}) ctx.note_v2(item, k);
  read_enum(item, "phase", phase_names(), s.phase);
  read_time(item, "issue_ns", s.issue_ns, false);
  read_time(item, "wait_ns", s.wait_ns, false);
  Stream w = Stream::Compute;
  if (read_enum(item, "wait_stream", stream_names(), w)) {
    s.wait_stream = w;
    if (s.wait_ns == 0)
      item.error("expected \"wait_stream\" only with \"wait_ns\" > 0, got no wait", "wait_stream");
  }
  item.reject_unknown({"op", "rank", "stream", "name", "cat", "start_ns", "dur_ns", "step",
                       "micro_step", "layer", "bucket", "comm", "bytes", "numel", "flops", "phase",
                       "issue_ns", "wait_ns", "wait_stream"});
}

void read_comm(JsonReader& item, CommRecord& c, ItemContext& ctx) {
  static const auto kinds = enum_names<CollectiveKind>(kCollectiveKindCount, collective_name);
  static const auto dtypes = enum_names<DType>(kDTypeCount, dtype_name);
  // ReduceOp::None is written as no key.
  static const auto reduce_ops =
      enum_names<ReduceOp>(static_cast<std::size_t>(ReduceOp::Max) + 1, reduce_op_name, 1);
  read_uint(item, "op", c.op, kU32, true);
  read_uint(item, "rank", c.rank);
  if (!item.has("kind")) item.error("expected a \"kind\" key, got none");
  read_enum(item, "kind", kinds, c.kind);
  read_enum(item, "phase", phase_names(), c.phase);
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
  for (const char* k : {"micro_step", "reduce_op", "root"}) ctx.note_v2(item, k);
  read_uint(item, "micro_step", c.micro_step);
  read_enum(item, "reduce_op", reduce_ops, c.reduce_op, 1);
  if (auto r = item.get_uint("root", 0, kU32 - 1)) c.root = static_cast<std::uint32_t>(*r);
  item.reject_unknown({"op",         "rank",       "kind",           "phase",      "step",
                       "bucket",     "numel",      "out_numel",      "dtype",      "group_size",
                       "bytes",      "bytes_sent", "bytes_received", "start_ns",   "dur_ns",
                       "algbw_gbps", "busbw_gbps", "algorithm",      "micro_step", "reduce_op",
                       "root"});
}

void read_sample(JsonReader& row, MemorySample& s, SimTime prev_t) {
  if (!expect_uints(row, 2 + kCategoryCount, "integers")) return;
  const auto& v = row.value();
  s.t = static_cast<SimTime>(std::min<std::uint64_t>(v[0].get<std::uint64_t>(), kI64));
  s.total = v[1].get<std::uint64_t>();
  for (std::size_t k = 0; k < kCategoryCount; ++k) s.by_category[k] = v[2 + k].get<std::uint64_t>();
  const std::optional<Bytes> sum = category_sum(s.by_category);
  if (s.t < prev_t)
    row.error("expected memory samples in time order, got t = " + std::to_string(s.t) +
              " ns after " + std::to_string(prev_t) + " ns");
  if (sum != s.total)
    row.error("expected the categories to add up to the total " + std::to_string(s.total) +
              ", got " + (sum ? std::to_string(*sum) : std::string("a sum beyond 2^64 - 1")));
}

void read_counter_sample(JsonReader& row, CounterSample& s, SimTime prev_t) {
  const auto& v = row.value();
  if (!v.is_array() || v.size() != 2 || !v[0].is_number_integer() || v[0].get<std::int64_t>() < 0 ||
      !v[1].is_number_integer() ||
      (v[1].is_number_unsigned() && v[1].get<std::uint64_t>() > static_cast<std::uint64_t>(kI64)))
    return row.error("expected [t_ns, value] with integers t_ns >= 0 and value in int64, got " +
                     (v.is_array() ? "[" + (v.empty() ? "" : json::describe(v[0])) +
                                         (v.size() > 1 ? ", " + json::describe(v[1]) : "") + "]"
                                   : json::describe(v)));
  s.t = v[0].get<std::int64_t>();
  s.value = v[1].get<std::int64_t>();
  if (s.t < prev_t)
    row.error("expected counter samples in time order, got t = " + std::to_string(s.t) +
              " ns after " + std::to_string(prev_t) + " ns");
}

void read_peaks(JsonReader& r, RankPeaks& p) {
  if (!r.expect_object()) return;
  read_peak(r, "device", p.device);
  read_peak(r, "steady", p.steady);
  read_uint(r, "host_bytes", p.host_bytes, UINT64_MAX);
  if (p.steady.bytes > p.device.bytes)
    r.error("expected a steady peak at most the device peak " + std::to_string(p.device.bytes) +
                ", got " + std::to_string(p.steady.bytes),
            "steady");
  r.reject_unknown({"device", "steady", "host_bytes"});
}

void read_oom(JsonReader& r, OomEvent& o) {
  if (!r.expect_object()) return;
  read_time(r, "t_ns", o.t);
  read_uint(r, "role", o.role, kU32, true);
  read_string(r, "buffer", o.buffer_name);
  read_enum(r, "category", category_names(), o.category);
  read_uint(r, "bytes", o.bytes, UINT64_MAX);
  read_uint(r, "live_bytes", o.live_bytes, UINT64_MAX, true);
  read_uint(r, "capacity", o.capacity, UINT64_MAX, true);
  if (o.live_bytes <= o.capacity)
    r.error("expected live bytes above the capacity " + std::to_string(o.capacity) + ", got " +
                std::to_string(o.live_bytes),
            "live_bytes");
  r.reject_unknown({"t_ns", "role", "buffer", "category", "bytes", "live_bytes", "capacity"});
}

}  // namespace zerosim::trace_read
