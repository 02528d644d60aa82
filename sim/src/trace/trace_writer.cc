// Writer of the zerosim trace JSON (trace.h). Keys come in a fixed order, optional keys only when
// they differ from their defaults, and every rank, span, comm record and memory row sits on its own
// line, so equal traces give byte-identical files that diff well. Memory rows are arrays whose
// columns are named once in "memory_columns". Version 2 adds run metadata (clock, versions, the
// schedule's digest, warm-up and timed steps) on the meta's second line, a rank's peaks and OOM,
// span phase/issue/wait keys and comm micro_step/reduce_op/root (when not default), and the named
// counters after the comm records.
#include <ostream>
#include <string>

#include "trace/json_text.h"
#include "trace/meta_json.h"
#include "zerosim/trace.h"

namespace zerosim {
namespace {

using trace_text::num;
using trace_text::str;

void write_meta(const TraceMeta& m, std::ostream& out) {
  out << "  \"meta\": {";
  trace_text::write_run_identity(m, out);
  out << ", \"device_capacity\": " << m.device_capacity
      << ",\n    \"schedule_digest\": " << str(m.schedule_digest) << ", \"clock\": " << str(m.clock)
      << ", \"host\": " << str(m.host) << ", \"driver_version\": " << str(m.driver_version)
      << ", \"cuda_version\": " << str(m.cuda_version)
      << ", \"nccl_version\": " << str(m.nccl_version) << ", \"warmup_steps\": " << m.warmup_steps
      << ", \"timed_steps\": " << m.timed_steps;
  trace_text::write_notes(m.notes, out);
  out << "}";
}

void write_peak(const MemoryPeak& p, std::ostream& out) {
  out << "{\"bytes\": " << p.bytes << ", \"t_ns\": " << p.t << ", \"by_category\": [";
  for (std::size_t k = 0; k < kCategoryCount; ++k) out << (k ? ", " : "") << p.by_category[k];
  out << "]}";
}

void write_rank(const TraceRank& r, std::ostream& out) {
  out << "    {\"rank\": " << r.rank << ", \"role\": " << r.role
      << ", \"rank_count\": " << r.rank_count;
  if (r.peaks) {
    out << ",\n     \"peaks\": {\"device\": ";
    write_peak(r.peaks->device, out);
    out << ", \"steady\": ";
    write_peak(r.peaks->steady, out);
    out << ", \"host_bytes\": " << r.peaks->host_bytes << "}";
  }
  if (r.oom) {
    const OomEvent& o = *r.oom;
    out << ",\n     \"oom\": {\"t_ns\": " << o.t << ", \"role\": " << o.role
        << ", \"buffer\": " << str(o.buffer_name)
        << ", \"category\": " << str(category_name(o.category)) << ", \"bytes\": " << o.bytes
        << ", \"live_bytes\": " << o.live_bytes << ", \"capacity\": " << o.capacity << "}";
  }
  out << ", \"memory\": [";
  for (std::size_t i = 0; i < r.memory.size(); ++i) {
    const MemorySample& s = r.memory[i];
    out << (i ? ",\n      [" : "\n      [") << s.t << ", " << s.total;
    for (Bytes b : s.by_category) out << ", " << b;
    out << "]";
  }
  out << (r.memory.empty() ? "]}" : "\n    ]}");
}

void write_span(const Span& s, std::ostream& out) {
  out << "{\"op\": " << s.op;
  if (s.rank != kAllRanks) out << ", \"rank\": " << s.rank;
  out << ", \"stream\": " << str(stream_name(s.stream)) << ", \"name\": " << str(s.name)
      << ", \"cat\": " << str(s.category) << ", \"start_ns\": " << s.start_ns
      << ", \"dur_ns\": " << s.dur_ns;
  if (s.step != 0) out << ", \"step\": " << s.step;
  if (s.micro_step != 0) out << ", \"micro_step\": " << s.micro_step;
  if (s.layer != kNone) out << ", \"layer\": " << s.layer;
  if (s.bucket != kNone) out << ", \"bucket\": " << s.bucket;
  if (s.comm != kNone) out << ", \"comm\": " << s.comm;
  if (s.bytes != 0) out << ", \"bytes\": " << s.bytes;
  if (s.numel != 0) out << ", \"numel\": " << s.numel;
  if (s.flops != 0) out << ", \"flops\": " << num(s.flops);
  if (s.phase != Phase::Forward) out << ", \"phase\": " << str(phase_name(s.phase));
  if (s.issue_ns != kNoTime) out << ", \"issue_ns\": " << s.issue_ns;
  if (s.wait_ns != 0) out << ", \"wait_ns\": " << s.wait_ns;
  if (s.wait_stream) out << ", \"wait_stream\": " << str(stream_name(*s.wait_stream));
  out << "}";
}

void write_comm(const CommRecord& c, std::ostream& out) {
  out << "{\"op\": " << c.op;
  if (c.rank != kAllRanks) out << ", \"rank\": " << c.rank;
  out << ", \"kind\": " << str(collective_name(c.kind))
      << ", \"phase\": " << str(phase_name(c.phase)) << ", \"step\": " << c.step;
  if (c.bucket != kNone) out << ", \"bucket\": " << c.bucket;
  out << ", \"numel\": " << c.numel << ", \"out_numel\": " << c.out_numel
      << ", \"dtype\": " << str(dtype_name(c.dtype)) << ", \"group_size\": " << c.group_size
      << ", \"bytes\": " << c.bytes << ", \"bytes_sent\": " << c.bytes_sent
      << ", \"bytes_received\": " << c.bytes_received << ", \"start_ns\": " << c.start_ns
      << ", \"dur_ns\": " << c.dur_ns << ", \"algbw_gbps\": " << num(c.algbw_gbps)
      << ", \"busbw_gbps\": " << num(c.busbw_gbps) << ", \"algorithm\": " << str(c.algorithm);
  if (c.micro_step != 0) out << ", \"micro_step\": " << c.micro_step;
  if (c.reduce_op != ReduceOp::None) out << ", \"reduce_op\": " << str(reduce_op_name(c.reduce_op));
  if (c.root != kNone) out << ", \"root\": " << c.root;
  out << "}";
}

}  // namespace

std::string format_us(SimTime ns) {
  const bool neg = ns < 0;
  // Magnitude as unsigned so that INT64_MIN has one too.
  const std::uint64_t mag =
      neg ? static_cast<std::uint64_t>(-(ns + 1)) + 1 : static_cast<std::uint64_t>(ns);
  std::string frac = std::to_string(mag % 1000);
  frac.insert(0, 3 - frac.size(), '0');
  return (neg ? "-" : "") + std::to_string(mag / 1000) + "." + frac;
}

void write_trace_json(const Trace& t, std::ostream& out) {
  out << "{\n  \"format\": \"" << kTraceFormat << "\",\n  \"version\": " << kTraceVersion << ",\n";
  write_meta(t.meta, out);
  out << ",\n  \"memory_columns\": [\"t_ns\", \"total\"";
  for (BufferCategory c : kAllCategories) out << ", " << str(category_name(c));
  out << "],\n  \"ranks\": [";
  for (std::size_t i = 0; i < t.ranks.size(); ++i) {
    out << (i ? ",\n" : "\n");
    write_rank(t.ranks[i], out);
  }
  out << (t.ranks.empty() ? "],\n" : "\n  ],\n") << "  \"spans\": [";
  for (std::size_t i = 0; i < t.spans.size(); ++i) {
    out << (i ? ",\n    " : "\n    ");
    write_span(t.spans[i], out);
  }
  out << (t.spans.empty() ? "],\n" : "\n  ],\n") << "  \"comms\": [";
  for (std::size_t i = 0; i < t.comms.size(); ++i) {
    out << (i ? ",\n    " : "\n    ");
    write_comm(t.comms[i], out);
  }
  out << (t.comms.empty() ? "],\n" : "\n  ],\n") << "  \"counters\": [";
  for (std::size_t i = 0; i < t.counters.size(); ++i) {
    const TraceCounter& c = t.counters[i];
    out << (i ? ",\n    " : "\n    ") << "{\"rank\": " << c.rank << ", \"name\": " << str(c.name)
        << ", \"samples\": [";
    for (std::size_t k = 0; k < c.samples.size(); ++k)
      out << (k ? ", [" : "[") << c.samples[k].t << ", " << c.samples[k].value << "]";
    out << "]}";
  }
  out << (t.counters.empty() ? "]\n}\n" : "\n  ]\n}\n");
}

}  // namespace zerosim
