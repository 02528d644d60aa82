// The trace of a simulation (engine.h, trace.h), from the event loop's op times and the per-role
// memory analysis; summarize() (sim/src/trace/summarize.cc) turns it into the summary, so the
// simulator has no summary rules of its own. Nothing here iterates over ranks: roles stand for
// them, and only the few traced roles get memory curves.
#include <algorithm>
#include <array>
#include <span>
#include <string>

#include "engine/simulator_internal.h"
#include "zerosim/comm_record.h"

namespace zerosim::sim {
namespace {

// `wait`: op i's entry of loop.waits, or nullptr (it did not wait).
Span make_span(const Schedule& s, const Program& p, const LoopOutput& loop, std::uint32_t i,
               bool named, const LoopOutput::Wait* wait) {
  const Op& op = s.ops[i];
  Span sp;
  sp.stream = op.stream;
  sp.op = i;
  if (named) sp.name = op.label.empty() ? std::string(op_kind_name(op.kind)) : op.label;
  sp.category = std::string(op_kind_name(op.kind));
  sp.start_ns = loop.ops[i].start_ns;
  sp.dur_ns = loop.ops[i].end_ns - loop.ops[i].start_ns;
  sp.step = op.step;
  sp.micro_step = op.micro_step;
  sp.layer = op.layer;
  sp.bucket = op.bucket;
  sp.bytes = p.bytes[i];
  sp.numel = op.kind == OpKind::Collective ? op.numel : 0;
  sp.flops = op.flops;
  sp.phase = op.phase;
  if (wait != nullptr) {
    sp.wait_ns = wait->blocked_ns;
    if (wait->blocker != kNone) sp.wait_stream = p.ops[wait->blocker].stream;
  }
  return sp;
}

// What the summary reads of a collective call (the trace's record carries the same values).
CommTiming comm_timing(const Schedule& s, const Program& p, const CollectiveCall& call,
                       const LoopOutput& loop) {
  const CompiledOp& op = p.ops[call.op];
  const Op& sop = s.ops[call.op];
  const CommGroup& g = s.comms[sop.comm];
  CommTiming t;
  t.group_size = g.size;
  // The root as a rank of the group the first rank belongs to (as make_comm records it).
  if (sop.root != kNone) t.root = g.rank_at(g.first, sop.root);
  t.kind = call.kind;
  t.phase = op.phase;
  t.step = op.step;
  t.bytes = call.cost.algbw_bytes;
  t.bytes_sent = call.cost.bytes_sent_per_rank;
  t.bytes_received = call.cost.bytes_sent_per_rank;  // ring: every rank receives what it sends
  t.dur_ns = loop.ops[call.op].end_ns - loop.ops[call.op].start_ns;
  return t;
}

// The trace's record of a collective call: the schedule's fields (comm_record.h, shared with the
// backends) and comm_timing's costs and times.
CommRecord make_comm(const Schedule& s, const Program& p, const CollectiveCall& call,
                     const LoopOutput& loop) {
  const CommTiming t = comm_timing(s, p, call, loop);
  CommRecord r = schedule_comm_record(s, call.op, kAllRanks);
  r.bytes = t.bytes;  // the cost model's S: schedule_comm_record's, asked for the same count
  r.bytes_sent = t.bytes_sent;
  r.bytes_received = t.bytes_received;
  r.start_ns = loop.ops[call.op].start_ns;
  r.dur_ns = t.dur_ns;
  set_comm_bandwidths(r, call.cost.busbw_factor);
  r.algorithm = call.cost.algorithm;
  return r;
}

std::uint32_t rank_of(const Schedule& s, std::uint32_t role) {
  return role < s.roles.size() ? s.roles[role].representative : 0;
}

// A rank per role: its representative, the ranks it stands for, its ledger peaks and OOM.
TraceRank role_rank(const Schedule& s, const std::vector<RoleMemory>& memory, std::uint32_t r) {
  TraceRank tr;
  tr.role = r;
  tr.rank = rank_of(s, r);
  tr.rank_count = r < s.roles.size() ? s.roles[r].rank_count() : s.meta.world;
  tr.peaks = RankPeaks{memory[r].device, memory[r].steady, memory[r].host.bytes};
  tr.oom = memory[r].oom;
  return tr;
}

// Role 0, the peak role, then the lowest other roles, up to max_roles; ascending by rank.
std::vector<std::uint32_t> traced_roles(const Schedule& s, const std::vector<RoleMemory>& memory,
                                        std::uint32_t max_roles) {
  std::vector<std::uint32_t> roles;
  if (memory.empty() || max_roles == 0) return roles;
  std::uint32_t peak = 0;
  for (std::uint32_t r = 1; r < memory.size(); ++r)
    if (memory[r].device.bytes > memory[peak].device.bytes) peak = r;
  roles.push_back(0);
  if (peak != 0 && max_roles > 1) roles.push_back(peak);
  for (std::uint32_t r = 1; r < memory.size() && roles.size() < max_roles; ++r)
    if (r != peak) roles.push_back(r);
  std::sort(roles.begin(), roles.end(),
            [&](std::uint32_t a, std::uint32_t b) { return rank_of(s, a) < rank_of(s, b); });
  return roles;
}

}  // namespace

Trace make_trace(const Schedule& s, const Program& p, const LoopOutput& loop,
                 const TraceMeta& meta) {
  Trace t;
  t.meta = meta;
  t.comms.reserve(p.collectives.size());
  std::size_t next_call = 0;  // p.collectives is in program order
  std::size_t next_wait = 0;  // so are loop.waits
  for (std::uint32_t i = 0; i < s.ops.size(); ++i) {
    const Op& op = s.ops[i];
    const LoopOutput::Wait* wait = nullptr;
    if (next_wait < loop.waits.size() && loop.waits[next_wait].op == i)
      wait = &loop.waits[next_wait++];
    if (op.kind == OpKind::Alloc || op.kind == OpKind::Free) continue;
    t.spans.push_back(make_span(s, p, loop, i, true, wait));
    if (next_call >= p.collectives.size() || p.collectives[next_call].op != i) continue;
    t.spans.back().comm = static_cast<std::uint32_t>(t.comms.size());
    t.comms.push_back(make_comm(s, p, p.collectives[next_call++], loop));
  }
  std::stable_sort(t.spans.begin(), t.spans.end(),
                   [](const Span& a, const Span& b) { return a.start_ns < b.start_ns; });
  return t;
}

void add_ops(const Schedule& s, const Program& p, const LoopOutput& loop, SummaryBuilder& b) {
  // The summary's fields only, from the compact ops (no names, no pass over the large schedule
  // ops), handed over a chunk at a time: a call per span was a fifth of the summary's cost.
  constexpr std::size_t kChunk = 256;
  std::array<SpanTiming, kChunk> spans;
  std::size_t n = 0;
  const LoopOutput::Wait* wait = loop.waits.data();  // ascending op index (LoopOutput)
  const LoopOutput::Wait* const waits_end = wait + loop.waits.size();
  for (std::uint32_t i = 0; i < p.ops.size(); ++i) {
    const CompiledOp& op = p.ops[i];
    const bool waited = wait != waits_end && wait->op == i;
    if (op.kind == OpKind::Alloc || op.kind == OpKind::Free) {
      wait += waited;
      continue;
    }
    SpanTiming& sp = spans[n];
    sp.stream = op.stream;
    sp.compute =
        op.kind == OpKind::Forward || op.kind == OpKind::Backward || op.kind == OpKind::Recompute;
    sp.collective = op.kind == OpKind::Collective;
    sp.start_ns = loop.ops[i].start_ns;
    sp.dur_ns = loop.ops[i].end_ns - loop.ops[i].start_ns;
    sp.step = op.step;
    sp.phase = op.phase;
    sp.wait_ns = 0;
    sp.wait_stream.reset();
    if (waited) {
      sp.wait_ns = wait->blocked_ns;
      if (wait->blocker != kNone) sp.wait_stream = p.ops[wait->blocker].stream;
      ++wait;
    }
    if (++n == kChunk) {
      b.add(std::span<const SpanTiming>(spans.data(), n));
      n = 0;
    }
  }
  b.add(std::span<const SpanTiming>(spans.data(), n));
  std::array<CommTiming, kChunk> comms;
  n = 0;
  for (const CollectiveCall& call : p.collectives) {
    comms[n] = comm_timing(s, p, call, loop);
    if (++n == kChunk) {
      b.add(std::span<const CommTiming>(comms.data(), n));
      n = 0;
    }
  }
  b.add(std::span<const CommTiming>(comms.data(), n));
}

void add_roles(const Schedule& s, const std::vector<RoleMemory>& memory, SummaryBuilder& b) {
  static const std::vector<TraceCounter> kNoCounters;
  for (std::uint32_t r = 0; r < memory.size(); ++r) b.add(role_rank(s, memory, r), kNoCounters);
}

std::vector<TraceRank> traced_ranks(const Schedule& s, const LoopOutput& loop,
                                    const std::vector<RoleMemory>& memory,
                                    std::uint32_t max_roles) {
  std::vector<TraceRank> out;
  for (std::uint32_t r : traced_roles(s, memory, max_roles)) {
    TraceRank tr = role_rank(s, memory, r);
    tr.peaks.reset();  // the curve carries them
    tr.memory = loop.ledger.device_curve(r);
    out.push_back(std::move(tr));
  }
  return out;
}

}  // namespace zerosim::sim
