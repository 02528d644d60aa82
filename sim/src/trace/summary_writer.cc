// Writer of the summary JSON (trace.h): the numbers a person or CI compares — time per optimizer
// step, compute time, exposed communication, bytes each rank sends per step
// (time.steps[].bytes_sent, the traffic plan reports for the steady step) and at init
// (time.init_bytes_sent), traffic per collective kind over the run (per rank, ring formulas,
// nccl-tests conventions), peak device memory per rank role with its breakdown, and the earliest
// OOM. Fixed key order and integer times, so golden tests can compare files byte for byte.
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "trace/json_text.h"
#include "trace/meta_json.h"
#include "zerosim/trace.h"

namespace zerosim {
namespace {

using trace_text::str;

void write_meta(const TraceMeta& m, std::ostream& out) {
  out << "  \"meta\": {";
  trace_text::write_run_identity(m, out);
  trace_text::write_notes(m.notes, out);
  out << "},\n";
}

void write_time(const Summary& s, std::ostream& out) {
  out << "  \"time\": {\"init_ns\": " << s.init_ns << ", \"total_ns\": " << s.total_ns
      << ", \"compute_ns\": " << s.compute_ns << ", \"exposed_comm_ns\": " << s.exposed_comm_ns
      << ", \"exposed_offload_ns\": " << s.exposed_offload_ns
      << ", \"init_bytes_sent\": " << s.init_bytes_sent << ",\n    \"steps\": [";
  for (std::size_t i = 0; i < s.steps.size(); ++i) {
    const StepSummary& st = s.steps[i];
    out << (i ? ",\n      " : "\n      ") << "{\"step\": " << st.step
        << ", \"start_ns\": " << st.start_ns << ", \"end_ns\": " << st.end_ns
        << ", \"duration_ns\": " << st.end_ns - st.start_ns << ", \"compute_ns\": " << st.compute_ns
        << ", \"exposed_comm_ns\": " << st.exposed_comm_ns
        << ", \"exposed_offload_ns\": " << st.exposed_offload_ns
        << ", \"bytes_sent\": " << st.bytes_sent << "}";
  }
  out << (s.steps.empty() ? "]},\n" : "\n    ]},\n");
}

void write_comm(const Summary& s, std::ostream& out) {
  out << "  \"comm\": [";
  for (std::size_t i = 0; i < s.comm.size(); ++i) {
    const CommKindSummary& c = s.comm[i];
    out << (i ? ",\n    " : "\n    ") << "{\"kind\": " << str(collective_name(c.kind))
        << ", \"calls\": " << c.calls << ", \"bytes\": " << c.bytes
        << ", \"bytes_sent_per_rank\": " << c.bytes_sent
        << ", \"bytes_received_per_rank\": " << c.bytes_received << ", \"time_ns\": " << c.time_ns
        << "}";
  }
  out << (s.comm.empty() ? "],\n" : "\n  ],\n");
}

void write_categories(const CategoryBytes& c, std::ostream& out) {
  out << "{";
  for (std::size_t k = 0; k < kCategoryCount; ++k)
    out << (k ? ", " : "") << str(category_name(kAllCategories[k])) << ": " << c[k];
  out << "}";
}

void write_memory(const Summary& s, const TraceMeta& m, std::ostream& out) {
  const Bytes peak = s.peaks.empty() ? 0 : s.peaks[s.peak_role].device.bytes;
  const std::uint32_t rank = s.peaks.empty() ? 0 : s.peaks[s.peak_role].rank;
  const Bytes steady = s.peaks.empty() ? 0 : s.peaks[s.steady_peak_role].steady.bytes;
  const std::uint32_t steady_rank = s.peaks.empty() ? 0 : s.peaks[s.steady_peak_role].rank;
  const std::uint32_t role = s.peaks.empty() ? 0 : s.peaks[s.peak_role].role;
  const std::uint32_t steady_role = s.peaks.empty() ? 0 : s.peaks[s.steady_peak_role].role;
  out << "  \"memory\": {\"device_capacity\": " << m.device_capacity << ", \"peak_bytes\": " << peak
      << ", \"peak_rank\": " << rank << ", \"peak_role\": " << role
      << ", \"steady_from_ns\": " << s.steady_from_ns << ", \"steady_peak_bytes\": " << steady
      << ", \"steady_peak_rank\": " << steady_rank << ", \"steady_peak_role\": " << steady_role
      << ",\n    \"roles\": [";
  for (std::size_t i = 0; i < s.peaks.size(); ++i) {
    const RolePeakSummary& p = s.peaks[i];
    out << (i ? ",\n      " : "\n      ") << "{\"role\": " << p.role << ", \"rank\": " << p.rank
        << ", \"rank_count\": " << p.rank_count << ", \"peak_bytes\": " << p.device.bytes
        << ", \"peak_t_ns\": " << p.device.t << ", \"host_peak_bytes\": " << p.host_peak
        << ", \"by_category\": ";
    write_categories(p.device.by_category, out);
    out << ", \"steady_peak_bytes\": " << p.steady.bytes << ", \"steady_peak_t_ns\": " << p.steady.t
        << ", \"steady_by_category\": ";
    write_categories(p.steady.by_category, out);
    out << "}";
  }
  out << (s.peaks.empty() ? "]},\n" : "\n    ]},\n");
}

void write_oom(const Summary& s, std::ostream& out) {
  out << "  \"oom\": ";
  if (!s.oom) {
    out << "null\n";
    return;
  }
  const OomEvent& o = *s.oom;
  out << "{\"t_ns\": " << o.t << ", \"rank\": " << s.oom_rank << ", \"role\": " << o.role
      << ", \"buffer\": " << str(o.buffer_name)
      << ", \"category\": " << str(category_name(o.category)) << ", \"bytes\": " << o.bytes
      << ", \"live_bytes\": " << o.live_bytes << ", \"capacity\": " << o.capacity
      << ", \"ranks_out_of_memory\": " << s.oom_ranks << "}\n";
}

// A figure the time model may not know (0: the GEMM shape, the FLOPs or the step is unknown):
// null then. Doubles as the plan JSON writes them (the shortest text that reads back the same).
std::string known(double v) { return v > 0 ? nlohmann::json(v).dump() : "null"; }

// The table's "speed of the steady step" block: simulate's JSON had the step time and traffic
// but neither tokens/s nor MFU (found by a new-user pass).
void write_speed(const StepSpeed& v, std::ostream& out) {
  out << "  \"speed\": {\"step_ns\": " << v.step_ns
      << ", \"tokens_per_step\": " << known(v.tokens_per_step)
      << ", \"tokens_per_s\": " << known(v.tokens_per_s)
      << ", \"model_flops_per_gpu\": " << known(v.model_flops_per_gpu)
      << ", \"mfu\": " << known(v.mfu) << "},\n";
}

}  // namespace

void write_summary_json(const Summary& s, std::ostream& out, const StepSpeed* speed) {
  out << "{\n  \"format\": \"" << kSummaryFormat << "\",\n  \"version\": " << kSummaryVersion
      << ",\n";
  write_meta(s.meta, out);
  write_time(s, out);
  write_comm(s, out);
  write_memory(s, s.meta, out);
  if (speed != nullptr) write_speed(*speed, out);
  write_oom(s, out);
  out << "}\n";
}

}  // namespace zerosim
