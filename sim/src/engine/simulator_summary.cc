// The trace of a simulation (engine.h, trace.h), from the event loop's op times and the per-role
// memory analysis; summarize() (sim/src/trace/summarize.cc) turns it into the summary, so the
// simulator has no summary rules of its own. Nothing here iterates over ranks: roles stand for
// them, and only the few traced roles get memory curves.
#include <algorithm>
#include <string>

#include "engine/simulator_internal.h"

namespace zerosim::sim {
namespace {

bool is_compute(OpKind k) {
  return k == OpKind::Forward || k == OpKind::Backward || k == OpKind::Recompute;
}

Span make_span(const Schedule& s, const Program& p, const LoopOutput& loop, std::uint32_t i,
               bool named) {
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
  sp.wait_ns = loop.blocked_ns[i];
  if (loop.blocker[i] != kNone) sp.wait_stream = p.ops[loop.blocker[i]].stream;
  return sp;
}

CommRecord make_comm(const Op& op, std::uint32_t i, const CollectiveCost& c,
                     const LoopOutput& loop) {
  CommRecord r;
  r.op = i;
  r.kind = op.collective;
  r.phase = op.phase;
  r.step = op.step;
  r.bucket = op.bucket;
  r.numel = op.numel;
  r.out_numel = op.out_numel;
  r.dtype = op.dtype;
  r.group_size = op.group_size;
  r.bytes = c.algbw_bytes;
  r.bytes_sent = c.bytes_sent_per_rank;
  r.bytes_received = c.bytes_sent_per_rank;  // ring: every rank receives what it sends
  r.start_ns = loop.ops[i].start_ns;
  r.dur_ns = loop.ops[i].end_ns - loop.ops[i].start_ns;
  if (r.dur_ns > 0) {
    r.algbw_gbps = static_cast<double>(r.bytes) / static_cast<double>(r.dur_ns);  // B/ns = GB/s
    r.busbw_gbps = r.algbw_gbps * c.busbw_factor;
  }
  r.algorithm = c.algorithm;
  r.micro_step = op.micro_step;
  r.reduce_op = op.reduce_op;
  if (op.dst >= 0) r.root = static_cast<std::uint32_t>(op.dst);
  return r;
}

// Ops whose spans the summary depends on (summarize() in trace.h): compute, collectives and waits
// on the compute stream, and the last op to end in each step, in the init phase and overall.
std::vector<std::uint8_t> summary_ops(const Schedule& s, const Program& p, const LoopOutput& loop) {
  const std::size_t n = p.ops.size();
  std::vector<std::uint8_t> keep(n, 0);
  std::vector<std::uint32_t> last(s.meta.steps + 2, kNone);  // steps, init, overall
  const auto later = [&](std::uint32_t& slot, std::uint32_t i) {
    if (slot == kNone || loop.ops[i].end_ns > loop.ops[slot].end_ns) slot = i;
  };
  for (std::uint32_t i = 0; i < n; ++i) {
    const CompiledOp& op = p.ops[i];
    if (op.kind == OpKind::Alloc || op.kind == OpKind::Free) continue;
    keep[i] = is_compute(op.kind) || loop.blocked_ns[i] > 0 ||
              (op.stream == Stream::Compute && op.kind == OpKind::Collective);
    later(last.back(), i);
    if (op.phase == Phase::Init)
      later(last[s.meta.steps], i);
    else if (op.step < s.meta.steps)
      later(last[op.step], i);
  }
  for (std::uint32_t i : last)
    if (i != kNone) keep[i] = 1;
  return keep;
}

// Role 0, the peak role, then the lowest other roles, up to max_roles; ascending by rank.
std::vector<std::uint32_t> traced_roles(const Trace& t, const std::vector<RoleMemory>& memory,
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
            [&](std::uint32_t a, std::uint32_t b) { return t.ranks[a].rank < t.ranks[b].rank; });
  return roles;
}

}  // namespace

Trace make_trace(const Schedule& s, const Program& p, const LoopOutput& loop, const TraceMeta& meta,
                 bool full) {
  Trace t;
  t.meta = meta;
  const std::vector<std::uint8_t> keep =
      full ? std::vector<std::uint8_t>(p.ops.size(), 1) : summary_ops(s, p, loop);
  t.comms.reserve(p.collectives.size());
  std::size_t next_call = 0;  // p.collectives is in program order
  for (std::uint32_t i = 0; i < s.ops.size(); ++i) {
    const Op& op = s.ops[i];
    if (op.kind == OpKind::Alloc || op.kind == OpKind::Free) continue;
    const bool call = next_call < p.collectives.size() && p.collectives[next_call].op == i;
    if (keep[i] != 0) t.spans.push_back(make_span(s, p, loop, i, full));
    if (!call) continue;
    if (keep[i] != 0) t.spans.back().comm = static_cast<std::uint32_t>(t.comms.size());
    t.comms.push_back(make_comm(op, i, p.collectives[next_call++].cost, loop));
  }
  if (full)
    std::stable_sort(t.spans.begin(), t.spans.end(),
                     [](const Span& a, const Span& b) { return a.start_ns < b.start_ns; });
  return t;
}

void add_trace_ranks(const Schedule& s, const std::vector<RoleMemory>& memory, Trace& t) {
  t.ranks.reserve(memory.size());
  for (std::uint32_t r = 0; r < memory.size(); ++r) {
    TraceRank& tr = t.ranks.emplace_back();
    tr.role = r;
    tr.rank = r < s.roles.size() ? s.roles[r].representative : 0;
    tr.rank_count = r < s.roles.size() ? s.roles[r].rank_count() : s.meta.world;
    tr.peaks = RankPeaks{memory[r].device, memory[r].steady, memory[r].host.bytes};
    tr.oom = memory[r].oom;
  }
}

void keep_traced_ranks(const LoopOutput& loop, const std::vector<RoleMemory>& memory,
                       std::uint32_t max_roles, Trace& t) {
  std::vector<TraceRank> kept;
  for (std::uint32_t r : traced_roles(t, memory, max_roles)) {
    TraceRank tr = std::move(t.ranks[r]);
    tr.memory = loop.ledger.device_curve(r);
    tr.peaks.reset();
    kept.push_back(std::move(tr));
  }
  t.ranks = std::move(kept);
}

}  // namespace zerosim::sim
