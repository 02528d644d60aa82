// DataPath and RingRegistry (host_data.h).
#include "host_data.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "numerics.h"

namespace zerosim::exec {
namespace {

Diagnostic data_error(std::string message) {
  return Diagnostic{Severity::Error, "host backend (data mode)", "", std::move(message), {}};
}

std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

Elements total(const Operand& x) {
  Elements n = 0;
  for (const OperandPiece& p : x) n += p.length;
  return n;
}

// 16-bit and fp32 pieces go through convert's typed loops (the same values as load/store); the
// 64-bit and byte dtypes element by element.
bool floaty(DType t) { return t == DType::Float16 || t == DType::BFloat16 || t == DType::Float32; }

}  // namespace

HostRing& RingRegistry::ring(std::uint32_t communicator, std::uint32_t group_first,
                             std::uint32_t size) {
  std::lock_guard<std::mutex> lock(m_);
  auto& r = rings_[{communicator, group_first}];
  if (!r) r = std::make_unique<HostRing>(size, std::size_t{1} << 19, 4, timeout_);
  return *r;
}

void RingRegistry::abort_all() {
  std::lock_guard<std::mutex> lock(m_);
  for (auto& [key, r] : rings_) r->abort();
}

float initial_weight(std::uint64_t seed, std::uint32_t rank, std::uint32_t buffer, Elements index) {
  // A salt keeps the weights independent of the gradients of the same key.
  return 0.25f * SyntheticGrads(mix(seed ^ 0x5EEDull), rank, 0, 0, buffer)(index);
}

DataPath::DataPath(const Schedule& s, const DataOptions& o, std::uint32_t rank, RingRegistry& rings,
                   std::size_t page_cache)
    : s_(s),
      o_(o),
      rank_(rank),
      rings_(rings),
      store_(s.buffers.size()),
      cache_(page_cache),
      live_(s.buffers.size(), false),
      scaler_(s.meta.lp == DType::Float16 ? o.initial_loss_scale : 1.0),
      loss_scaled_(s.meta.lp == DType::Float16),
      update_steps_(s.updates.size(), 0) {
  const std::uint32_t role = s.role_of(rank);
  for (std::uint32_t b = 0; b < s.buffers.size(); ++b)
    if (s.buffers[b].executor_owned) {  // provided before op 0 (zeros)
      const Bytes bytes = s.buffer_numel(b, role) * dtype_size(s.buffers[b].dtype);
      store_[b].data = Block::make(bytes, true);
      store_[b].bytes = bytes;
      live_[b] = static_cast<bool>(store_[b].data);  // else: "not allocated" where it is used
    }
  for (const UpdateCall& u : s.updates)
    if (u.overflow.buffer != kNone) overflow_buffers_.insert(u.overflow.buffer);
}

Status DataPath::allocate(std::uint32_t b, Bytes bytes, bool zero_fill, bool init_weights) {
  if (b >= store_.size()) return data_error("expected a buffer index, got #" + std::to_string(b));
  // Contents nothing wrote are never read (data_mode_gap checked the whole program before the
  // run), so a buffer is left uninitialised unless it is zero-filled: no pass over its pages.
  Storage& st = store_[b];
  cache_.give(std::move(st.data));  // a buffer allocated twice without a Free: the old block goes
  // Activations are never written (forward/backward are stand-ins): a fresh mapping, which no
  // page backs, so that the cache's pages go to buffers that are.
  st.data = s_.buffers[b].category == BufferCategory::Activation ? Block::make(bytes, zero_fill)
                                                                 : cache_.take(bytes, zero_fill);
  if (!st.data)
    return data_error("out of host memory: buffer #" + std::to_string(b) + " needs " +
                      std::to_string(bytes) + " bytes");
  st.bytes = bytes;
  live_[b] = true;
  if (init_weights && !zero_fill) {
    const DType t = s_.buffers[b].dtype;
    const SyntheticGrads w(mix(o_.seed ^ 0x5EEDull), rank_, 0, 0, b);  // initial_weight's values
    write_initial_weights(t, st.data.data(), bytes / dtype_size(t), w);
  }
  return {};
}

std::vector<std::vector<unsigned char>> DataPath::take_buffers() {
  std::vector<std::vector<unsigned char>> out(store_.size());
  for (std::size_t b = 0; b < store_.size(); ++b)
    if (live_[b]) out[b].assign(store_[b].data.data(), store_[b].data.data() + store_[b].bytes);
  return out;
}

Status DataPath::release(std::uint32_t b) {
  if (b < store_.size()) {
    if (s_.buffers[b].category == BufferCategory::Activation)
      store_[b].data = Block();  // nothing backs it (allocate): kept, it would only crowd the cache
    else
      cache_.give(std::move(store_[b].data));
    store_[b].bytes = 0;
    live_[b] = false;
  }
  return {};
}

Status DataPath::check(const OperandPiece& p, const char* what) const {
  if (p.buffer == kNone) return {};
  if (p.buffer >= store_.size() || !live_[p.buffer])
    return data_error(std::string(what) + ": buffer #" + std::to_string(p.buffer) +
                      " is not allocated");
  const Bytes end = (p.offset + p.length) * dtype_size(p.dtype);
  if (end > store_[p.buffer].bytes)
    return data_error(std::string(what) + ": elements [" + std::to_string(p.offset) + ", " +
                      std::to_string(p.offset + p.length) + ") lie outside buffer #" +
                      std::to_string(p.buffer) + " (" + std::to_string(store_[p.buffer].bytes) +
                      " bytes)");
  return {};
}

unsigned char* DataPath::at(const OperandPiece& p) {
  return store_[p.buffer].data.data() + p.offset * dtype_size(p.dtype);
}

Status DataPath::copy(const Operand& src, const Operand& dst, double scale, bool accumulate) {
  if (total(src) != total(dst))
    return data_error("expected src and dst of equal length, got " + std::to_string(total(src)) +
                      " and " + std::to_string(total(dst)) + " elements");
  for (const OperandPiece& p : src)
    if (Status e = check(p, "src")) return e;
  for (const OperandPiece& p : dst)
    if (Status e = check(p, "dst")) return e;
  std::size_t si = 0, di = 0;
  Elements so = 0, dof = 0;
  while (si < src.size() && di < dst.size()) {
    const OperandPiece& a = src[si];
    const OperandPiece& b = dst[di];
    const Elements n = std::min(a.length - so, b.length - dof);
    if (b.buffer != kNone) {
      const unsigned char* sp = a.buffer == kNone ? nullptr : at(a) + so * dtype_size(a.dtype);
      convert(at(b) + dof * dtype_size(b.dtype), b.dtype, sp, a.dtype, n, scale, accumulate);
    }
    so += n;
    dof += n;
    if (so == a.length) ++si, so = 0;
    if (dof == b.length) ++di, dof = 0;
  }
  return {};
}

void DataPath::begin_step(std::uint32_t step) {
  // A new step: the previous one's loss-scale update (DynamicLossScaler.update_scale after the
  // overflow check), whether or not the schedule ran its optimizer.
  while (step_ < step) {
    if (loss_scaled_) scaler_.update(step_overflowed_);
    skipped_ += step_overflowed_ ? 1 : 0;
    step_overflowed_ = false;
    ++step_;
  }
}

void DataPath::finish() {
  if (finished_) return;
  finished_ = true;
  begin_step(step_ + 1);
}

Status DataPath::grad_ready(const WorkCall& c) {
  begin_step(c.step);
  for (const OperandPiece& p : c.dst)
    if (Status e = check(p, "dst (the gradient)")) return e;
  // The gradient of the loss x the loss scale x Op::scale (the engine's 1/accumulation steps).
  const float ls = static_cast<float>(loss_scaled_ ? scaler_.scale() : 1.0);
  const auto op_scale = static_cast<float>(c.scale);
  const bool inject =
      rank_ == 0 && c.micro_step == 0 && !injected_.count(c.step) &&
      std::binary_search(o_.overflow_steps.begin(), o_.overflow_steps.end(), c.step);
  if (inject) injected_.insert(c.step);
  const StandInGrads grads(o_, rank_, c.step, c.micro_step, c.param);
  Elements index = 0;
  for (const OperandPiece& p : c.dst) {
    // Autograd's gradient of the scaled loss, in the gradient's dtype (added as stored to p.grad
    // when accumulating); an injected overflow is an inf where the backward would produce one.
    if (p.buffer != kNone)
      write_grads(p.dtype, at(p), p.length, c.accumulate, grads, index, ls, op_scale, inject);
    index += p.length;
  }
  return {};
}

std::vector<float> DataPath::gather(const Operand& x) {
  std::vector<float> v(total(x));
  auto* out = reinterpret_cast<unsigned char*>(v.data());  // NOLINT: fp32 bytes
  Elements k = 0;
  for (const OperandPiece& p : x) {
    if (p.buffer == kNone)
      std::fill(v.begin() + static_cast<std::ptrdiff_t>(k),
                v.begin() + static_cast<std::ptrdiff_t>(k + p.length), 0.0f);
    else if (floaty(p.dtype))
      convert(out + 4 * k, DType::Float32, at(p), p.dtype, p.length, 1.0, false);
    else
      for (Elements i = 0; i < p.length; ++i)
        v[k + i] = static_cast<float>(load(p.dtype, at(p), i));
    k += p.length;
  }
  return v;
}

void DataPath::scatter(const Operand& x, const std::vector<float>& v) {
  const auto* in = reinterpret_cast<const unsigned char*>(v.data());  // NOLINT: fp32 bytes
  Elements k = 0;
  for (const OperandPiece& p : x) {
    if (p.buffer != kNone) {
      if (floaty(p.dtype))
        convert(at(p), p.dtype, in + 4 * k, DType::Float32, p.length, 1.0, false);
      else
        for (Elements i = 0; i < p.length; ++i) store(p.dtype, at(p), i, v[k + i]);
    }
    k += p.length;
  }
}

Status DataPath::optimizer_step(const WorkCall& c) {
  begin_step(c.step);
  const UpdateOperands& u = c.operands;
  for (const Operand* x : {&u.master, &u.grad, &u.exp_avg, &u.exp_avg_sq, &u.norms, &u.overflow})
    for (const OperandPiece& p : *x)
      if (Status e = check(p, "update operand")) return e;
  if (c.update >= update_steps_.size())
    return data_error("expected an update index, got " + std::to_string(c.update));
  const Elements n = total(u.master);
  if (total(u.grad) != n || total(u.exp_avg) != n || total(u.exp_avg_sq) != n)
    return data_error("expected master, grad, exp_avg and exp_avg_sq of " + std::to_string(n) +
                      " elements each, got " + std::to_string(total(u.grad)) + ", " +
                      std::to_string(total(u.exp_avg)) + " and " +
                      std::to_string(total(u.exp_avg_sq)));
  if (!u.overflow.empty()) {
    for (float f : gather(u.overflow))
      if (f != 0)
        return data_error(
            "the overflow flag is set (the gradients hold inf/nan) but the schedule updates: "
            "its --overflow-steps disagree with the data");
  }
  // DeepSpeed's unscale_and_clip_grads: one factor for loss scale and clip, grads x 1/factor.
  double total_norm = 0;
  if (!u.norms.empty()) {
    double sq = 0;
    for (float f : gather(u.norms)) sq += f;
    total_norm = std::sqrt(sq);
  }
  const double loss_scale = loss_scaled_ ? scaler_.scale() : 1.0;
  const double combined =
      u.norms.empty() ? loss_scale : combined_scale(loss_scale, total_norm, o_.gradient_clipping);
  AdamWParams h;
  h.lr = o_.lr;
  h.beta1 = o_.beta1;
  h.beta2 = o_.beta2;
  h.eps = o_.eps;
  h.weight_decay = o_.weight_decay;
  const std::uint64_t t = ++update_steps_[c.update];
  const auto inv = static_cast<float>(1.0 / combined);
  const auto plain = [](const Operand& x) {
    return x.size() == 1 && x[0].buffer != kNone && x[0].dtype == DType::Float32;
  };
  if (plain(u.master) && plain(u.exp_avg) && plain(u.exp_avg_sq) && plain(u.grad)) {
    // fp32 in place, as DeepSpeed's grad.mul_(1/combined) and the optimizer's step() run.
    auto* g = reinterpret_cast<float*>(at(u.grad[0]));  // NOLINT: fp32 storage
    if (combined != 1.0)
      for (Elements i = 0; i < n; ++i) g[i] *= inv;
    adamw_step(h, t, reinterpret_cast<float*>(at(u.master[0])),       // NOLINT
               reinterpret_cast<float*>(at(u.exp_avg[0])),            // NOLINT
               reinterpret_cast<float*>(at(u.exp_avg_sq[0])), g, n);  // NOLINT
    return {};
  }
  std::vector<float> p = gather(u.master), m = gather(u.exp_avg), v = gather(u.exp_avg_sq),
                     g = gather(u.grad);
  if (combined != 1.0)
    for (float& x : g) x *= inv;
  adamw_step(h, t, p.data(), m.data(), v.data(), g.data(), n);
  scatter(u.master, p);
  scatter(u.exp_avg, m);
  scatter(u.exp_avg_sq, v);
  return {};
}

Status DataPath::grad_stat(const WorkCall& c) {
  begin_step(c.step);
  for (const OperandPiece& p : c.src)
    if (Status e = check(p, "src (the gradients)")) return e;
  if (c.dst.size() != 1 || c.dst[0].length != 1 || c.dst[0].buffer == kNone)
    return data_error("expected one scratch element as the dst of a local norm or overflow check");
  if (Status e = check(c.dst[0], "dst (the scratch)")) return e;
  const OperandPiece& d = c.dst[0];
  unsigned char* out = at(d);
  if (c.kind == OpKind::GradNorm) {
    // The sum of squares of the gradients as stored, in double (DeepSpeed's g.double().norm(2)
    // squared); the scratch's dtype rounds it.
    double sq = c.accumulate ? load(d.dtype, out, 0) : 0.0;
    for (const OperandPiece& p : c.src)
      if (p.buffer != kNone) sq = sum_squares(p.dtype, at(p), p.length, sq);  // kNone: zeros
    store(d.dtype, out, 0, sq);
    return {};
  }
  bool bad = c.accumulate && load(d.dtype, out, 0) != 0;
  for (const OperandPiece& p : c.src)
    if (!bad && p.buffer != kNone) bad = any_nonfinite(p.dtype, at(p), p.length);
  store(d.dtype, out, 0, bad ? 1.0 : 0.0);
  // A set flag decides this step's loss-scale update, whether or not an all-reduce follows (stage
  // 0 checks locally: its gradients were all-reduced before).
  if (bad) step_overflowed_ = true;
  return {};
}

Status DataPath::work(const WorkCall& c) {
  switch (c.kind) {
    case OpKind::Copy:
    case OpKind::CopyToBucket:
    case OpKind::WriteBack:
    case OpKind::HostToDevice:
    case OpKind::DeviceToHost:
    case OpKind::Alloc:  // an adopting Alloc's contents (WorkCall)
      // An op whose extent is 0 for this rank's role moves nothing here (scenarios/README.md
      // "Operands"): e.g. the step's flatten of an averaged_gradients that is one tensor, which
      // DeepSpeed's flatten returns as a view.
      if (c.elements == 0 && total(c.dst) == 0) return {};
      return copy(c.src, c.dst, c.scale, c.accumulate);
    case OpKind::GradReady:
      return grad_ready(c);
    case OpKind::GradNorm:
    case OpKind::GradOverflow:
      return grad_stat(c);
    case OpKind::OptimizerStep:
      return optimizer_step(c);
    default:
      return {};  // Forward/Backward/Recompute: stand-ins, the gradients come at GradReady
  }
}

Status DataPath::collective(const CollectiveCall& c) {
  begin_step(c.step);
  if (c.numel == 0 && c.out_numel == 0) return {};  // nothing to move (the rendezvous counted it)
  if (c.src.size() != 1)
    return data_error("expected one src region for a collective, got " +
                      std::to_string(c.src.size()));
  OperandPiece in = c.src[0];
  OperandPiece out = c.dst.empty() ? in : c.dst[0];
  if (c.dst.empty()) out.length = c.out_numel;
  // A dst of several pieces (a reduce's result copied back into the owner's slices of a bucket):
  // the collective writes a staging copy, then the pieces receive it in order.
  const bool scattered = c.dst.size() > 1;
  if (Status e = check(in, "src")) return e;
  if (scattered) {
    for (const OperandPiece& p : c.dst) {
      if (Status e = check(p, "dst")) return e;
      if (p.buffer != kNone && p.dtype != c.dtype) out.dtype = p.dtype;
    }
    if (total(c.dst) != c.out_numel)
      return data_error("expected a dst of " + std::to_string(c.out_numel) + " elements, got " +
                        std::to_string(total(c.dst)));
  } else if (Status e = check(out, "dst")) {
    return e;
  }
  if (in.dtype != c.dtype || out.dtype != c.dtype)
    return data_error("expected the collective's buffers in its dtype " +
                      std::string(dtype_name(c.dtype)));
  HostRing& ring = rings_.ring(c.communicator, c.group_first, c.group_size);
  const std::uint32_t me = c.rank_in_group;
  const auto root = static_cast<std::uint32_t>(std::max(0, c.root));
  const Bytes e = dtype_size(c.dtype);
  std::vector<unsigned char> staging(scattered ? c.out_numel * e : 0);
  unsigned char* ip = at(in);
  unsigned char* op = scattered ? staging.data() : at(out);
  Status st;
  switch (c.kind) {
    case CollectiveKind::AllReduce:
      if (op != ip) std::memmove(op, ip, c.numel * e);
      st = ring.all_reduce(me, op, c.numel, c.dtype, c.reduce_op);
      break;
    case CollectiveKind::Broadcast:
      if (me == root && op != ip) std::memmove(op, ip, c.numel * e);
      st = ring.broadcast(me, op, c.numel, c.dtype, root);
      break;
    case CollectiveKind::Reduce:
      st = ring.reduce(me, ip, me == root ? op : nullptr, c.numel, c.dtype, c.reduce_op, root);
      break;
    case CollectiveKind::AllGather:
      st = ring.all_gather(me, ip, op, c.numel, c.dtype);
      break;
    case CollectiveKind::ReduceScatter:
      st = ring.reduce_scatter(me, ip, op, c.out_numel, c.dtype, c.reduce_op);
      break;
  }
  if (st) return st;
  const bool writes = c.kind != CollectiveKind::Reduce || me == root;
  if (writes && c.scale != 1.0) convert(op, c.dtype, op, c.dtype, c.out_numel, c.scale, false);
  if (writes && scattered) {
    Elements k = 0;
    for (const OperandPiece& p : c.dst) {
      if (p.buffer != kNone) std::memcpy(at(p), op + k * e, p.length * e);
      k += p.length;
    }
  }
  // The overflow check's all-reduce: its result decides this step's loss-scale update.
  if (overflow_buffers_.count(out.buffer))
    for (Elements i = 0; i < c.out_numel; ++i)
      if (load(c.dtype, op, i) != 0) step_overflowed_ = true;
  return {};
}

}  // namespace zerosim::exec
