// summarize() (trace.h): the summary of a trace from the trace alone, so that a measured trace is
// summarised exactly like a predicted one. One pass over the spans per timeline (the kAllRanks
// timing, or each measured rank), one over the comm records, one over each rank's memory curve.
// The simulator builds its summary through this function too (simulator_summary.cc), so the rules
// below are the only definition of the summary's numbers.
#include <algorithm>
#include <array>
#include <map>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "zerosim/saturating.h"
#include "zerosim/trace.h"

namespace zerosim {
namespace {

// Category names, looked up once (a span's category is compared for every span).
struct Categories {
  std::string_view forward = op_kind_name(OpKind::Forward);
  std::string_view backward = op_kind_name(OpKind::Backward);
  std::string_view recompute = op_kind_name(OpKind::Recompute);
  std::string_view collective = op_kind_name(OpKind::Collective);
};
const Categories& categories() {
  static const Categories c;
  return c;
}

bool is_compute(std::string_view category) {
  const Categories& c = categories();
  return category == c.forward || category == c.backward || category == c.recompute;
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

void add_span(const SpanTiming& s, Timeline& tl) {
  const SimTime end = span_end(s.start_ns, s.dur_ns);
  tl.total_ns = std::max(tl.total_ns, end);
  if (s.phase == Phase::Init) {
    tl.init_ns = std::max(tl.init_ns, end);
    return;
  }
  if (s.step >= tl.steps.size()) return;
  StepSummary& st = tl.steps[s.step];
  tl.end[s.step] = std::max(tl.end[s.step], end);
  if (s.compute) st.compute_ns = add_time(st.compute_ns, s.dur_ns);
  if (s.stream == Stream::Compute && s.collective)
    st.exposed_comm_ns = add_time(st.exposed_comm_ns, s.dur_ns);
  if (s.wait_ns > 0 && s.wait_stream) {
    if (is_comm_stream(*s.wait_stream))
      st.exposed_comm_ns = add_time(st.exposed_comm_ns, s.wait_ns);
    if (is_offload_stream(*s.wait_stream))
      st.exposed_offload_ns = add_time(st.exposed_offload_ns, s.wait_ns);
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
RankPeaks peaks_from_curve(const std::vector<TraceCounter>& counters, const TraceRank& r,
                           SimTime steady_from) {
  RankPeaks p;
  p.device = curve_peak(r.memory, 0);
  const auto after = std::upper_bound(r.memory.begin(), r.memory.end(), steady_from,
                                      [](SimTime v, const MemorySample& s) { return v < s.t; });
  const auto first = static_cast<std::size_t>(after - r.memory.begin());
  p.steady = curve_peak(r.memory, first == 0 ? 0 : first - 1);
  for (const TraceCounter& c : counters)
    if (c.rank == r.rank && c.name == kHostBytesCounter)
      for (const CounterSample& s : c.samples)
        p.host_bytes =
            std::max(p.host_bytes, static_cast<Bytes>(std::max<std::int64_t>(0, s.value)));
  return p;
}

}  // namespace

struct SummaryBuilder::State {
  Summary out;
  std::map<std::uint32_t, Timeline> lines;  // by rank; kAllRanks for the shared timing
  using ByKind = std::array<CommKindSummary, kCollectiveKindCount>;
  std::map<std::uint32_t, ByKind> comm;  // by rank
  // Bytes sent per rank: [0] the init phase, [1 + k] step k (the one traffic definition).
  std::map<std::uint32_t, std::vector<Bytes>> sent;
  std::map<std::uint32_t, RolePeakSummary> roles;  // a role's peak is its largest rank's
  // Rooted calls recorded for every rank (the simulator's): per rank at an end of the chain, the
  // bytes the kAllRanks figures count that it does not send / receive (see idle_ends).
  // One map per end, the sending end's by kind and by slot (as `sent`): one lookup per end and
  // call.
  struct IdleSent {
    std::array<Bytes, kCollectiveKindCount> by_kind{};
    std::vector<Bytes> by_slot;
  };
  std::map<std::uint32_t, IdleSent> idle_sent;
  std::map<std::uint32_t, std::array<Bytes, kCollectiveKindCount>> idle_received;
  bool time_closed = false;
  std::uint32_t last_rank = 0;  // the timeline of the previous span (most traces have one)
  Timeline* last = nullptr;
  std::uint32_t last_comm_rank = 0;  // the same for the previous comm record
  ByKind* last_kinds = nullptr;
  std::vector<Bytes>* last_sent = nullptr;
};

SummaryBuilder::SummaryBuilder(const TraceMeta& meta) : state_(std::make_unique<State>()) {
  state_->out.meta = meta;
}
SummaryBuilder::~SummaryBuilder() = default;

void SummaryBuilder::add(const Span& s) {
  SpanTiming t;
  t.rank = s.rank;
  t.stream = s.stream;
  t.compute = is_compute(s.category);
  t.collective = s.category == categories().collective;
  t.start_ns = s.start_ns;
  t.dur_ns = s.dur_ns;
  t.step = s.step;
  t.phase = s.phase;
  t.wait_ns = s.wait_ns;
  t.wait_stream = s.wait_stream;
  add(t);
}

void SummaryBuilder::add(const SpanTiming& s) { add(std::span<const SpanTiming>(&s, 1)); }

void SummaryBuilder::add(std::span<const SpanTiming> spans) {
  State& st = *state_;
  for (const SpanTiming& s : spans) {
    if (st.last == nullptr || st.last_rank != s.rank) {
      auto [it, fresh] = st.lines.try_emplace(s.rank);
      if (fresh) {
        it->second.end.assign(st.out.meta.steps, -1);
        it->second.steps.resize(st.out.meta.steps);
      }
      st.last_rank = s.rank;
      st.last = &it->second;
    }
    add_span(s, *st.last);
  }
}

void SummaryBuilder::add(const CommRecord& c) {
  const CommTiming t{c.rank,       c.kind,           c.phase,  c.step, c.bytes,
                     c.bytes_sent, c.bytes_received, c.dur_ns, c.root, c.group_size};
  add(std::span<const CommTiming>(&t, 1));
}

void SummaryBuilder::add(std::span<const CommTiming> comms) {
  State& st = *state_;
  for (const CommTiming& c : comms) {
    if (st.last_kinds == nullptr || st.last_comm_rank != c.rank) {  // std::map entries stay put
      st.last_comm_rank = c.rank;
      st.last_kinds = &st.comm[c.rank];
      st.last_sent = &st.sent[c.rank];
      st.last_sent->resize(std::size_t{st.out.meta.steps} + 1, 0);
    }
    CommKindSummary& k = (*st.last_kinds)[static_cast<std::size_t>(c.kind)];
    k.calls += 1;
    k.bytes = saturating_add(k.bytes, c.bytes);
    k.bytes_sent = saturating_add(k.bytes_sent, c.bytes_sent);
    k.bytes_received = saturating_add(k.bytes_received, c.bytes_received);
    k.time_ns = add_time(k.time_ns, c.dur_ns);
    std::vector<Bytes>& sent = *st.last_sent;
    const std::size_t slot = c.phase == Phase::Init ? 0 : std::size_t{c.step} + 1;
    if (slot < sent.size()) sent[slot] = saturating_add(sent[slot], c.bytes_sent);
    // Only rooted calls (reduce, broadcast) have idle ends: the test here, not a call per record.
    if (c.root != kNone) add_idle_ends(c, slot);
  }
}

// NCCL's ring reduce and broadcast are a chain (src/device/reduce.h, broadcast.h: the root's ring
// neighbour only sends or only receives): for reduce the root sends nothing and its right
// neighbour receives nothing; for broadcast the root receives nothing and its left neighbour sends
// nothing (ring_plan.h, the host backend's plan). A call recorded for every rank carries the
// busiest rank's bytes, so with roots that move between calls (a reduce per partition owner) the
// busiest rank's sum over calls is below the sum of the busiest ranks: each rank's own sum is the
// kAllRanks sum less what it skips as an end. Only for a communicator spanning the world, whose
// ranks the record names (root, group size); the trace does not carry a smaller group's layout.
void SummaryBuilder::add_idle_ends(const CommTiming& c, std::size_t slot) {
  State& st = *state_;
  const std::uint32_t n = c.group_size;
  if (c.rank != kAllRanks || c.root == kNone || n <= 1 || n != st.out.meta.world || c.root >= n)
    return;
  const bool reduce = c.kind == CollectiveKind::Reduce;
  if (!reduce && c.kind != CollectiveKind::Broadcast) return;
  const std::uint32_t no_send = reduce ? c.root : (c.root + n - 1) % n;
  const std::uint32_t no_receive = reduce ? (c.root + 1) % n : c.root;
  const auto k = static_cast<std::size_t>(c.kind);
  State::IdleSent& idle = st.idle_sent[no_send];
  idle.by_kind[k] = saturating_add(idle.by_kind[k], c.bytes_sent);
  Bytes& r = st.idle_received[no_receive][k];
  r = saturating_add(r, c.bytes_received);
  std::vector<Bytes>& steps = idle.by_slot;
  steps.resize(std::size_t{st.out.meta.steps} + 1, 0);
  if (slot < steps.size()) steps[slot] = saturating_add(steps[slot], c.bytes_sent);
}

// The kAllRanks figures less the least any rank skips (nothing when some rank is never an end).
void SummaryBuilder::subtract_idle_ends() {
  State& st = *state_;
  const auto all = st.comm.find(kAllRanks);
  if (all == st.comm.end() || st.idle_sent.empty()) return;
  const std::uint32_t world = st.out.meta.world;
  const auto least = [world](const auto& per_rank, auto&& value) {
    if (per_rank.size() < world) return Bytes{0};
    Bytes m = UINT64_MAX;
    for (const auto& [rank, v] : per_rank) m = std::min(m, value(v));
    return m;
  };
  for (std::size_t k = 0; k < kCollectiveKindCount; ++k) {
    const auto sent_k = [k](const State::IdleSent& v) { return v.by_kind[k]; };
    const auto at = [k](const std::array<Bytes, kCollectiveKindCount>& v) { return v[k]; };
    all->second[k].bytes_sent -= std::min(all->second[k].bytes_sent, least(st.idle_sent, sent_k));
    all->second[k].bytes_received -=
        std::min(all->second[k].bytes_received, least(st.idle_received, at));
  }
  std::vector<Bytes>& sent = st.sent[kAllRanks];
  for (std::size_t i = 0; i < sent.size(); ++i) {
    const auto at = [i](const State::IdleSent& v) {
      return i < v.by_slot.size() ? v.by_slot[i] : Bytes{0};
    };
    sent[i] -= std::min(sent[i], least(st.idle_sent, at));
  }
}

// Each time number is the largest over the timelines (the critical rank of a measured run).
SimTime SummaryBuilder::steady_from_ns() {
  Summary& out = state_->out;
  if (state_->time_closed) return out.steady_from_ns;
  state_->time_closed = true;
  const std::uint32_t steps = out.meta.steps;
  out.steps.resize(steps);
  for (std::uint32_t k = 0; k < steps; ++k) out.steps[k].step = k;
  for (auto& [rank, tl] : state_->lines) {
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
    out.compute_ns = add_time(out.compute_ns, st.compute_ns);
    out.exposed_comm_ns = add_time(out.exposed_comm_ns, st.exposed_comm_ns);
    out.exposed_offload_ns = add_time(out.exposed_offload_ns, st.exposed_offload_ns);
  }
  out.steady_from_ns = out.steps.empty() ? out.init_ns : out.steps.back().start_ns;
  return out.steady_from_ns;
}

void SummaryBuilder::add(const TraceRank& r, const std::vector<TraceCounter>& counters) {
  Summary& out = state_->out;
  const RankPeaks p = r.peaks ? *r.peaks : peaks_from_curve(counters, r, steady_from_ns());
  auto [it, fresh] = state_->roles.try_emplace(r.role);
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
  if (!r.oom) return;
  out.oom_ranks += r.rank_count;
  if (!out.oom || r.oom->t < out.oom->t || (r.oom->t == out.oom->t && r.role < out.oom->role)) {
    out.oom = r.oom;
    out.oom_rank = r.rank;
  }
}

// Traffic per kind and rank: each number is the largest over ranks. Peaks in role order.
Summary SummaryBuilder::finish() {
  steady_from_ns();
  Summary& out = state_->out;
  subtract_idle_ends();
  State::ByKind all{};
  for (const auto& [rank, kinds] : state_->comm)
    for (std::size_t k = 0; k < kCollectiveKindCount; ++k) {
      all[k].calls = std::max(all[k].calls, kinds[k].calls);
      all[k].bytes = std::max(all[k].bytes, kinds[k].bytes);
      all[k].bytes_sent = std::max(all[k].bytes_sent, kinds[k].bytes_sent);
      all[k].bytes_received = std::max(all[k].bytes_received, kinds[k].bytes_received);
      all[k].time_ns = std::max(all[k].time_ns, kinds[k].time_ns);
    }
  for (const auto& [rank, sent] : state_->sent)
    for (std::size_t k = 0; k < sent.size(); ++k) {
      if (k == 0)
        out.init_bytes_sent = std::max(out.init_bytes_sent, sent[k]);
      else if (k - 1 < out.steps.size())
        out.steps[k - 1].bytes_sent = std::max(out.steps[k - 1].bytes_sent, sent[k]);
    }
  for (std::size_t k = 0; k < kCollectiveKindCount; ++k) {
    if (all[k].calls == 0) continue;
    all[k].kind = kAllCollectiveKinds[k];
    out.comm.push_back(all[k]);
  }
  out.peaks.reserve(out.peaks.size() + state_->roles.size());  // one allocation, not log2(roles)
  for (auto& [role, s] : state_->roles) {
    const auto i = static_cast<std::uint32_t>(out.peaks.size());
    out.peaks.push_back(s);
    if (s.device.bytes > out.peaks[out.peak_role].device.bytes) out.peak_role = i;
    if (s.steady.bytes > out.peaks[out.steady_peak_role].steady.bytes) out.steady_peak_role = i;
  }
  return std::move(out);
}

Summary summarize(const Trace& t) {
  SummaryBuilder b(t.meta);
  for (const Span& s : t.spans) b.add(s);
  for (const CommRecord& c : t.comms) b.add(c);
  for (const TraceRank& r : t.ranks) b.add(r, t.counters);
  return b.finish();
}

}  // namespace zerosim
