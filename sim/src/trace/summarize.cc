// summarize() (trace.h): the summary of a trace from the trace alone, so that a measured trace is
// summarised exactly like a predicted one. One pass over the spans per timeline (the kAllRanks
// timing, or each measured rank), one over the comm records, one over each rank's memory curve.
// The simulator builds its summary through this function too (simulator_summary.cc), so the rules
// below are the only definition of the summary's numbers.
#include <algorithm>
#include <array>
#include <map>
#include <string_view>
#include <utility>
#include <vector>

#include "zerosim/trace.h"

namespace zerosim {
namespace {

bool is_compute(std::string_view category) {
  return category == op_kind_name(OpKind::Forward) || category == op_kind_name(OpKind::Backward) ||
         category == op_kind_name(OpKind::Recompute);
}

bool is_comm_stream(Stream s) { return s == Stream::Reduce || s == Stream::Gather; }
bool is_offload_stream(Stream s) {
  return s == Stream::H2D || s == Stream::D2H || s == Stream::Host;
}

// Time numbers of one timeline (all ranks at once, or one measured rank).
struct Timeline {
  SimTime init_ns = 0;
  SimTime total_ns = 0;
  std::vector<SimTime> end;  // per step, -1: no span
  std::vector<StepSummary> steps;
};

void add_span(const Span& s, Timeline& tl) {
  const SimTime end = s.start_ns + s.dur_ns;
  tl.total_ns = std::max(tl.total_ns, end);
  if (s.phase == Phase::Init) {
    tl.init_ns = std::max(tl.init_ns, end);
    return;
  }
  if (s.step >= tl.steps.size()) return;
  StepSummary& st = tl.steps[s.step];
  tl.end[s.step] = std::max(tl.end[s.step], end);
  if (is_compute(s.category)) st.compute_ns += s.dur_ns;
  if (s.stream == Stream::Compute && s.category == op_kind_name(OpKind::Collective))
    st.exposed_comm_ns += s.dur_ns;
  if (s.wait_ns > 0 && s.wait_stream) {
    if (is_comm_stream(*s.wait_stream)) st.exposed_comm_ns += s.wait_ns;
    if (is_offload_stream(*s.wait_stream)) st.exposed_offload_ns += s.wait_ns;
  }
}

// Steps start where the previous one ended (step 0: at the end of the init phase).
void close_steps(Timeline& tl) {
  SimTime prev = tl.init_ns;
  for (std::size_t k = 0; k < tl.steps.size(); ++k) {
    tl.steps[k].start_ns = prev;
    tl.steps[k].end_ns = std::max(prev, tl.end[k]);
    prev = tl.steps[k].end_ns;
  }
}

// Each number is the largest over the timelines (the critical rank of a measured run).
void add_time(const Trace& t, Summary& out) {
  const std::uint32_t steps = t.meta.steps;
  std::map<std::uint32_t, Timeline> lines;  // by rank; kAllRanks for the shared timing
  for (const Span& s : t.spans) {
    auto [it, fresh] = lines.try_emplace(s.rank);
    if (fresh) {
      it->second.end.assign(steps, -1);
      it->second.steps.resize(steps);
    }
    add_span(s, it->second);
  }
  out.steps.resize(steps);
  for (std::uint32_t k = 0; k < steps; ++k) out.steps[k].step = k;
  for (auto& [rank, tl] : lines) {
    close_steps(tl);
    out.init_ns = std::max(out.init_ns, tl.init_ns);
    out.total_ns = std::max(out.total_ns, tl.total_ns);
    for (std::uint32_t k = 0; k < steps; ++k) {
      StepSummary& st = out.steps[k];
      const StepSummary& mine = tl.steps[k];
      st.start_ns = std::max(st.start_ns, mine.start_ns);
      st.end_ns = std::max(st.end_ns, mine.end_ns);
      st.compute_ns = std::max(st.compute_ns, mine.compute_ns);
      st.exposed_comm_ns = std::max(st.exposed_comm_ns, mine.exposed_comm_ns);
      st.exposed_offload_ns = std::max(st.exposed_offload_ns, mine.exposed_offload_ns);
    }
  }
  for (const StepSummary& st : out.steps) {
    out.compute_ns += st.compute_ns;
    out.exposed_comm_ns += st.exposed_comm_ns;
    out.exposed_offload_ns += st.exposed_offload_ns;
  }
  out.steady_from_ns = out.steps.empty() ? out.init_ns : out.steps.back().start_ns;
}

// Traffic per kind and rank; each number is the largest over ranks.
void add_comm(const Trace& t, Summary& out) {
  using ByKind = std::array<CommKindSummary, kCollectiveKindCount>;
  std::map<std::uint32_t, ByKind> by_rank;
  for (const CommRecord& c : t.comms) {
    CommKindSummary& k = by_rank[c.rank][static_cast<std::size_t>(c.kind)];
    k.calls += 1;
    k.bytes += c.bytes;
    k.bytes_sent += c.bytes_sent;
    k.bytes_received += c.bytes_received;
    k.time_ns += c.dur_ns;
  }
  ByKind all{};
  for (const auto& [rank, kinds] : by_rank)
    for (std::size_t k = 0; k < kCollectiveKindCount; ++k) {
      all[k].calls = std::max(all[k].calls, kinds[k].calls);
      all[k].bytes = std::max(all[k].bytes, kinds[k].bytes);
      all[k].bytes_sent = std::max(all[k].bytes_sent, kinds[k].bytes_sent);
      all[k].bytes_received = std::max(all[k].bytes_received, kinds[k].bytes_received);
      all[k].time_ns = std::max(all[k].time_ns, kinds[k].time_ns);
    }
  for (std::size_t k = 0; k < kCollectiveKindCount; ++k) {
    if (all[k].calls == 0) continue;
    all[k].kind = kAllCollectiveKinds[k];
    out.comm.push_back(all[k]);
  }
}

// The first sample reaching the largest total among samples [first, end).
MemoryPeak curve_peak(const std::vector<MemorySample>& m, std::size_t first) {
  MemoryPeak p;
  bool any = false;
  for (std::size_t i = first; i < m.size(); ++i)
    if (!any || m[i].total > p.bytes) {
      any = true;
      p.bytes = m[i].total;
      p.t = m[i].t;
      p.event = i;
      p.by_category = m[i].by_category;
    }
  return p;
}

// Peaks of one rank from its curve: whole run, and the steady window (the state at steady_from,
// i.e. the last sample at or before it, and every later sample).
RankPeaks peaks_from_curve(const Trace& t, const TraceRank& r, SimTime steady_from) {
  RankPeaks p;
  p.device = curve_peak(r.memory, 0);
  const auto after = std::upper_bound(r.memory.begin(), r.memory.end(), steady_from,
                                      [](SimTime v, const MemorySample& s) { return v < s.t; });
  const auto first = static_cast<std::size_t>(after - r.memory.begin());
  p.steady = curve_peak(r.memory, first == 0 ? 0 : first - 1);
  for (const TraceCounter& c : t.counters)
    if (c.rank == r.rank && c.name == kHostBytesCounter)
      for (const CounterSample& s : c.samples)
        p.host_bytes =
            std::max(p.host_bytes, static_cast<Bytes>(std::max<std::int64_t>(0, s.value)));
  return p;
}

void add_memory(const Trace& t, Summary& out) {
  std::map<std::uint32_t, RolePeakSummary> roles;  // a role's peak is its largest rank's
  for (const TraceRank& r : t.ranks) {
    const RankPeaks p = r.peaks ? *r.peaks : peaks_from_curve(t, r, out.steady_from_ns);
    auto [it, fresh] = roles.try_emplace(r.role);
    RolePeakSummary& s = it->second;
    if (fresh) {
      s.role = r.role;
      s.rank = r.rank;
      s.rank_count = 0;
    }
    s.rank_count += r.rank_count;
    if (fresh || p.device.bytes > s.device.bytes) {
      s.device = p.device;
      s.rank = r.rank;
    }
    if (fresh || p.steady.bytes > s.steady.bytes) s.steady = p.steady;
    s.host_peak = std::max(s.host_peak, p.host_bytes);
    if (!r.oom) continue;
    out.oom_ranks += r.rank_count;
    if (!out.oom || r.oom->t < out.oom->t) {
      out.oom = r.oom;
      out.oom_rank = r.rank;
    }
  }
  for (auto& [role, s] : roles) {
    const auto i = static_cast<std::uint32_t>(out.peaks.size());
    out.peaks.push_back(s);
    if (s.device.bytes > out.peaks[out.peak_role].device.bytes) out.peak_role = i;
    if (s.steady.bytes > out.peaks[out.steady_peak_role].steady.bytes) out.steady_peak_role = i;
  }
}

}  // namespace

Summary summarize(const Trace& t) {
  Summary out;
  out.meta = t.meta;
  add_time(t, out);
  add_comm(t, out);
  add_memory(t, out);
  return out;
}

}  // namespace zerosim
