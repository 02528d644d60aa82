// The event loop of simulate() (engine.h) and the memory ledger filled from its times.
//
// The loop is ns-3's ProcessOneEvent: pop the earliest completion, finish that op, then start every
// op that has become startable. "Startable" is decided only at event times, and an op can only
// become startable when something it waits for finishes, so starting at `now` is exact. Among
// startable stream heads the lowest program index starts first (a fixed order, hence deterministic
// memory events at equal times). Zero-cost ops finish inline without going through the queue.
#include <algorithm>
#include <array>
#include <limits>
#include <string>
#include <utility>

#include "engine/simulator_internal.h"

namespace zerosim::sim {
namespace {

constexpr std::uint32_t kOpDone = 1;  // EventQueue kind: a = op index

// One ledger buffer per schedule buffer (same index). A slot buffer lists only the roles where it
// is non-zero; the per-slot lists are computed once (roles x slots, the size of the role table).
// Ledger buffers are unnamed: the names stay in the schedule (a copy of each would be a heap
// allocation per buffer on every simulation); record_memory and simulate() put them back into the
// messages and the OOM event.
MemoryLedger make_ledger(const Schedule& s, const std::vector<std::uint32_t>& memory_ops) {
  MemoryLedger ledger(static_cast<std::uint32_t>(std::max<std::size_t>(s.roles.size(), 1)));
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
  return ledger;
}

// Memory events follow PROGRAM order, as the CUDA caching allocator sees them: the host allocates
// and frees when it issues an op, in program order (stream-ordered reuse makes that safe), so
// torch.cuda.max_memory_allocated is a function of that order, not of when streams run. The
// schedule's lifetimes are valid in program order (lower_schedule, schedule_graph.h), while stream
// times may interleave them differently (a prefetch on the gather stream can run before an earlier
// free on the compute stream). Each event is stamped with its op's start time, raised to the
// previous memory event's stamp so that the memory curve's time axis never goes back.
// `start_ns`: per op, its start (nullptr: every event stamped 0, the memory-only ledger). `ops`:
// the compiled ops or the schedule's (kind and buffer are the same; the compiled ones are smaller).
template <class OpList>
Diagnostics record_memory(const Schedule& s, const OpList& ops,
                          const std::vector<std::uint32_t>& memory_ops,
                          const std::vector<OpTiming>* start_ns, MemoryLedger& ledger) {
  Diagnostics d;
  SimTime t = 0;
  for (std::uint32_t i : memory_ops) {
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
  EventLoop(const Schedule& s, const Program& p, LoopOutput& out) : s_(s), p_(p), out_(out) {
    done_.assign(p.ops.size(), 0);
    for (std::uint8_t l = 0; l < kStreamCount; ++l) {
      if (!p.lanes()[l].empty()) used_[used_count_++] = l;  // most programs use 2-3 streams
      waiting_[l] = p.lanes()[l].empty() ? kNone : p.lanes()[l][0];
    }
  }

  Diagnostics run() {
    start_ready(0);
    while (!failed_) {
      const auto e = queue_.pop();
      if (!e) break;
      finish(e->a, e->t);
      start_ready(e->t);
    }
    if (!failed_ && prefix_done_ < p_.ops.size()) report_deadlock();
    return std::move(diags_);
  }

 private:
  // Whether the head op i of stream `lane` may start. Deps only ever become done, so the scan
  // resumes where it stopped (dep_pos_): an op waiting on many deps costs O(deps) in total.
  bool startable(std::uint32_t i, std::size_t lane) {
    const CompiledOp& op = p_.ops[i];
    if (op.gate != kNone && done_[op.gate] == 0) return false;
    if (op.prev_call != kNone && done_[op.prev_call] == 0) return false;
    if (op.kind == OpKind::Sync && prefix_done_ < i) return false;
    std::uint32_t& k = dep_pos_[lane];
    if (k < op.deps_begin) k = op.deps_begin;
    while (k < op.deps_end && done_[p_.deps()[k]] != 0) ++k;
    return k == op.deps_end;
  }

  // Starts startable stream heads, lowest program index first, until none is left.
  void start_ready(SimTime now) {
    for (;;) {
      std::uint32_t pick = kNone;
      for (std::size_t u = 0; u < used_count_; ++u) {
        const std::size_t l = used_[u];
        const std::uint32_t i = waiting_[l];  // kNone (never below pick): busy or drained
        if (i < pick && startable(i, l)) pick = i;
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
    if (!queue_.schedule(now + dur, kOpDone, i)) {
      diags_.error("simulator", "/ops/" + std::to_string(i), "internal error: event in the past");
      failed_ = true;
    }
  }

  // Idle time of the compute stream before op i, and the stream of what it waited for last.
  void note_blocking(std::uint32_t i, SimTime now) {
    if (now <= compute_free_) return;
    const CompiledOp& op = p_.ops[i];
    std::uint32_t blocker = kNone;
    SimTime latest = -1;
    const auto consider = [&](std::uint32_t j) {
      if (j != kNone && out_.ops[j].end_ns > latest) {
        latest = out_.ops[j].end_ns;
        blocker = j;
      }
    };
    for (std::uint32_t k = op.deps_begin; k < op.deps_end; ++k) consider(p_.deps()[k]);
    consider(op.gate);
    consider(op.prev_call);
    if (op.kind == OpKind::Sync) consider(latest_op_);
    out_.blocked_ns[i] = now - compute_free_;
    out_.blocker[i] = blocker;
  }

  void finish(std::uint32_t i, SimTime now) {
    const CompiledOp& op = p_.ops[i];
    out_.ops[i].end_ns = now;
    done_[i] = 1;
    const auto lane = static_cast<std::size_t>(op.stream);  // idle: its next op waits
    waiting_[lane] = head_[lane] < p_.lanes()[lane].size() ? p_.lanes()[lane][head_[lane]] : kNone;
    if (op.stream == Stream::Compute) compute_free_ = now;
    if (now >= latest_end_) {  // ties: the later finisher, as the blocker of a Sync
      latest_end_ = now;
      latest_op_ = i;
    }
    if (i == prefix_done_)  // the prefix only grows when its first unfinished op finishes
      while (prefix_done_ < done_.size() && done_[prefix_done_] != 0) ++prefix_done_;
  }

  void report_deadlock() {
    for (std::size_t l = 0; l < kStreamCount; ++l) {
      if (head_[l] >= p_.lanes()[l].size()) continue;
      const std::uint32_t i = p_.lanes()[l][head_[l]];
      const CompiledOp& op = p_.ops[i];
      std::string why;
      if (op.gate != kNone && done_[op.gate] == 0)
        why = "the sync at op " + std::to_string(op.gate);
      if (op.prev_call != kNone && done_[op.prev_call] == 0)
        why = "the collective at op " + std::to_string(op.prev_call);
      for (std::uint32_t k = op.deps_begin; k < op.deps_end; ++k)
        if (done_[p_.deps()[k]] == 0)
          why = "op " + std::to_string(p_.deps()[k]) + " " + quote(s_.ops[p_.deps()[k]].label);
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
  EventQueue queue_;
  std::array<std::size_t, kStreamCount> head_{};
  std::array<std::uint32_t, kStreamCount> dep_pos_{};  // deps of the head op known to be done
  // Per stream: its head op p_.lanes()[l][head_[l]] while the stream is idle; kNone while it runs
  // an op or once it has drained (one test per stream in start_ready's scan).
  std::array<std::uint32_t, kStreamCount> waiting_{};
  std::array<std::uint8_t, kStreamCount> used_{};  // streams with ops
  std::size_t used_count_ = 0;
  std::vector<std::uint8_t> done_;
  std::size_t prefix_done_ = 0;      // ops [0, prefix_done_) have all finished
  SimTime compute_free_ = 0;         // end of the last compute-stream op
  std::uint32_t latest_op_ = kNone;  // the op that finished last
  SimTime latest_end_ = std::numeric_limits<SimTime>::min();  // its end
};

}  // namespace

Result<LoopOutput> run_event_loop(const Schedule& s, const Program& p) {
  LoopOutput out;
  const std::size_t n = p.ops.size();
  out.ops.resize(n);
  out.blocked_ns.assign(n, 0);
  out.blocker.assign(n, kNone);
  EventLoop loop(s, p, out);
  Diagnostics d = loop.run();
  if (d.has_errors()) return d;
  out.ledger = make_ledger(s, p.memory_ops());
  d = record_memory(s, p.ops, p.memory_ops(), &out.ops, out.ledger);
  if (d.has_errors()) return d;
  return out;
}

}  // namespace zerosim::sim

namespace zerosim {

Result<MemoryLedger> memory_ledger(const Schedule& schedule, const ScheduleGraph& graph) {
  MemoryLedger ledger = sim::make_ledger(schedule, graph.memory_ops);
  Diagnostics d = sim::record_memory(schedule, schedule.ops, graph.memory_ops, nullptr, ledger);
  if (d.has_errors()) return d;
  return ledger;
}

}  // namespace zerosim
