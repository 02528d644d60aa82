// The event loop of simulate() (engine.h) and the memory ledger filled from its times.
//
// The loop is ns-3's ProcessOneEvent: pop the earliest completion, finish that op, then start every
// op that has become startable. "Startable" is decided only at event times, and an op can only
// become startable when something it waits for finishes, so starting at `now` is exact. Among
// startable stream heads the lowest program index starts first (a fixed order, hence deterministic
// memory events at equal times). Zero-cost ops finish inline without going through the queue.
// The future-event list is one pending completion per stream: a stream runs one op at a time, so
// at most kStreamCount events are ever pending, and the earliest by (time, scheduling order) — the
// EventQueue's order (event_queue.h) — is found by scanning them; the radix heap's refills cost
// more than that scan at this size.
#include <algorithm>
#include <array>
#include <limits>
#include <string>
#include <utility>

#include "engine/simulator_internal.h"

namespace zerosim::sim {
namespace {

// One ledger buffer per schedule buffer (same index). A slot buffer lists only the roles where it
// is non-zero; the per-slot lists are computed once (roles x slots, the size of the role table).
// Ledger buffers are unnamed: the names stay in the schedule (a copy of each would be a heap
// allocation per buffer on every simulation); record_memory and simulate() put them back into the
// messages and the OOM event.
// `ledger` is reset first (its arrays kept: EngineWorkspace::recycle hands a result's back).
void make_ledger(const Schedule& s, const std::vector<std::uint32_t>& memory_ops,
                 MemoryLedger& ledger) {
  ledger.reset(static_cast<std::uint32_t>(std::max<std::size_t>(s.roles.size(), 1)));
  ledger.reserve(s.buffers.size(), memory_ops.size());
  std::vector<std::vector<RoleBytes>> by_slot(s.meta.slot_names.size());  // elements, not bytes
  std::vector<std::uint8_t> used(by_slot.size(), 0);
  for (const Buffer& b : s.buffers)
    if (b.slot != kNone && b.slot < used.size()) used[b.slot] = 1;
  std::vector<std::uint32_t> used_slots;
  for (std::uint32_t k = 0; k < used.size(); ++k)
    if (used[k] != 0) used_slots.push_back(k);
  // A slot with the same value on every role makes common buffers (one size, no per-role list):
  // the same sizes, without a list per buffer. Stage 3 and single-role schedules are all like that.
  // Only non-zero values are stored (SlotValues): a slot is uniform when every role has a value
  // and all are role 0's, or when no role has one.
  std::vector<std::uint8_t> uniform(by_slot.size(), 1);
  for (std::uint32_t r = 0; r < s.roles.size(); ++r)
    for (const SlotValues::Entry& e : s.roles[r].slots.nonzero())
      if (e.slot < used.size() && used[e.slot] != 0) by_slot[e.slot].push_back({r, e.value});
  for (std::uint32_t k : used_slots) {
    const std::vector<RoleBytes>& v = by_slot[k];
    if (v.empty()) continue;
    uniform[k] = v.size() == s.roles.size() &&
                 std::all_of(v.begin(), v.end(),
                             [&](const RoleBytes& x) { return x.bytes == v.front().bytes; });
  }
  for (const Buffer& buf : s.buffers) {
    const Bytes size = dtype_size(buf.dtype);
    if (buf.slot == kNone || buf.slot >= by_slot.size()) {
      ledger.add_buffer({}, buf.category, buf.pool, buf.numel * size);
      continue;
    }
    if (uniform[buf.slot] != 0 && !s.roles.empty()) {
      ledger.add_buffer({}, buf.category, buf.pool, s.roles[0].slots[buf.slot] * size);
      continue;
    }
    std::vector<RoleBytes> sizes = by_slot[buf.slot];
    for (RoleBytes& r : sizes) r.bytes *= size;
    (void)ledger.add_sparse_role_buffer({}, buf.category, buf.pool, std::move(sizes));
  }
}

// Memory events follow PROGRAM order, as the CUDA caching allocator sees them: the host allocates
// and frees when it issues an op, in program order (stream-ordered reuse makes that safe), so
// torch.cuda.max_memory_allocated is a function of that order, not of when streams run. The
// schedule's lifetimes are valid in program order (lower_schedule, schedule_graph.h), while stream
// times may interleave them differently (a prefetch on the gather stream can run before an earlier
// free on the compute stream). Each event is stamped with its op's start time, raised to the
// previous memory event's stamp so that the memory curve's time axis never goes back.
// `start_ns`: per op, its start (nullptr: every event stamped 0, the memory-only ledger).
Diagnostics record_memory(const Schedule& s, const std::vector<Op>& ops,
                          const std::vector<std::uint32_t>& memory_ops,
                          const std::vector<OpTiming>* start_ns, MemoryLedger& ledger) {
  Diagnostics d;
  SimTime t = 0;
  // The memory ops are spread over the program's 240-byte Ops, an index list the hardware
  // prefetcher does not follow: each one's line is asked for a few iterations ahead (3 % of
  // Llama-2-70B stage 3's simulate(), bench/simulate_bench.cc).
  constexpr std::size_t kAhead = 8;
  const std::size_t n = memory_ops.size();
  for (std::size_t k = 0; k < n; ++k) {
    if (k + kAhead < n) __builtin_prefetch(&ops[memory_ops[k + kAhead]]);
    const std::uint32_t i = memory_ops[k];
    const auto& op = ops[i];
    if (start_ns) t = std::max(t, (*start_ns)[i].start_ns);
    const bool alloc = op.kind == OpKind::Alloc;
    if (alloc ? ledger.try_allocate(op.buffer, t) : ledger.try_release(op.buffer, t)) continue;
    // The message only on the error path (try_* recorded nothing).
    if (auto bad = alloc ? ledger.allocate(op.buffer, t) : ledger.release(op.buffer, t)) {
      const std::string id = "#" + std::to_string(op.buffer);  // the unnamed ledger buffer's label
      if (const auto at = bad->message.find(id); at != std::string::npos)
        bad->message.replace(at, id.size(), quote(s.buffers[op.buffer].name));
      bad->pointer = "/ops/" + std::to_string(i);
      d.add(std::move(*bad));
    }
  }
  return d;
}

class EventLoop {
 public:
  EventLoop(const Schedule& s, const Program& p, LoopOutput& out)
      : s_(s),
        p_(p),
        out_(out),
        gate_(p.graph->gate.data()),
        prev_call_(p.graph->prev_call.data()),
        dep_offsets_(p.graph->dep_offsets.data()),
        deps_(p.graph->deps.data()),
        done_((out.done.assign(p.ops.size(), LoopOutput::Done::No), out.done.data())) {
    blocked_on_.fill(kNone);
    for (std::uint8_t l = 0; l < kStreamCount; ++l) {
      if (!p.lanes()[l].empty()) used_[used_count_++] = l;  // most programs use 2-3 streams
      waiting_[l] = p.lanes()[l].empty() ? kNone : p.lanes()[l][0];
    }
  }

  Diagnostics run() {
    SimTime now = 0;
    for (;;) {  // one call site of start_ready, so that it is inlined into the loop
      start_ready(now);
      if (failed_ || pending_ == 0) break;
      // The earliest pending completion; ties: the one scheduled first (EventQueue's order).
      std::size_t next = kStreamCount;
      for (std::size_t u = 0; u < used_count_; ++u) {
        const std::size_t l = used_[u];
        if (seq_[l] == 0) continue;
        if (next == kStreamCount || end_at_[l] < end_at_[next] ||
            (end_at_[l] == end_at_[next] && seq_[l] < seq_[next]))
          next = l;
      }
      seq_[next] = 0;
      --pending_;
      now = end_at_[next];
      finish(running_[next], now);
    }
    if (!failed_ && prefix_done_ < p_.ops.size()) report_deadlock();
    return std::move(diags_);
  }

 private:
  using Done = LoopOutput::Done;
  bool done(std::uint32_t i) const { return done_[i] == Done::Yes; }

  // kNone when the head op i of stream `lane` may start; otherwise an unfinished op it waits for
  // (its gate, its previous call, the first unfinished op before a Sync, or a dep): until that op
  // finishes the answer stays no. Deps only ever become done, so the scan resumes where it stopped
  // (dep_pos_): an op waiting on many deps costs O(deps) in total.
  std::uint32_t waits_on(std::uint32_t i, std::size_t lane) {
    const std::uint32_t gate = gate_[i], prev = prev_call_[i];
    if (gate != kNone && !done(gate)) return gate;
    if (prev != kNone && !done(prev)) return prev;
    if (p_.ops[i].kind == OpKind::Sync && prefix_done_ < i)
      return static_cast<std::uint32_t>(prefix_done_);
    std::uint32_t& k = dep_pos_[lane];
    const std::uint32_t begin = dep_offsets_[i], end = dep_offsets_[i + 1];
    if (k < begin) k = begin;
    while (k < end && done(deps_[k])) ++k;
    return k == end ? kNone : deps_[k];
  }

  // Starts startable stream heads, lowest program index first, until none is left. A head that
  // waits on an unfinished op is not tested again before that op finishes (blocked_on_).
  [[gnu::always_inline]] void start_ready(SimTime now) {
    const std::size_t used_count = used_count_;
    for (;;) {
      std::uint32_t pick = kNone;
      for (std::size_t u = 0; u < used_count; ++u) {
        const std::size_t l = used_[u];
        const std::uint32_t i = waiting_[l];  // kNone (never below pick): busy or drained
        if (i >= pick) continue;
        std::uint32_t& on = blocked_on_[l];
        if (on != kNone && !done(on)) continue;
        on = waits_on(i, l);
        if (on == kNone) pick = i;
      }
      if (pick == kNone) return;
      start(pick, now);
      if (failed_) return;
    }
  }

  // Inlined into start_ready's loop: it runs once per op, and the call itself was a fifth of it.
  [[gnu::always_inline]] void start(std::uint32_t i, SimTime now) {
    const CompiledOp& op = p_.ops[i];
    const auto lane = static_cast<std::size_t>(op.stream);
    ++head_[lane];
    waiting_[lane] = kNone;  // busy until finish()
    out_.ops[i].start_ns = now;
    if (op.stream == Stream::Compute) note_blocking(i, now);
    const SimTime dur = op.duration_ns;
    if (dur == 0) {
      finish(i, now);
      return;
    }
    if (dur > std::numeric_limits<SimTime>::max() - now) {
      diags_.error(
          "simulator", "/ops/" + std::to_string(i),
          "expected a run shorter than 292 years, got an op ending beyond the SimTime range");
      failed_ = true;
      return;
    }
    if (dur < 0) {
      diags_.error("simulator", "/ops/" + std::to_string(i), "internal error: event in the past");
      failed_ = true;
      return;
    }
    end_at_[lane] = now + dur;
    seq_[lane] = next_seq_++;
    running_[lane] = i;
    ++pending_;
  }

  // Idle time of the compute stream before op i, and the stream of what it waited for last.
  void note_blocking(std::uint32_t i, SimTime now) {
    if (now <= compute_free_) return;
    std::uint32_t blocker = kNone;
    SimTime latest = -1;
    const auto consider = [&](std::uint32_t j) {
      if (j != kNone && out_.ops[j].end_ns > latest) {
        latest = out_.ops[j].end_ns;
        blocker = j;
      }
    };
    for (std::uint32_t k = dep_offsets_[i]; k < dep_offsets_[i + 1]; ++k) consider(deps_[k]);
    consider(gate_[i]);
    consider(prev_call_[i]);
    if (p_.ops[i].kind == OpKind::Sync) consider(latest_op_);
    out_.waits.push_back({i, blocker, now - compute_free_});
  }

  void finish(std::uint32_t i, SimTime now) {
    const CompiledOp& op = p_.ops[i];
    out_.ops[i].end_ns = now;
    done_[i] = Done::Yes;
    const auto lane = static_cast<std::size_t>(op.stream);  // idle: its next op waits
    waiting_[lane] = head_[lane] < p_.lanes()[lane].size() ? p_.lanes()[lane][head_[lane]] : kNone;
    blocked_on_[lane] = kNone;
    if (op.stream == Stream::Compute) compute_free_ = now;
    if (now >= latest_end_) {  // ties: the later finisher, as the blocker of a Sync
      latest_end_ = now;
      latest_op_ = i;
    }
    if (i == prefix_done_)  // the prefix only grows when its first unfinished op finishes
      while (prefix_done_ < p_.ops.size() && done(static_cast<std::uint32_t>(prefix_done_)))
        ++prefix_done_;
  }

  void report_deadlock() {
    for (std::size_t l = 0; l < kStreamCount; ++l) {
      if (head_[l] >= p_.lanes()[l].size()) continue;
      const std::uint32_t i = p_.lanes()[l][head_[l]];
      const CompiledOp& op = p_.ops[i];
      std::string why;
      if (gate_[i] != kNone && !done(gate_[i])) why = "the sync at op " + std::to_string(gate_[i]);
      if (prev_call_[i] != kNone && !done(prev_call_[i]))
        why = "the collective at op " + std::to_string(prev_call_[i]);
      for (std::uint32_t k = dep_offsets_[i]; k < dep_offsets_[i + 1]; ++k)
        if (!done(deps_[k]))
          why = "op " + std::to_string(deps_[k]) + " " + quote(s_.ops[deps_[k]].label);
      if (op.kind == OpKind::Sync && why.empty())
        why = "op " + std::to_string(prefix_done_) + " (sync)";
      diags_.error("simulator", "/ops/" + std::to_string(i),
                   "deadlock: op " + quote(s_.ops[i].label) + " on stream " +
                       std::string(stream_name(op.stream)) + " waits on " +
                       (why.empty() ? "nothing that can finish" : why));
    }
  }

  const Schedule& s_;
  const Program& p_;
  LoopOutput& out_;
  Diagnostics diags_;
  bool failed_ = false;
  // The lowering's per-op arrays (schedule_graph.h), read in place.
  const std::uint32_t* gate_;
  const std::uint32_t* prev_call_;
  const std::uint32_t* dep_offsets_;
  const std::uint32_t* deps_;
  // Per stream, while it runs an op: that op, its end and its scheduling number (0: none pending).
  std::array<SimTime, kStreamCount> end_at_{};
  std::array<std::uint64_t, kStreamCount> seq_{};
  std::array<std::uint32_t, kStreamCount> running_{};
  std::uint64_t next_seq_ = 1;
  std::size_t pending_ = 0;
  // Per stream: an unfinished op its head waits on (kNone: not known, test the head).
  std::array<std::uint32_t, kStreamCount> blocked_on_{};
  std::array<std::size_t, kStreamCount> head_{};
  std::array<std::uint32_t, kStreamCount> dep_pos_{};  // deps of the head op known to be done
  // Per stream: its head op p_.lanes()[l][head_[l]] while the stream is idle; kNone while it runs
  // an op or once it has drained (one test per stream in start_ready's scan).
  std::array<std::uint32_t, kStreamCount> waiting_{};
  std::array<std::uint8_t, kStreamCount> used_{};  // streams with ops
  std::size_t used_count_ = 0;
  // Per op: finished (LoopOutput::done, the workspace's: no allocation once warm).
  Done* const done_;
  std::size_t prefix_done_ = 0;      // ops [0, prefix_done_) have all finished
  SimTime compute_free_ = 0;         // end of the last compute-stream op
  std::uint32_t latest_op_ = kNone;  // the op that finished last
  SimTime latest_end_ = std::numeric_limits<SimTime>::min();  // its end
};

}  // namespace

Diagnostics run_event_loop(const Schedule& s, const Program& p, LoopOutput& out) {
  const std::size_t n = p.ops.size();
  // Every op's start and end are written (a run that leaves one out is a deadlock, an error): a
  // recycled result's array of the same size is reused as it is, without zeroing it first.
  out.ops.resize(n);
  out.waits.clear();  // at most one per compute-stream op: no regrowth, no copy
  out.waits.reserve(p.lanes()[static_cast<std::size_t>(Stream::Compute)].size());
  EventLoop loop(s, p, out);
  Diagnostics d = loop.run();
  if (d.has_errors()) return d;
  make_ledger(s, p.memory_ops(), out.ledger);
  return record_memory(s, s.ops, p.memory_ops(), &out.ops, out.ledger);
}

}  // namespace zerosim::sim

namespace zerosim {

Result<MemoryLedger> memory_ledger(const Schedule& schedule, const ScheduleGraph& graph) {
  MemoryLedger ledger;
  sim::make_ledger(schedule, graph.memory_ops, ledger);
  Diagnostics d = sim::record_memory(schedule, schedule.ops, graph.memory_ops, nullptr, ledger);
  if (d.has_errors()) return d;
  return ledger;
}

}  // namespace zerosim
