// compile() (simulator_internal.h): one pass over the schedule's ops that checks what the engine
// relies on (buffer, slot and stream indices, deps pointing backwards — validate_schedule checks
// more, but builds a string per op; every schedule from build_schedule or read_schedule_json has
// passed it already), costs every op for the timing role, and lays the program out as compact
// arrays: per-stream lanes, a CSR of deps, the latest Sync before each op, the previous collective
// of the same communicator (NCCL runs them one at a time, in launch order), the memory ops and the
// collective calls. Communicators are told apart by group size (every collective DeepSpeed ZeRO
// issues here is on the data-parallel group).
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "engine/simulator_internal.h"

namespace zerosim::sim {
namespace {

void check_op(const Schedule& s, const Op& op, std::size_t i, Diagnostics& d) {
  const auto err = [&](const std::string& key, const std::string& msg) {
    d.error("schedule", "/ops/" + std::to_string(i) + key, msg);
  };
  const bool needs = op.kind == OpKind::Alloc || op.kind == OpKind::Free;
  if ((needs || op.buffer != kNone) && op.buffer >= s.buffers.size())
    err("/buffer", "expected a buffer index below " + std::to_string(s.buffers.size()) + ", got " +
                       (op.buffer == kNone ? std::string("none") : std::to_string(op.buffer)));
  if (op.slot != kNone && op.slot >= s.meta.slot_names.size())
    err("/slot", "expected a slot index below " + std::to_string(s.meta.slot_names.size()) +
                     ", got " + std::to_string(op.slot));
  if (static_cast<std::size_t>(op.stream) >= kStreamCount)
    err("/stream", "expected a stream, got an out-of-range value");
  for (std::uint32_t dep : op.deps)
    if (dep >= i)
      err("/deps", "expected earlier op indices (below " + std::to_string(i) + "), got " +
                       std::to_string(dep));
}

bool op_ok(const Schedule& s, const Op& op, std::size_t i) {
  const bool needs = op.kind == OpKind::Alloc || op.kind == OpKind::Free;
  if ((needs || op.buffer != kNone) && op.buffer >= s.buffers.size()) return false;
  if (op.slot != kNone && op.slot >= s.meta.slot_names.size()) return false;
  if (static_cast<std::size_t>(op.stream) >= kStreamCount) return false;
  for (std::uint32_t dep : op.deps)
    if (dep >= i) return false;
  return true;
}

using CallKey = std::tuple<CollectiveKind, Elements, Elements, DType, std::uint32_t>;

using SeenCalls = std::map<CallKey, std::size_t>;

// Costs op i into p (collectives are costed once per distinct call: one all-gather per layer
// repeats the same sizes).
void cost_op(const Op& op, std::uint32_t i, Elements elements, const CostModel& cost,
             SeenCalls& seen, Program& p, Diagnostics& d) {
  switch (op.kind) {  // no cost: the compiled op's zero duration and bytes stand
    case OpKind::Alloc:
    case OpKind::Free:
    case OpKind::GradReady:
    case OpKind::Sync:
    case OpKind::Marker:
      return;
    default:
      break;
  }
  if (op.kind == OpKind::Collective) {
    const CallKey key{op.collective, op.numel, op.out_numel, op.dtype, op.group_size};
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
  if (!cost.try_cost(op, elements, c)) {
    auto why = cost.cost(op, elements);
    for (Diagnostic x : why.diagnostics().items()) {
      x.pointer = "/ops/" + std::to_string(i);
      d.add(std::move(x));
    }
    return;
  }
  p.ops[i].duration_ns = c.duration_ns;
  p.bytes[i] = c.bytes;
  if (!c.collective) return;
  seen.emplace(CallKey{op.collective, op.numel, op.out_numel, op.dtype, op.group_size},
               p.collectives.size());
  p.collectives.push_back({i, op.collective, *c.collective});
}

}  // namespace

Result<Program> compile(const Schedule& s, const CostModel& cost,
                        const std::vector<Elements>& slots) {
  Program p;
  Diagnostics d;
  const auto n = static_cast<std::uint32_t>(s.ops.size());
  p.ops.reserve(n);
  p.bytes.assign(n, 0);
  p.deps.reserve(n);
  p.memory_ops.reserve(n / 2);
  SeenCalls seen;
  std::map<std::uint32_t, std::uint32_t>
      last_call;  // communicator (group size) -> latest collective
  std::uint32_t last_sync = kNone;
  for (std::uint32_t i = 0; i < n; ++i) {
    const Op& op = s.ops[i];
    CompiledOp& c = p.ops.emplace_back();
    if (!op_ok(s, op, i)) {
      check_op(s, op, i, d);
      continue;
    }
    c.kind = op.kind;
    c.stream = op.stream;
    c.phase = op.phase;
    c.step = op.step;
    c.buffer = op.buffer;
    c.gate = last_sync;
    c.deps_begin = static_cast<std::uint32_t>(p.deps.size());
    p.deps.insert(p.deps.end(), op.deps.begin(), op.deps.end());
    c.deps_end = static_cast<std::uint32_t>(p.deps.size());
    if (op.kind == OpKind::Sync) last_sync = i;
    if (op.kind == OpKind::Collective) {
      // NCCL serialises the kernels of one communicator in launch order, whatever their streams:
      // each launch makes its stream wait on the communicator's internal device stream
      // (src/enqueue.cc, ncclStrongStreamWaitStream on comm->sharedRes->deviceStream).
      auto [it, fresh] = last_call.try_emplace(op.group_size, i);  // no node built on a hit
      if (!fresh) c.prev_call = std::exchange(it->second, i);
    }
    if (op.kind == OpKind::Alloc || op.kind == OpKind::Free) p.memory_ops.push_back(i);
    p.lanes[static_cast<std::size_t>(op.stream)].push_back(i);
    cost_op(op, i, op.slot == kNone ? op.elements : slots[op.slot], cost, seen, p, d);
  }
  if (d.has_errors()) return d;
  return p;
}

}  // namespace zerosim::sim
