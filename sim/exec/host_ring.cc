// HostRing (host_ring.h).
#include "host_ring.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <string>

#include "numerics.h"
#include "vector_clones.h"

namespace zerosim::exec {
namespace {

Diagnostic ring_error(std::string message) {
  return Diagnostic{Severity::Error, "host ring", "", std::move(message), {}};
}

// d[i] = op(a[i], s[i]); d may be a (the two-operand form: d = op(d, s)).
template <class T, class Op>
void combine(T* d, const T* a, const T* s, Elements n, Op op) {
  for (Elements i = 0; i < n; ++i) d[i] = op(a[i], s[i]);
}

template <class T>
T max_nan(T a, T b) {  // NaN propagates, as torch.max does
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  return a < b ? b : a;
}

// 16-bit floats: widen, combine in float32, round back (per element, per step). Sum and max are
// separate loops: the sum's vectorises (the op test inside the loop kept it scalar).
template <float (*Widen)(std::uint16_t), std::uint16_t (*Narrow)(float)>
void combine16(std::uint16_t* d, const std::uint16_t* a, const std::uint16_t* s, Elements n,
               ReduceOp op) {
  if (op == ReduceOp::Max)
    for (Elements i = 0; i < n; ++i) d[i] = Narrow(max_nan(Widen(a[i]), Widen(s[i])));
  else
    for (Elements i = 0; i < n; ++i) d[i] = Narrow(Widen(a[i]) + Widen(s[i]));
}

}  // namespace

ZEROSIM_VECTOR_CLONES
void reduce_from(void* dst, const void* a, const void* src, Elements n, DType dtype, ReduceOp op) {
  const bool mx = op == ReduceOp::Max;
  switch (dtype) {
    case DType::Float32: {
      auto* d = static_cast<float*>(dst);
      const auto *x = static_cast<const float*>(a), *y = static_cast<const float*>(src);
      if (mx)
        combine(d, x, y, n, max_nan<float>);
      else
        combine(d, x, y, n, [](float u, float v) { return u + v; });
      break;
    }
    case DType::Float64: {
      auto* d = static_cast<double*>(dst);
      const auto *x = static_cast<const double*>(a), *y = static_cast<const double*>(src);
      if (mx)
        combine(d, x, y, n, max_nan<double>);
      else
        combine(d, x, y, n, [](double u, double v) { return u + v; });
      break;
    }
    case DType::Float16:
      combine16<fp16_to_float, float_to_fp16>(static_cast<std::uint16_t*>(dst),
                                              static_cast<const std::uint16_t*>(a),
                                              static_cast<const std::uint16_t*>(src), n, op);
      break;
    case DType::BFloat16:
      combine16<bf16_to_float, float_to_bf16>(static_cast<std::uint16_t*>(dst),
                                              static_cast<const std::uint16_t*>(a),
                                              static_cast<const std::uint16_t*>(src), n, op);
      break;
    case DType::UInt8:
      combine(static_cast<std::uint8_t*>(dst), static_cast<const std::uint8_t*>(a),
              static_cast<const std::uint8_t*>(src), n, [mx](std::uint8_t u, std::uint8_t v) {
                return static_cast<std::uint8_t>(mx ? std::max(u, v) : u + v);
              });
      break;
    case DType::Int64:
      combine(static_cast<std::int64_t*>(dst), static_cast<const std::int64_t*>(a),
              static_cast<const std::int64_t*>(src), n, [mx](std::int64_t u, std::int64_t v) {
                // Wrapping sum, as two's-complement hardware adds (no UB).
                return mx ? std::max(u, v)
                          : static_cast<std::int64_t>(static_cast<std::uint64_t>(u) +
                                                      static_cast<std::uint64_t>(v));
              });
      break;
  }
}

void reduce_into(void* dst, const void* src, Elements n, DType dtype, ReduceOp op) {
  reduce_from(dst, dst, src, n, dtype, op);
}

HostRing::HostRing(std::uint32_t n, std::size_t chunk_bytes, std::size_t slots,
                   std::chrono::milliseconds timeout)
    : n_(n),
      chunk_(std::max<std::size_t>(chunk_bytes, 64)),
      slots_(std::max<std::size_t>(slots, 2)),
      timeout_(timeout),
      counted_(n),
      scratch_(n) {
  for (std::uint32_t i = 0; i < n; ++i) {
    auto c = std::make_unique<Channel>();
    c->storage.resize(chunk_ * slots_);
    c->sizes.resize(slots_);
    channels_.push_back(std::move(c));
  }
}

unsigned char* HostRing::scratch(std::uint32_t r, const void* from, std::size_t bytes) {
  std::vector<unsigned char>& w = scratch_[r];
  if (w.size() < bytes) w.resize(bytes);  // grows to the largest call, then stays
  if (from && bytes) std::memcpy(w.data(), from, bytes);
  return w.data();
}

void HostRing::abort() {
  aborted_.store(true);
  for (auto& c : channels_) {
    std::lock_guard<std::mutex> lock(c->m);
    c->cv.notify_all();
  }
}

Status HostRing::send(std::uint32_t r, const unsigned char* p, std::size_t bytes,
                      std::size_t piece) {
  Channel& c = *channels_[r];
  const std::size_t off = piece * chunk_;
  const std::size_t len = std::min(chunk_, bytes - off);
  std::unique_lock<std::mutex> lock(c.m);
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  while (c.head - c.tail == slots_) {
    if (aborted_) return ring_error("aborted");
    if (c.cv.wait_until(lock, deadline) == std::cv_status::timeout)
      return ring_error("stalled: rank " + std::to_string((r + 1) % n_) +
                        " did not take data from rank " + std::to_string(r) + " within " +
                        std::to_string(timeout_.count()) + " ms");
  }
  const std::size_t slot = c.head % slots_;
  lock.unlock();  // the slot is the sender's until head moves: copy without the lock
  std::memcpy(c.storage.data() + slot * chunk_, p + off, len);
  lock.lock();
  c.sizes[slot] = len;
  ++c.head;
  c.cv.notify_all();
  counted_[r].sent += len;
  return std::nullopt;
}

template <class F>
Status HostRing::recv(std::uint32_t r, std::size_t piece, F&& consume) {
  const std::uint32_t left = (r + n_ - 1) % n_;
  Channel& c = *channels_[left];
  std::unique_lock<std::mutex> lock(c.m);
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  while (c.head == c.tail) {
    if (aborted_) return ring_error("aborted");
    if (c.cv.wait_until(lock, deadline) == std::cv_status::timeout)
      return ring_error("stalled: rank " + std::to_string(r) + " received nothing from rank " +
                        std::to_string(left) + " within " + std::to_string(timeout_.count()) +
                        " ms");
  }
  const std::size_t slot = c.tail % slots_;
  const std::size_t len = c.sizes[slot];
  lock.unlock();  // the slot is the receiver's until tail moves
  consume(c.storage.data() + slot * chunk_, len, piece * chunk_);
  lock.lock();
  ++c.tail;
  c.cv.notify_all();
  counted_[r].received += len;
  return std::nullopt;
}

template <class F>
Status HostRing::exchange(std::uint32_t r, const unsigned char* sp, std::size_t sb, std::size_t rb,
                          F&& consume) {
  const std::size_t sends = (sb + chunk_ - 1) / chunk_, recvs = (rb + chunk_ - 1) / chunk_;
  for (std::size_t i = 0; i < std::max(sends, recvs); ++i) {
    if (i < sends)
      if (Status e = send(r, sp, sb, i)) return e;
    if (i < recvs)
      if (Status e = recv(r, i, consume)) return e;
  }
  return std::nullopt;
}

Status HostRing::all_reduce(std::uint32_t r, void* data, Elements count, DType dtype, ReduceOp op) {
  if (n_ <= 1 || count == 0) return std::nullopt;
  auto* base = static_cast<unsigned char*>(data);
  const Bytes e = dtype_size(dtype);
  std::vector<Elements> start(n_ + 1, 0);
  for (std::uint32_t i = 0; i < n_; ++i) start[i + 1] = start[i] + ring_chunk(count, n_, i);
  const auto mod = [this](std::int64_t v) {
    return static_cast<std::uint32_t>(((v % n_) + n_) % n_);
  };
  for (std::uint32_t k = 0; k + 1 < n_; ++k) {  // reduce-scatter
    const std::uint32_t s = mod(std::int64_t{r} - k), d = mod(std::int64_t{r} - k - 1);
    unsigned char* dst = base + start[d] * e;
    if (Status st = exchange(r, base + start[s] * e, (start[s + 1] - start[s]) * e,
                             (start[d + 1] - start[d]) * e,
                             [&](const unsigned char* p, std::size_t len, std::size_t off) {
                               reduce_into(dst + off, p, len / e, dtype, op);
                             }))
      return st;
  }
  for (std::uint32_t k = 0; k + 1 < n_; ++k) {  // all-gather of the reduced chunks
    const std::uint32_t s = mod(std::int64_t{r} + 1 - k), d = mod(std::int64_t{r} - k);
    unsigned char* dst = base + start[d] * e;
    if (Status st = exchange(r, base + start[s] * e, (start[s + 1] - start[s]) * e,
                             (start[d + 1] - start[d]) * e,
                             [&](const unsigned char* p, std::size_t len, std::size_t off) {
                               std::memcpy(dst + off, p, len);
                             }))
      return st;
  }
  return std::nullopt;
}

Status HostRing::reduce_scatter(std::uint32_t r, const void* in, void* out, Elements out_count,
                                DType dtype, ReduceOp op) {
  const Bytes e = dtype_size(dtype), block = out_count * e;
  if (n_ <= 1 || out_count == 0) {
    if (n_ == 1 && block) std::memmove(out, in, block);
    return std::nullopt;
  }
  const auto* src = static_cast<const unsigned char*>(in);
  auto* dst = static_cast<unsigned char*>(out);
  // Step k receives block d's partial sum from the left and adds this rank's own block d to it;
  // the sum goes to the right at step k + 1. The partial sums alternate between two blocks of
  // scratch so that the one being sent is not the one being written, and the last step (block r)
  // writes the output: the input is read in place, never copied whole (and never written: an
  // output inside it is written at the last step only, as its own block, element by element).
  const bool copy_in =  // an output overlapping the input other than as block r: copy it first
      dst < src + block * n_ && src < dst + block && dst != src + r * block;
  unsigned char* work = scratch(r, nullptr, block * (copy_in ? n_ + 2 : 2));
  if (copy_in) {
    std::memcpy(work, in, block * n_);
    src = work;
  }
  unsigned char* partial = work + (copy_in ? block * n_ : 0);
  const auto mod = [this](std::int64_t v) {
    return static_cast<std::uint32_t>(((v % n_) + n_) % n_);
  };
  const unsigned char* sending = src + mod(std::int64_t{r} - 1) * block;  // step 0: its own block
  for (std::uint32_t k = 0; k + 1 < n_; ++k) {
    const std::uint32_t d = mod(std::int64_t{r} - k - 2);
    unsigned char* sum = k + 2 == n_ ? dst : partial + (k % 2) * block;
    const unsigned char* mine = src + d * block;
    if (Status st = exchange(r, sending, block, block,
                             [&](const unsigned char* p, std::size_t len, std::size_t off) {
                               reduce_from(sum + off, mine + off, p, len / e, dtype, op);
                             }))
      return st;
    sending = sum;
  }
  return std::nullopt;
}

Status HostRing::all_gather(std::uint32_t r, const void* in, void* out, Elements count,
                            DType dtype) {
  const Bytes block = count * dtype_size(dtype);
  auto* base = static_cast<unsigned char*>(out);
  if (block) std::memmove(base + r * block, in, block);  // in may already be its slot (in place)
  if (n_ <= 1 || count == 0) return std::nullopt;
  const auto mod = [this](std::int64_t v) {
    return static_cast<std::uint32_t>(((v % n_) + n_) % n_);
  };
  for (std::uint32_t k = 0; k + 1 < n_; ++k) {
    const std::uint32_t s = mod(std::int64_t{r} - k), d = mod(std::int64_t{r} - k - 1);
    unsigned char* dst = base + d * block;
    if (Status st = exchange(r, base + s * block, block, block,
                             [&](const unsigned char* p, std::size_t len, std::size_t off) {
                               std::memcpy(dst + off, p, len);
                             }))
      return st;
  }
  return std::nullopt;
}

Status HostRing::broadcast(std::uint32_t r, void* data, Elements count, DType dtype,
                           std::uint32_t root) {
  if (n_ <= 1 || count == 0) return std::nullopt;
  auto* base = static_cast<unsigned char*>(data);
  const std::size_t bytes = count * dtype_size(dtype), pieces = (bytes + chunk_ - 1) / chunk_;
  const bool last = (r + 1) % n_ == root;  // the chain ends at the root's left neighbour
  for (std::size_t i = 0; i < pieces; ++i) {
    if (r != root) {
      Status st = recv(r, i, [&](const unsigned char* p, std::size_t len, std::size_t off) {
        std::memcpy(base + off, p, len);
      });
      if (st) return st;
    }
    if (!last)
      if (Status st = send(r, base, bytes, i)) return st;
  }
  return std::nullopt;
}

Status HostRing::reduce(std::uint32_t r, const void* in, void* out, Elements count, DType dtype,
                        ReduceOp op, std::uint32_t root) {
  const Bytes e = dtype_size(dtype);
  const std::size_t bytes = count * e;
  if (count == 0) return std::nullopt;
  const auto* src = static_cast<const unsigned char*>(in);
  if (n_ <= 1) {
    if (r == root && out) std::memmove(out, in, bytes);
    return std::nullopt;
  }
  const bool first = r == (root + 1) % n_;  // the chain starts at the root's right neighbour
  // The partial sum this rank forwards is its input plus what arrives from the left, written to
  // scratch (the root's: to the output, which may be the input itself, element by element); the
  // chain's first rank forwards its input as it is. No copy of the input first.
  auto* dst = static_cast<unsigned char*>(out);
  // The root writes the output directly unless it is missing or overlaps the input elsewhere.
  const bool via_scratch =
      r != root || !dst || (dst != src && dst < src + bytes && src < dst + bytes);
  unsigned char* sum = nullptr;
  if (!first) sum = via_scratch ? scratch(r, nullptr, bytes) : dst;
  const std::size_t pieces = (bytes + chunk_ - 1) / chunk_;
  for (std::size_t i = 0; i < pieces; ++i) {
    if (!first) {
      Status st = recv(r, i, [&](const unsigned char* p, std::size_t len, std::size_t off) {
        reduce_from(sum + off, src + off, p, len / e, dtype, op);
      });
      if (st) return st;
    }
    if (r != root)
      if (Status st = send(r, first ? src : sum, bytes, i)) return st;
  }
  if (r == root && dst && sum != dst) std::memmove(dst, sum, bytes);
  return std::nullopt;
}

}  // namespace zerosim::exec
