// Chrome Trace Event JSON for Perfetto and chrome://tracing (trace.h; ecosystem.md §3, whose rules
// and pitfalls this follows): the object form with "traceEvents" first and run metadata under
// "otherData" (an older Perfetto tokenizer stops at the first unknown top-level key); ts/dur in µs
// with exactly 3 decimals printed from integer ns (no float rounding); integer pid = rank and tid =
// stream + 1, named with M events and ordered with sort indices; ops as X events; device memory as
// C counters with ONE series per event name ("memory.total", "memory.param16", ... each with
// args {"bytes": N}, so the legacy viewer does not stack them), one value per timestamp (the last),
// written only when it changes; the trace's named counters (Trace::counters: allocator and
// device-wide statistics) the same way, one series per counter under its own name with args
// {"bytes": N} for a name ending in "_bytes" and {"value": N} otherwise; a span's host issue time
// (Span::issue_ns, when recorded) as its arg "issue_ts" in µs; one s/f flow per bucket, from the
// middle of its last CopyToBucket to the middle of its first collective, f bound to the enclosing
// slice (bp "e"); a rank's OOM as a process-scoped instant event (ph "i", s "p") with what was
// being allocated. Never displayTimeUnit (some Perfetto versions then reinterpret ts).
#include <array>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "trace/json_text.h"
#include "zerosim/trace.h"

namespace zerosim {
namespace {

using trace_text::num;
using trace_text::str;

int tid_of(Stream s) { return static_cast<int>(s) + 1; }

// Where a flow arrow meets its slice: the middle, start + dur / 2 computed without overflow for
// any int64 start and dur (read_trace_json refuses spans ending past INT64_MAX, but a Trace built
// in code need not come from it); a span whose middle is not an int64 gets its start, which is
// still inside the slice the flow binds to.
SimTime middle(const Span& s) {
  SimTime m = 0;
  if (__builtin_add_overflow(s.start_ns, s.dur_ns / 2, &m)) return s.start_ns;
  return m;
}

class ChromeWriter {
 public:
  ChromeWriter(const Trace& t, std::ostream& out) : t_(t), out_(out) {}

  void write() {
    out_ << "{\"traceEvents\": [";
    for (const TraceRank& r : t_.ranks) write_rank(r);
    out_ << "\n],\n\"otherData\": ";
    write_other();
    out_ << "}\n";
  }

 private:
  void begin_event() {
    out_ << (first_ ? "\n" : ",\n");
    first_ = false;
  }

  void write_rank(const TraceRank& r) {
    begin_event();
    out_ << "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": " << r.rank
         << ", \"args\": {\"name\": "
         << str("rank " + std::to_string(r.rank) + " (role " + std::to_string(r.role) + ", " +
                std::to_string(r.rank_count) + (r.rank_count == 1 ? " rank)" : " ranks)"))
         << "}}";
    begin_event();
    out_ << "{\"name\": \"process_sort_index\", \"ph\": \"M\", \"pid\": " << r.rank
         << ", \"args\": {\"sort_index\": " << r.rank << "}}";
    std::vector<const Span*> spans;
    std::array<bool, kStreamCount> used{};
    for (const Span& s : t_.spans)
      if (s.rank == kAllRanks || s.rank == r.rank) {
        spans.push_back(&s);
        used[static_cast<std::size_t>(s.stream)] = true;
      }
    for (std::size_t k = 0; k < kStreamCount; ++k)
      if (used[k]) write_thread(r.rank, static_cast<Stream>(k));
    for (const Span* s : spans) write_span(r.rank, *s);
    write_counters(r);
    for (const TraceCounter& c : t_.counters)
      if (c.rank == kAllRanks || c.rank == r.rank) write_named_counter(r.rank, c);
    write_flows(r.rank, spans);
    if (r.oom) write_oom(r.rank, *r.oom);
  }

  // The first allocation above the device capacity, as a process-scoped instant ("s": "p":
  // Perfetto draws it across the rank's tracks) naming what was being allocated.
  void write_oom(std::uint32_t pid, const OomEvent& o) {
    begin_event();
    out_ << "{\"name\": " << str("OOM: " + o.buffer_name)
         << ", \"cat\": \"oom\", \"ph\": \"i\", \"s\": \"p\", \"ts\": " << format_us(o.t)
         << ", \"pid\": " << pid << ", \"args\": {\"buffer\": " << str(o.buffer_name)
         << ", \"category\": " << str(category_name(o.category)) << ", \"bytes\": " << o.bytes
         << ", \"live_bytes\": " << o.live_bytes << ", \"capacity\": " << o.capacity << "}}";
  }

  void write_thread(std::uint32_t pid, Stream s) {
    begin_event();
    out_ << "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": " << pid
         << ", \"tid\": " << tid_of(s) << ", \"args\": {\"name\": " << str(stream_name(s)) << "}}";
    begin_event();
    out_ << "{\"name\": \"thread_sort_index\", \"ph\": \"M\", \"pid\": " << pid
         << ", \"tid\": " << tid_of(s) << ", \"args\": {\"sort_index\": " << tid_of(s) << "}}";
  }

  void write_span(std::uint32_t pid, const Span& s) {
    begin_event();
    out_ << "{\"name\": " << str(s.name) << ", \"cat\": " << str(s.category)
         << ", \"ph\": \"X\", \"ts\": " << format_us(s.start_ns)
         << ", \"dur\": " << format_us(s.dur_ns) << ", \"pid\": " << pid
         << ", \"tid\": " << tid_of(s.stream) << ", \"args\": {\"op\": " << s.op
         << ", \"step\": " << s.step;
    if (s.issue_ns != kNoTime) out_ << ", \"issue_ts\": " << format_us(s.issue_ns);
    if (s.layer != kNone) out_ << ", \"layer\": " << s.layer;
    if (s.bucket != kNone) out_ << ", \"bucket\": " << s.bucket;
    if (s.bytes != 0) out_ << ", \"bytes\": " << s.bytes;
    if (s.numel != 0) out_ << ", \"numel\": " << s.numel;
    if (s.flops != 0) out_ << ", \"flops\": " << num(s.flops);
    if (s.comm != kNone && s.comm < t_.comms.size()) {
      const CommRecord& c = t_.comms[s.comm];
      out_ << ", \"collective\": " << str(collective_name(c.kind))
           << ", \"dtype\": " << str(dtype_name(c.dtype)) << ", \"group_size\": " << c.group_size
           << ", \"bytes_sent\": " << c.bytes_sent << ", \"algbw_gbps\": " << num(c.algbw_gbps)
           << ", \"busbw_gbps\": " << num(c.busbw_gbps) << ", \"algorithm\": " << str(c.algorithm);
    }
    out_ << "}}";
  }

  void counter(std::uint32_t pid, const std::string& name, SimTime t, Bytes v) {
    begin_event();
    out_ << "{\"name\": " << str(name) << ", \"ph\": \"C\", \"ts\": " << format_us(t)
         << ", \"pid\": " << pid << ", \"args\": {\"bytes\": " << v << "}}";
  }

  // One series per event name; per timestamp only the last sample; only changes are written.
  void write_counters(const TraceRank& r) {
    std::array<bool, kCategoryCount> ever{};
    for (const MemorySample& s : r.memory)
      for (std::size_t k = 0; k < kCategoryCount; ++k) ever[k] = ever[k] || s.by_category[k] != 0;
    std::array<std::optional<Bytes>, kCategoryCount + 1> last{};
    for (std::size_t i = 0; i < r.memory.size(); ++i) {
      const MemorySample& s = r.memory[i];
      if (i + 1 < r.memory.size() && r.memory[i + 1].t == s.t) continue;
      if (last[0] != s.total) counter(r.rank, "memory.total", s.t, s.total);
      last[0] = s.total;
      for (std::size_t k = 0; k < kCategoryCount; ++k) {
        if (!ever[k] || last[k + 1] == s.by_category[k]) continue;
        counter(r.rank, "memory." + std::string(category_name(kAllCategories[k])), s.t,
                s.by_category[k]);
        last[k + 1] = s.by_category[k];
      }
    }
  }

  // A named counter: the same rules as the memory series (the last value per timestamp, changes
  // only), its unit in the arg's key.
  void write_named_counter(std::uint32_t pid, const TraceCounter& c) {
    const bool bytes = c.name.size() >= 6 && c.name.compare(c.name.size() - 6, 6, "_bytes") == 0;
    const std::string name = str(c.name);
    const char* key = bytes ? "bytes" : "value";
    std::optional<std::int64_t> last;
    for (std::size_t i = 0; i < c.samples.size(); ++i) {
      const CounterSample& s = c.samples[i];
      if (i + 1 < c.samples.size() && c.samples[i + 1].t == s.t) continue;
      if (last == s.value) continue;
      last = s.value;
      begin_event();
      out_ << "{\"name\": " << name << ", \"ph\": \"C\", \"ts\": " << format_us(s.t)
           << ", \"pid\": " << pid << ", \"args\": {\"" << key << "\": " << s.value << "}}";
    }
  }

  void write_flows(std::uint32_t pid, const std::vector<const Span*>& spans) {
    std::map<std::uint32_t, std::pair<const Span*, const Span*>>
        buckets;  // last copy, first collective
    for (const Span* s : spans) {
      if (s->bucket == kNone) continue;
      auto& [copy, coll] = buckets[s->bucket];
      if (s->category == "copy_to_bucket" && (!copy || s->start_ns >= copy->start_ns)) copy = s;
      if (s->category == "collective" && (!coll || s->start_ns < coll->start_ns)) coll = s;
    }
    for (const auto& [bucket, ends] : buckets) {
      if (!ends.first || !ends.second) continue;
      ++flow_id_;
      const std::string name = str("bucket " + std::to_string(bucket));
      begin_event();
      out_ << "{\"name\": " << name << ", \"cat\": \"bucket\", \"ph\": \"s\", \"id\": " << flow_id_
           << ", \"ts\": " << format_us(middle(*ends.first)) << ", \"pid\": " << pid
           << ", \"tid\": " << tid_of(ends.first->stream) << "}";
      begin_event();
      out_ << "{\"name\": " << name
           << ", \"cat\": \"bucket\", \"ph\": \"f\", \"bp\": \"e\", \"id\": " << flow_id_
           << ", \"ts\": " << format_us(middle(*ends.second)) << ", \"pid\": " << pid
           << ", \"tid\": " << tid_of(ends.second->stream) << "}";
    }
  }

  void write_other() {
    const TraceMeta& m = t_.meta;
    out_ << "{\"format\": \"zerosim-chrome-trace\", \"backend\": " << str(m.backend)
         << ", \"zerosim_version\": " << str(m.zerosim_version)
         << ", \"deepspeed_version\": " << str(m.deepspeed_version) << ", \"mode\": " << str(m.mode)
         << ", \"model\": " << str(m.model) << ", \"optimizer\": " << str(m.optimizer)
         << ", \"gpu\": " << str(m.gpu) << ", \"stage\": " << m.stage << ", \"world\": " << m.world
         << ", \"nodes\": " << m.nodes << ", \"gpus_per_node\": " << m.gpus_per_node
         << ", \"steps\": " << m.steps << ", \"grad_accum\": " << m.grad_accum
         << ", \"device_capacity\": " << m.device_capacity
         << ", \"units\": \"ts and dur in microseconds (from integer nanoseconds); memory in "
            "bytes\", \"notes\": [";
    for (std::size_t i = 0; i < m.notes.size(); ++i) out_ << (i ? ", " : "") << str(m.notes[i]);
    out_ << "]}";
  }

  const Trace& t_;
  std::ostream& out_;
  bool first_ = true;
  std::uint64_t flow_id_ = 0;
};

}  // namespace

void write_chrome_trace(const Trace& trace, std::ostream& out) { ChromeWriter(trace, out).write(); }

}  // namespace zerosim
