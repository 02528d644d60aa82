// compile() (simulator_internal.h): one pass over the lowered schedule (schedule_graph.h, which
// checked it and holds the lanes, deps, Sync gates and communicator order) that costs every op for
// the timing role and copies what the event loop reads per op into one compact record.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "engine/simulator_internal.h"

namespace zerosim::sim {
namespace {

using CallKey = std::tuple<CollectiveKind, Elements, Elements, DType, std::uint32_t>;

using SeenCalls = std::map<CallKey, std::size_t>;

bool is_compute(OpKind k) {
  return k == OpKind::Forward || k == OpKind::Backward || k == OpKind::Recompute;
}

// Compute ops per (kind, layer) in the first micro-step: how many pieces one layer's pass is split
// into (stage 3 runs a layer in one piece per module holding params; stages 0-2 in one). A flat
// table (the op's layer + 1, kNone at 0), looked up once per compute op.
class PiecesPerLayer {
 public:
  explicit PiecesPerLayer(const Schedule& s) {
    const std::uint32_t first_step = s.ops.empty() ? 0 : s.ops.front().step;
    for (const Op& op : s.ops)
      if (is_compute(op.kind) && op.step == first_step && op.micro_step == 0) {
        const std::size_t at = index(op.kind, op.layer);
        if (at >= n_.size()) n_.resize(at + 1, 0);
        ++n_[at];
      }
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

// Costs op i into p (collectives are costed once per distinct call: one all-gather per layer
// repeats the same sizes).
void cost_op(const Op& op, std::uint32_t i, Elements elements, const CommGroup& comm,
             const CostModel& cost, SeenCalls& seen, Program& p, Diagnostics& d) {
  switch (op.kind) {  // no cost: the compiled op's zero duration and bytes stand
    case OpKind::Alloc:
    case OpKind::Free:
    case OpKind::GradReady:
    case OpKind::GradNorm:      // today's time model has no cost for the local norm and
    case OpKind::GradOverflow:  // overflow check (their all-reduces are costed)
    case OpKind::Sync:
    case OpKind::Marker:
      return;
    default:
      break;
  }
  if (op.kind == OpKind::Collective) {
    const CallKey key{op.collective, op.numel, op.out_numel, op.dtype, op.comm};
    if (auto it = seen.find(key); it != seen.end()) {
      CollectiveCall call = p.collectives[it->second];
      call.op = i;
      p.ops[i].duration_ns = call.cost.duration_ns;
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
  seen.emplace(CallKey{op.collective, op.numel, op.out_numel, op.dtype, op.comm},
               p.collectives.size());
  p.collectives.push_back({i, op.collective, *c.collective});
}

}  // namespace

Result<Program> compile(const Schedule& s, const ScheduleGraph& graph, const CostModel& cost) {
  Program p;
  p.graph = &graph;
  Diagnostics d;
  const auto n = static_cast<std::uint32_t>(s.ops.size());
  p.ops.resize(n);
  p.bytes.assign(n, 0);
  p.collectives.reserve(graph.collectives.size());
  SeenCalls seen;
  const PiecesPerLayer pieces(s);
  const bool stage3 = s.meta.stage == 3 && s.meta.mode == "deepspeed";
  for (std::uint32_t i = 0; i < n; ++i) {
    const Op& op = s.ops[i];
    CompiledOp& c = p.ops[i];
    c.kind = op.kind;
    c.stream = op.stream;
    c.phase = op.phase;
    c.step = op.step;
    c.buffer = op.buffer;
    c.gate = graph.gate[i];
    c.prev_call = graph.prev_call[i];
    c.deps_begin = graph.dep_offsets[i];
    c.deps_end = graph.dep_offsets[i + 1];
    // lower_schedule checked every collective's comm index.
    const CommGroup& comm = op.kind == OpKind::Collective ? s.comms[op.comm] : s.comms.front();
    cost_op(op, i, op.slot == kNone ? op.elements : graph.max_slots[op.slot], comm, cost, seen, p,
            d);
    if (is_compute(op.kind)) {  // the host issues the op's kernels (and stage 3's hooks) first
      const double host = host_compute_ns(cost.host(), op.kind, pieces(op.kind, op.layer), stage3);
      c.duration_ns = std::max<SimTime>(c.duration_ns, static_cast<SimTime>(std::llround(host)));
    }
  }
  if (d.has_errors()) return d;
  return p;
}

}  // namespace zerosim::sim
