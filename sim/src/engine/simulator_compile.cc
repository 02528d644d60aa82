// compile() (simulator_internal.h): one pass over the lowered schedule (schedule_graph.h, which
// checked it and holds the lanes, deps, Sync gates and communicator order) that costs every op for
// the timing role and copies what the event loop reads per op into one compact record.
#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "engine/simulator_internal.h"

namespace zerosim::sim {
namespace {

bool is_compute(OpKind k) {
  return k == OpKind::Forward || k == OpKind::Backward || k == OpKind::Recompute;
}

// Compute ops per (kind, layer) in the first micro-step: how many pieces one layer's pass is split
// into (stage 3 runs a layer in one piece per module holding params; stages 0-2 in one). A flat
// table (the op's layer + 1, kNone at 0), counted during compile's pass over the ops and looked up
// once per compute op after it.
class PiecesPerLayer {
 public:
  void count(OpKind kind, std::uint32_t layer) {
    const std::size_t at = index(kind, layer);
    if (at >= n_.size()) n_.resize(at + 1, 0);
    ++n_[at];
  }
  /// 1 for a pass with no op in the first micro-step.
  std::uint32_t operator()(OpKind kind, std::uint32_t layer) const {
    const std::size_t at = index(kind, layer);
    return at < n_.size() && n_[at] != 0 ? n_[at] : 1;
  }

 private:
  static std::size_t index(OpKind kind, std::uint32_t layer) {
    const std::size_t k = kind == OpKind::Forward ? 0 : kind == OpKind::Backward ? 1 : 2;
    return 3 * (layer == kNone ? 0 : std::size_t{layer} + 1) + k;
  }
  std::vector<std::uint32_t> n_;  // [3 * (layer + 1) + compute kind]
};

// host_compute_ns, rounded, per (compute kind, pieces): every layer of a model has the same few
// values, so each is computed once.
class HostTimes {
 public:
  HostTimes(const HostCosts& h, bool stage3) : h_(h), stage3_(stage3) {}
  SimTime operator()(OpKind kind, std::uint32_t pieces) {
    for (const Entry& e : seen_)
      if (e.kind == kind && e.pieces == pieces) return e.ns;
    const auto ns = static_cast<SimTime>(std::llround(host_compute_ns(h_, kind, pieces, stage3_)));
    seen_.push_back({kind, pieces, ns});
    return ns;
  }

 private:
  struct Entry {
    OpKind kind;
    std::uint32_t pieces;
    SimTime ns;
  };
  const HostCosts& h_;
  bool stage3_;
  std::vector<Entry> seen_;
};

// Kinds without a cost: the compiled op's zero duration and bytes stand.
constexpr bool costed_kind(OpKind k) {
  switch (k) {
    case OpKind::Alloc:
    case OpKind::Free:
    case OpKind::GradReady:
    case OpKind::GradNorm:      // today's time model has no cost for the local norm and
    case OpKind::GradOverflow:  // overflow check (their all-reduces are costed)
    case OpKind::Sync:
    case OpKind::Marker:
      return false;
    default:
      return true;
  }
}
// As a table: one load per op instead of the switch's compare chain.
constexpr std::array<bool, kOpKindCount> kCosted = [] {
  std::array<bool, kOpKindCount> t{};
  for (std::size_t k = 0; k < kOpKindCount; ++k) t[k] = costed_kind(static_cast<OpKind>(k));
  return t;
}();
bool costed(OpKind k) {
  const auto at = static_cast<std::size_t>(k);
  return at < kOpKindCount && kCosted[at];
}

// Costs op i (a costed kind) into p (collectives are costed once per distinct call: one
// all-gather per layer repeats the same sizes).
void cost_op(const Op& op, std::uint32_t i, Elements elements, const CommGroup& comm,
             const CostModel& cost, SeenCalls& seen, Program& p, Diagnostics& d) {
  if (op.kind == OpKind::Collective) {
    const CallKey key{op.collective, op.numel, op.out_numel, op.dtype, op.comm};
    if (const std::size_t* at = seen.find(key)) {
      CollectiveCall call = p.collectives[*at];
      // The first call's op duration: the collective's cost plus the host's launch of it (the
      // collective cost alone would charge the launch to the first of identical calls only).
      p.ops[i].duration_ns = p.ops[call.op].duration_ns;
      call.op = i;
      p.bytes[i] = call.cost.algbw_bytes;
      p.collectives.push_back(call);
      return;
    }
  }
  OpCost c;
  if (!cost.try_cost(op, elements, comm, c)) {
    auto why = cost.cost(op, elements, comm);
    for (Diagnostic x : why.diagnostics().items()) {
      x.pointer = "/ops/" + std::to_string(i);
      d.add(std::move(x));
    }
    return;
  }
  p.ops[i].duration_ns = c.duration_ns;
  p.bytes[i] = c.bytes;
  if (!c.collective) return;
  seen.insert(CallKey{op.collective, op.numel, op.out_numel, op.dtype, op.comm},
              p.collectives.size());
  p.collectives.push_back({i, op.collective, *c.collective});
}

}  // namespace

void SeenCalls::clear() {
  if (slots_.empty()) {
    slots_.resize(256);
    mask_ = slots_.size() - 1;
    shift_ = 64 - 8;
  }
  if (used_ != 0)
    for (Slot& x : slots_) x.used = false;
  used_ = 0;
}

void SeenCalls::insert(const CallKey& key, std::size_t index) {
  if (4 * (used_ + 1) > slots_.size()) {  // at most a quarter full: probes stay short
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    mask_ = slots_.size() - 1;
    --shift_;
    used_ = 0;
    for (const Slot& x : old)
      if (x.used) insert(x.key, x.index);
  }
  std::size_t at = home(key);
  while (slots_[at].used) at = (at + 1) & mask_;
  slots_[at] = {key, index, true};
  ++used_;
}

Diagnostics compile(const Schedule& s, const ScheduleGraph& graph, const CostModel& cost,
                    Program& p, CompileScratch& scratch) {
  p.graph = &graph;
  Diagnostics d;
  const auto n = static_cast<std::uint32_t>(s.ops.size());
  p.ops.resize_for_overwrite(n);  // every element written below
  p.bytes.resize_for_overwrite(n);
  p.collectives.clear();
  p.collectives.reserve(graph.collectives.size());
  SeenCalls& seen = scratch.seen;
  seen.clear();
  PiecesPerLayer pieces;
  std::vector<std::uint32_t>& compute_ops = scratch.compute_ops;  // host time: once pieces known
  compute_ops.clear();
  compute_ops.reserve(n);
  const std::uint32_t first_step = s.ops.empty() ? 0 : s.ops.front().step;
  // Raw pointers in locals: through the arrays' owners the compiler reloads them after each store.
  CompiledOp* const ops = p.ops.data();
  Bytes* const bytes = p.bytes.data();
  const Op* const sops = s.ops.data();
  for (std::uint32_t i = 0; i < n; ++i) {
    const Op& op = sops[i];
    ops[i] = {0, op.kind, op.stream, op.phase, op.step};
    bytes[i] = 0;
    if (!costed(op.kind)) continue;  // most ops (allocs, frees, grad-ready markers)
    // lower_schedule checked every collective's comm index.
    const CommGroup& comm = op.kind == OpKind::Collective ? s.comms[op.comm] : s.comms.front();
    cost_op(op, i, op.slot == kNone ? op.elements : graph.max_slots[op.slot], comm, cost, seen, p,
            d);
    if (is_compute(op.kind)) {
      compute_ops.push_back(i);
      if (op.step == first_step && op.micro_step == 0) pieces.count(op.kind, op.layer);
    }
  }
  // The host issues a compute op's kernels (and stage 3's hooks) before the GPU runs them.
  HostTimes host(cost.host(), s.meta.stage == 3 && s.meta.mode == "deepspeed");
  for (std::uint32_t i : compute_ops) {
    const Op& op = s.ops[i];
    SimTime& dur = p.ops[i].duration_ns;
    dur = std::max(dur, host(op.kind, pieces(op.kind, op.layer)));
  }
  return d;
}

}  // namespace zerosim::sim
