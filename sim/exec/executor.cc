// execute_rank and TrackingAllocator (executor.h): the walk every backend shares.
#include "zerosim/executor.h"

#include <string>
#include <vector>

namespace zerosim::exec {

std::string where(const Schedule& s, std::uint32_t rank, std::uint32_t op) {
  std::string w = "rank " + std::to_string(rank) + ", op " + std::to_string(op);
  if (op < s.ops.size()) {
    const Op& o = s.ops[op];
    w += " (" + quote(o.label.empty() ? std::string(op_kind_name(o.kind)) : o.label) + ")";
  }
  return w;
}

std::uint32_t model_weights_alloc(const Schedule& s) {
  for (std::uint32_t i = 0; i < s.ops.size(); ++i) {
    const Op& op = s.ops[i];
    if (op.kind == OpKind::Alloc && op.phase == Phase::Init && op.buffer < s.buffers.size() &&
        s.buffers[op.buffer].category == BufferCategory::Param16)
      return i;
  }
  return kNone;
}

Status TrackingAllocator::allocate(std::uint32_t buffer, Bytes bytes, MemoryPool pool,
                                   BufferCategory category) {
  if (buffer >= buffers_.size()) buffers_.resize(std::size_t{buffer} + 1);
  Live& b = buffers_[buffer];
  if (b.live)
    return Diagnostic{Severity::Error,
                      "tracking allocator",
                      "",
                      "expected buffer #" + std::to_string(buffer) +
                          " to be free before its allocation, got it live",
                      {}};
  if (pool == MemoryPool::Device) {
    if (limit_ != 0 && bytes > limit_ - std::min(limit_, c_.device_current))
      return Diagnostic{Severity::Error, "tracking allocator", "",
                        "does not fit: " + std::to_string(bytes) + " bytes requested, " +
                            std::to_string(limit_ - std::min(limit_, c_.device_current)) +
                            " bytes free of the " + std::to_string(limit_) + "-byte limit",
                        "the limit counts device bytes per rank, with data or without: raise "
                        "--host-memory-limit"};
    c_.device_current += bytes;
    ++c_.device_buffers;
    live_[static_cast<std::size_t>(category)] += bytes;
    if (c_.device_current > c_.device_peak) {  // strictly above: the first time the peak is reached
      c_.device_peak = c_.device_current;
      c_.device_peak_by_category = live_;
    }
  } else {
    c_.host_current += bytes;
    ++c_.host_buffers;
    c_.host_peak = std::max(c_.host_peak, c_.host_current);
  }
  b = {bytes, pool, category, true};
  return std::nullopt;
}

Status TrackingAllocator::release(std::uint32_t buffer) {
  if (buffer >= buffers_.size() || !buffers_[buffer].live)
    return Diagnostic{Severity::Error,
                      "tracking allocator",
                      "",
                      "expected buffer #" + std::to_string(buffer) +
                          " to be live before its release, got it free",
                      {}};
  Live& b = buffers_[buffer];
  if (b.pool == MemoryPool::Device) {
    c_.device_current -= b.bytes;
    --c_.device_buffers;
    live_[static_cast<std::size_t>(b.category)] -= b.bytes;
  } else {
    c_.host_current -= b.bytes;
    --c_.host_buffers;
  }
  b.live = false;
  return std::nullopt;
}

namespace {

bool is_work(OpKind k) {
  switch (k) {
    case OpKind::Forward:
    case OpKind::Backward:
    case OpKind::Recompute:
    case OpKind::CopyToBucket:
    case OpKind::Copy:
    case OpKind::OptimizerStep:
    case OpKind::WriteBack:
    case OpKind::HostToDevice:
    case OpKind::DeviceToHost:
    case OpKind::GradNorm:
    case OpKind::GradOverflow:
      return true;
    default:
      return false;
  }
}

// Adds the rank and op to a Device's diagnostic (the Device knows neither label nor rank).
Diagnostic located(Diagnostic d, const RankView& v, std::uint32_t op) {
  d.message = where(*v.schedule, v.rank, op) + ": " + d.message;
  if (d.pointer.empty()) d.pointer = "/ops/" + std::to_string(op);
  return d;
}

Operand operand(const Schedule& s, const Op& op, const Region& r, std::uint32_t rank, bool is_src) {
  Operand out;
  if (r.empty()) return out;
  for (const OperandSpan& p : resolve_pieces(s, op, r, rank, is_src))
    out.push_back({p.buffer, p.offset, p.length,
                   p.buffer < s.buffers.size() ? s.buffers[p.buffer].dtype : op.dtype});
  return out;
}

}  // namespace

Result<RankRun> execute_rank(const RankView& v, Device& device, TrackingAllocator& allocator) {
  const Schedule& s = *v.schedule;
  const ScheduleGraph& g = *v.graph;
  RankRun run;
  run.rank = v.rank;
  const std::uint32_t weights_alloc = v.operands ? model_weights_alloc(s) : kNone;
  // Ops another stream waits on get an event when they finish.
  std::vector<bool> recorded(g.op_count, false);
  for (std::uint32_t i = 0; i < g.op_count; ++i)
    for (std::uint32_t dep : g.deps_of(i))
      if (s.ops[dep].stream != s.ops[i].stream) recorded[dep] = true;
  const auto fail = [&](Diagnostic d, std::uint32_t op) -> Result<RankRun> {
    Diagnostics out;
    out.add(located(std::move(d), v, op));
    return Result<RankRun>(std::move(out));
  };
  // An adopting Alloc (Op::src) reads what the run of Frees right before it released: the
  // tracking allocator sees those Frees in issue order (the ledger's bytes), the device releases
  // them only once the Alloc has taken their contents.
  std::vector<bool> defer_release(g.op_count, false);
  for (std::uint32_t i = g.op_count; i-- > 0;)
    if (s.ops[i].kind == OpKind::Free && i + 1 < g.op_count)
      defer_release[i] = (s.ops[i + 1].kind == OpKind::Alloc && !s.ops[i + 1].src.empty()) ||
                         (s.ops[i + 1].kind == OpKind::Free && defer_release[i + 1]);
  std::vector<std::uint32_t> deferred;
  for (std::uint32_t i = 0; i < g.op_count; ++i) {
    const Op& op = s.ops[i];
    for (std::uint32_t dep : g.deps_of(i))
      if (s.ops[dep].stream != op.stream)
        if (Status e = device.wait(op.stream, dep)) return fail(*e, i);
    Status st;
    switch (op.kind) {
      case OpKind::Alloc: {
        const Buffer& b = s.buffers[op.buffer];
        const Bytes bytes = s.buffer_numel(op.buffer, v.role) * dtype_size(b.dtype);
        st = allocator.allocate(op.buffer, bytes, b.pool, b.category);
        const bool init_weights = i == weights_alloc;
        if (!st)
          st = device.allocate(op.buffer, bytes, b.pool, b.category, op.zero_fill, init_weights);
        if (!st && v.operands && !op.src.empty()) {  // the adopted contents (no span, no cost)
          WorkCall w;
          w.op = i;
          w.kind = OpKind::Alloc;
          w.elements = s.buffer_numel(op.buffer, v.role);
          w.dtype = b.dtype;
          w.buffer = op.buffer;
          w.step = op.step;
          w.micro_step = op.micro_step;
          w.src = operand(s, op, op.src, v.rank, true);
          w.dst = {{op.buffer, 0, w.elements, b.dtype}};
          st = device.work(op.stream, w);
        }
        for (std::uint32_t d : deferred)
          if (!st) st = device.release(d);
        deferred.clear();
        break;
      }
      case OpKind::Free:
        st = allocator.release(op.buffer);
        if (!st && defer_release[i])
          deferred.push_back(op.buffer);
        else if (!st)
          st = device.release(op.buffer);
        break;
      case OpKind::Sync:
        st = device.synchronize();
        break;
      case OpKind::Collective: {
        CollectiveCall c;
        c.op = i;
        c.kind = op.collective;
        c.numel = op.numel;
        c.out_numel = op.out_numel;
        c.dtype = op.dtype;
        c.reduce_op = op.reduce_op;
        const CommGroup& group = s.comms[op.comm];
        c.root = op.root == kNone ? -1 : static_cast<std::int32_t>(op.root);
        c.communicator = communicator_of(op);
        c.group_size = group.size;
        c.rank_in_group = group.index_of(v.rank);
        c.group_first = group.rank_at(v.rank, 0);
        c.group_stride = group.stride;
        c.step = op.step;
        if (v.operands) {
          c.src = operand(s, op, op.src, v.rank, true);
          c.dst = operand(s, op, op.dst, v.rank, false);
          c.scale = op.scale;
        }
        st = device.collective(op.stream, c);
        ++run.collectives;
        break;
      }
      default:
        if (is_work(op.kind) || (v.operands && op.kind == OpKind::GradReady)) {
          WorkCall w;
          w.op = i;
          w.kind = op.kind;
          w.elements = s.op_elements(op, v.role);
          w.dtype = op.dtype;
          w.flops = op.flops;
          w.layer = op.layer;
          w.param = op.param;
          w.buffer = op.buffer;
          w.step = op.step;
          w.micro_step = op.micro_step;
          w.update = op.update;
          if (v.operands) {
            w.src = operand(s, op, op.src, v.rank, true);
            w.dst = operand(s, op, op.dst, v.rank, false);
            w.accumulate = op.copy_mode == CopyMode::Add;
            w.scale = op.scale;
            if (op.kind == OpKind::OptimizerStep && op.update < s.updates.size()) {
              const UpdateCall& u = s.updates[op.update];
              UpdateOperands& o = w.operands;
              o.master = operand(s, op, u.master, v.rank, true);
              o.grad = operand(s, op, u.grad, v.rank, true);
              o.exp_avg = operand(s, op, u.exp_avg, v.rank, true);
              o.exp_avg_sq = operand(s, op, u.exp_avg_sq, v.rank, true);
              o.lp_out = operand(s, op, u.lp_out, v.rank, false);
              o.norms = operand(s, op, u.norms, v.rank, true);
              o.overflow = operand(s, op, u.overflow, v.rank, true);
            }
          }
          st = device.work(op.stream, w);
        }
        break;  // Marker (and GradReady when count-only): nothing to run
    }
    if (st) return fail(*st, i);
    if (recorded[i])
      if (Status e = device.record(op.stream, i)) return fail(*e, i);
    ++run.ops_issued;
  }
  if (Status e = device.synchronize()) return fail(*e, g.op_count == 0 ? 0 : g.op_count - 1);
  run.memory = allocator.counters();
  return run;
}

}  // namespace zerosim::exec
