// The summary and the in-memory trace of a simulation (engine.h, trace.h), both derived from the
// event loop's op times and the per-role memory analysis. Nothing here iterates over ranks: roles
// stand for them, and only the few traced roles get memory counters.
#include <algorithm>
#include <array>
#include <string>

#include "engine/simulator_internal.h"

namespace zerosim::sim {
namespace {

bool is_compute(OpKind k) {
  return k == OpKind::Forward || k == OpKind::Backward || k == OpKind::Recompute;
}

void add_steps(const Program& p, const LoopOutput& loop, std::uint32_t steps, Summary& out) {
  out.steps.resize(steps);
  for (std::uint32_t k = 0; k < out.steps.size(); ++k) out.steps[k].step = k;
  std::vector<SimTime> end(steps, -1);
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    const CompiledOp& op = p.ops[i];
    const OpTiming& t = loop.ops[i];
    out.total_ns = std::max(out.total_ns, t.end_ns);
    if (op.phase == Phase::Init) {
      out.init_ns = std::max(out.init_ns, t.end_ns);
      continue;
    }
    if (op.step >= out.steps.size()) continue;
    StepSummary& st = out.steps[op.step];
    end[op.step] = std::max(end[op.step], t.end_ns);
    if (is_compute(op.kind)) st.compute_ns += t.end_ns - t.start_ns;
    if (op.stream == Stream::Compute && op.kind == OpKind::Collective)
      st.exposed_comm_ns += t.end_ns - t.start_ns;
    if (loop.blocked_by[i] == Blocker::Comm) st.exposed_comm_ns += loop.blocked_ns[i];
    if (loop.blocked_by[i] == Blocker::Offload) st.exposed_offload_ns += loop.blocked_ns[i];
  }
  SimTime prev = out.init_ns;
  for (std::uint32_t k = 0; k < out.steps.size(); ++k) {
    StepSummary& st = out.steps[k];
    st.start_ns = prev;
    st.end_ns = std::max(prev, end[k]);
    prev = st.end_ns;
    out.compute_ns += st.compute_ns;
    out.exposed_comm_ns += st.exposed_comm_ns;
    out.exposed_offload_ns += st.exposed_offload_ns;
  }
}

void add_comm(const Program& p, const LoopOutput& loop, Summary& out) {
  std::array<CommKindSummary, kCollectiveKindCount> by_kind{};
  for (const CollectiveCall& call : p.collectives) {
    const CollectiveCost& c = call.cost;
    CommKindSummary& k = by_kind[static_cast<std::size_t>(call.kind)];
    k.calls += 1;
    k.bytes += c.algbw_bytes;
    k.bytes_sent += c.bytes_sent_per_rank;
    k.bytes_received += c.bytes_sent_per_rank;  // ring: every rank receives what it sends
    k.time_ns += loop.ops[call.op].end_ns - loop.ops[call.op].start_ns;
  }
  for (std::size_t k = 0; k < kCollectiveKindCount; ++k) {
    if (by_kind[k].calls == 0) continue;
    by_kind[k].kind = kAllCollectiveKinds[k];
    out.comm.push_back(by_kind[k]);
  }
}

void add_memory(const Schedule& s, const std::vector<RoleMemory>& memory, Summary& out) {
  for (std::uint32_t r = 0; r < memory.size(); ++r) {
    RolePeakSummary p;
    p.role = r;
    p.rank = r < s.roles.size() ? s.roles[r].representative : 0;
    p.rank_count = r < s.roles.size() ? s.roles[r].rank_count() : s.meta.world;
    p.device = memory[r].device;
    p.steady = memory[r].steady;
    p.host_peak = memory[r].host.bytes;
    out.peaks.push_back(p);
    if (out.peaks[r].device.bytes > out.peaks[out.peak_role].device.bytes) out.peak_role = r;
    if (out.peaks[r].steady.bytes > out.peaks[out.steady_peak_role].steady.bytes)
      out.steady_peak_role = r;
    const auto& oom = memory[r].oom;
    if (!oom) continue;
    out.oom_ranks += p.rank_count;
    if (!out.oom || oom->t < out.oom->t) {
      out.oom = oom;
      out.oom_rank = p.rank;
    }
  }
}

}  // namespace

Summary make_summary(const Program& p, const LoopOutput& loop, std::uint32_t steps) {
  Summary out;
  add_steps(p, loop, steps, out);
  add_comm(p, loop, out);
  out.steady_from_ns = out.steps.empty() ? out.init_ns : out.steps.back().start_ns;
  return out;
}

void add_memory_summary(const Schedule& s, const std::vector<RoleMemory>& memory, Summary& out) {
  add_memory(s, memory, out);
}

namespace {

Span make_span(const Schedule& s, const Program& p, const LoopOutput& loop, std::uint32_t i) {
  const Op& op = s.ops[i];
  Span sp;
  sp.stream = op.stream;
  sp.op = i;
  sp.name = op.label.empty() ? std::string(op_kind_name(op.kind)) : op.label;
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
  return sp;
}

CommRecord make_comm(const Schedule& s, const Op& op, std::uint32_t i, const CollectiveCost& c,
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
  r.group_size = s.comms[op.comm].size;
  r.bytes = c.algbw_bytes;
  r.bytes_sent = c.bytes_sent_per_rank;
  r.bytes_received = c.bytes_sent_per_rank;
  r.start_ns = loop.ops[i].start_ns;
  r.dur_ns = loop.ops[i].end_ns - loop.ops[i].start_ns;
  if (r.dur_ns > 0) {
    r.algbw_gbps = static_cast<double>(r.bytes) / static_cast<double>(r.dur_ns);  // B/ns = GB/s
    r.busbw_gbps = r.algbw_gbps * c.busbw_factor;
  }
  r.algorithm = c.algorithm;
  return r;
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
  const auto rank_of = [&](std::uint32_t r) {
    return r < s.roles.size() ? s.roles[r].representative : 0;
  };
  std::sort(roles.begin(), roles.end(),
            [&](std::uint32_t a, std::uint32_t b) { return rank_of(a) < rank_of(b); });
  return roles;
}

}  // namespace

Trace make_trace(const Schedule& s, const Program& p, const LoopOutput& loop,
                 const std::vector<RoleMemory>& memory, const TraceMeta& meta,
                 std::uint32_t max_roles) {
  Trace t;
  t.meta = meta;
  for (std::uint32_t r : traced_roles(s, memory, max_roles)) {
    TraceRank tr;
    tr.role = r;
    tr.rank = r < s.roles.size() ? s.roles[r].representative : 0;
    tr.rank_count = r < s.roles.size() ? s.roles[r].rank_count() : s.meta.world;
    tr.memory = loop.ledger.device_curve(r);
    t.ranks.push_back(std::move(tr));
  }
  std::size_t next_call = 0;  // p.collectives is in program order
  for (std::uint32_t i = 0; i < s.ops.size(); ++i) {
    const Op& op = s.ops[i];
    if (op.kind == OpKind::Alloc || op.kind == OpKind::Free) continue;
    t.spans.push_back(make_span(s, p, loop, i));
    if (next_call >= p.collectives.size() || p.collectives[next_call].op != i) continue;
    t.spans.back().comm = static_cast<std::uint32_t>(t.comms.size());
    t.comms.push_back(make_comm(s, op, i, p.collectives[next_call++].cost, loop));
  }
  std::stable_sort(t.spans.begin(), t.spans.end(),
                   [](const Span& a, const Span& b) { return a.start_ns < b.start_ns; });
  return t;
}

}  // namespace zerosim::sim
