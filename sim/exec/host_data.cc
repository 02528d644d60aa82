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

// Element i of a buffer of `t` as a double (exact for every dtype but int64 beyond 2^53).
double load(DType t, const unsigned char* p, Elements i) {
  switch (t) {
    case DType::Float16: {
      std::uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      return fp16_to_float(h);
    }
    case DType::BFloat16: {
      std::uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      return bf16_to_float(h);
    }
    case DType::Float32: {
      float f;
      std::memcpy(&f, p + 4 * i, 4);
      return f;
    }
    case DType::Float64: {
      double d;
      std::memcpy(&d, p + 8 * i, 8);
      return d;
    }
    case DType::Int64: {
      std::int64_t v;
      std::memcpy(&v, p + 8 * i, 8);
      return static_cast<double>(v);
    }
    case DType::UInt8:
      return p[i];
  }
  return 0;
}

// Stores a value computed in float (double for float64/int64 storage), rounding to nearest even.
void store(DType t, unsigned char* p, Elements i, double v) {
  switch (t) {
    case DType::Float16: {
      const std::uint16_t h = float_to_fp16(static_cast<float>(v));
      std::memcpy(p + 2 * i, &h, 2);
      return;
    }
    case DType::BFloat16: {
      const std::uint16_t h = float_to_bf16(static_cast<float>(v));
      std::memcpy(p + 2 * i, &h, 2);
      return;
    }
    case DType::Float32: {
      const auto f = static_cast<float>(v);
      std::memcpy(p + 4 * i, &f, 4);
      return;
    }
    case DType::Float64:
      std::memcpy(p + 8 * i, &v, 8);
      return;
    case DType::Int64: {
      const auto x = static_cast<std::int64_t>(v);
      std::memcpy(p + 8 * i, &x, 8);
      return;
    }
    case DType::UInt8:
      p[i] = static_cast<std::uint8_t>(std::clamp(v, 0.0, 255.0));
      return;
  }
}

bool wide(DType t) { return t == DType::Float64 || t == DType::Int64; }

// dst[i] (=|+=) src[i] x scale for n elements; src null: zeros. The arithmetic is float32's (as
// PyTorch's copy_, mul_ and add_ on half/bfloat16/float tensors compute), double for 64-bit
// storage.
void convert(unsigned char* d, DType dt, const unsigned char* s, DType st, Elements n, double scale,
             bool accumulate) {
  if (s && !accumulate && scale == 1.0 && dt == st) {
    std::memmove(d, s, n * dtype_size(dt));
    return;
  }
  const bool dbl = wide(dt) || wide(st);
  const auto fscale = static_cast<float>(scale);
  for (Elements i = 0; i < n; ++i) {
    const double x = s ? load(st, s, i) : 0.0;
    if (dbl) {
      store(dt, d, i, (accumulate ? load(dt, d, i) : 0.0) + x * scale);
    } else {
      float v = static_cast<float>(x);
      if (scale != 1.0) v *= fscale;
      if (accumulate) v = static_cast<float>(load(dt, d, i)) + v;
      store(dt, d, i, v);
    }
  }
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
  return 0.25f * synthetic_grad(mix(seed ^ 0x5EEDull), rank, 0, 0, buffer, index);
}

float stand_in_grad(const DataOptions& o, std::uint32_t rank, std::uint32_t step,
                    std::uint32_t micro_step, std::uint32_t param, Elements index) {
  double g = synthetic_grad(o.seed, rank, step, micro_step, param, index);
  if (o.quantum_bits > 0) {
    const double q = std::ldexp(1.0, static_cast<int>(o.quantum_bits));
    g = std::nearbyint(g * q) / q;
  }
  return static_cast<float>(g * o.grad_scale);
}

DataPath::DataPath(const Schedule& s, const DataOptions& o, std::uint32_t rank, RingRegistry& rings)
    : s_(s),
      o_(o),
      rank_(rank),
      rings_(rings),
      store_(s.buffers.size()),
      live_(s.buffers.size(), false),
      scaler_(s.meta.lp == DType::Float16 ? o.initial_loss_scale : 1.0),
      loss_scaled_(s.meta.lp == DType::Float16),
      update_steps_(s.updates.size(), 0) {
  const std::uint32_t role = s.role_of(rank);
  for (std::uint32_t b = 0; b < s.buffers.size(); ++b)
    if (s.buffers[b].executor_owned) {  // provided before op 0 (zeros)
      store_[b].assign(s.buffer_numel(b, role) * dtype_size(s.buffers[b].dtype), 0);
      live_[b] = true;
    }
  for (const UpdateCall& u : s.updates)
    if (u.overflow.buffer != kNone) overflow_buffers_.insert(u.overflow.buffer);
}

Status DataPath::allocate(std::uint32_t b, Bytes bytes, bool zero_fill, bool init_weights) {
  if (b >= store_.size()) return data_error("expected a buffer index, got #" + std::to_string(b));
  // Undefined contents are poisoned with all-ones bytes (NaN in every float dtype), so a read of
  // something nothing wrote shows.
  store_[b].assign(bytes, zero_fill ? 0 : 0xFF);
  live_[b] = true;
  if (init_weights && !zero_fill) {
    const DType t = s_.buffers[b].dtype;
    const Elements n = bytes / dtype_size(t);
    for (Elements i = 0; i < n; ++i)
      store(t, store_[b].data(), i, initial_weight(o_.seed, rank_, b, i));
  }
  return {};
}

Status DataPath::release(std::uint32_t b) {
  if (b < store_.size()) {
    store_[b].clear();
    store_[b].shrink_to_fit();
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
  if (end > store_[p.buffer].size())
    return data_error(std::string(what) + ": elements [" + std::to_string(p.offset) + ", " +
                      std::to_string(p.offset + p.length) + ") lie outside buffer #" +
                      std::to_string(p.buffer) + " (" + std::to_string(store_[p.buffer].size()) +
                      " bytes)");
  return {};
}

unsigned char* DataPath::at(const OperandPiece& p) {
  return store_[p.buffer].data() + p.offset * dtype_size(p.dtype);
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
  const float ls = static_cast<float>(loss_scaled_ ? scaler_.scale() : 1.0);
  const bool inject =
      rank_ == 0 && c.micro_step == 0 && !injected_.count(c.step) &&
      std::binary_search(o_.overflow_steps.begin(), o_.overflow_steps.end(), c.step);
  if (inject) injected_.insert(c.step);
  Elements index = 0;
  for (const OperandPiece& p : c.dst) {
    if (p.buffer == kNone) {
      index += p.length;
      continue;
    }
    unsigned char* d = at(p);
    for (Elements i = 0; i < p.length; ++i, ++index) {
      // Autograd's gradient of the scaled loss, in the gradient's dtype; an injected overflow
      // is an inf where the backward would produce one.
      float g = stand_in_grad(o_, rank_, c.step, c.micro_step, c.param, index) * ls;
      if (inject && index == 0) g = INFINITY;
      store(p.dtype, d, i, c.accumulate ? static_cast<float>(load(p.dtype, d, i)) + g : g);
    }
  }
  return {};
}

std::vector<float> DataPath::gather(const Operand& x) {
  std::vector<float> v;
  v.reserve(total(x));
  for (const OperandPiece& p : x)
    for (Elements i = 0; i < p.length; ++i)
      v.push_back(p.buffer == kNone ? 0.0f : static_cast<float>(load(p.dtype, at(p), i)));
  return v;
}

void DataPath::scatter(const Operand& x, const std::vector<float>& v) {
  std::size_t k = 0;
  for (const OperandPiece& p : x)
    for (Elements i = 0; i < p.length; ++i, ++k)
      if (p.buffer != kNone) store(p.dtype, at(p), i, v[k]);
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
  std::vector<float> p = gather(u.master), m = gather(u.exp_avg), v = gather(u.exp_avg_sq),
                     g = gather(u.grad);
  if (combined != 1.0) {
    const auto inv = static_cast<float>(1.0 / combined);
    for (float& x : g) x *= inv;
  }
  AdamWParams h;
  h.lr = o_.lr;
  h.beta1 = o_.beta1;
  h.beta2 = o_.beta2;
  h.eps = o_.eps;
  h.weight_decay = o_.weight_decay;
  adamw_step(h, ++update_steps_[c.update], p.data(), m.data(), v.data(), g.data(), n);
  scatter(u.master, p);
  scatter(u.exp_avg, m);
  scatter(u.exp_avg_sq, v);
  return {};
}

Status DataPath::work(const WorkCall& c) {
  switch (c.kind) {
    case OpKind::Copy:
    case OpKind::CopyToBucket:
    case OpKind::WriteBack:
    case OpKind::HostToDevice:
    case OpKind::DeviceToHost:
      return copy(c.src, c.dst, c.scale, c.accumulate);
    case OpKind::GradReady:
      return grad_ready(c);
    case OpKind::OptimizerStep:
      return optimizer_step(c);
    default:
      return {};  // Forward/Backward/Recompute: stand-ins, the gradients come at GradReady
  }
}

Status DataPath::collective(const CollectiveCall& c) {
  begin_step(c.step);
  if (c.src.size() != 1 || c.dst.size() > 1)
    return data_error("expected one src region and at most one dst region for a collective");
  OperandPiece in = c.src[0];
  OperandPiece out = c.dst.empty() ? in : c.dst[0];
  if (c.dst.empty()) out.length = c.out_numel;
  if (Status e = check(in, "src")) return e;
  if (Status e = check(out, "dst")) return e;
  if (in.dtype != c.dtype || out.dtype != c.dtype)
    return data_error("expected the collective's buffers in its dtype " +
                      std::string(dtype_name(c.dtype)));
  HostRing& ring = rings_.ring(c.communicator, c.group_first, c.group_size);
  const std::uint32_t me = c.rank_in_group;
  const auto root = static_cast<std::uint32_t>(std::max(0, c.root));
  unsigned char* ip = at(in);
  unsigned char* op = at(out);
  const Bytes e = dtype_size(c.dtype);
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
  // The overflow check's all-reduce: its result decides this step's loss-scale update.
  if (overflow_buffers_.count(out.buffer))
    for (Elements i = 0; i < c.out_numel; ++i)
      if (load(c.dtype, op, i) != 0) step_overflowed_ = true;
  return {};
}

}  // namespace zerosim::exec
