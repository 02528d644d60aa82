// The element loops of the host backend's data mode (host_data.h): loads and stores of every
// storage dtype, the casts, scaled and accumulating copies between regions, the stand-in
// backward's gradient writes and the initial weights. Each loop is instantiated per (dtype, mode)
// so the dtype switch and the mode tests run once per region, not per element, and the
// fp16/bf16/fp32 loops vectorise (numerics.h's conversions are branch-free). Every loop computes
// exactly what the element-by-element definitions (load/store below) compute: same operations in
// the same order, so results are bitwise identical. Private to sim/exec.
#pragma once

#include <cmath>
#include <cstdint>

#include "training_math.h"
#include "zerosim/executor.h"
#include "zerosim/host_backend.h"

namespace zerosim::exec {

/// Element i of a buffer of `t` as a double (exact for every dtype but int64 beyond 2^53).
double load(DType t, const unsigned char* p, Elements i);
/// Stores a value computed in float (double for float64/int64 storage), rounding to nearest even.
void store(DType t, unsigned char* p, Elements i, double v);

/// dst[i] (=|+=) src[i] x scale for n elements; src null: zeros. The arithmetic is float32's (as
/// PyTorch's copy_, mul_ and add_ on half/bfloat16/float tensors compute), double for 64-bit
/// storage. d may equal s (an in-place scale).
void convert(unsigned char* d, DType dt, const unsigned char* s, DType st, Elements n, double scale,
             bool accumulate);

/// sq + the sum of x^2 over the n elements of a region of `t`, each widened to double, added in
/// element order (the same bits as summing load(t, p, i)^2 one by one).
double sum_squares(DType t, const unsigned char* p, Elements n, double sq);
/// Whether any of the n elements of a region of `t` is inf or NaN (!std::isfinite(load(t, p, i))).
bool any_nonfinite(DType t, const unsigned char* p, Elements n);

/// The stand-in backward's gradients of one (rank, step, micro-step, param) before the loss scale:
/// synthetic_grad with DataOptions' quantum and grad_scale applied.
class StandInGrads {
 public:
  StandInGrads(const DataOptions& o, std::uint32_t rank, std::uint32_t step,
               std::uint32_t micro_step, std::uint32_t param)
      : g_(o.seed, rank, step, micro_step, param),
        quantum_(o.quantum_bits > 0 ? static_cast<double>(std::uint64_t{1} << o.quantum_bits) : 0),
        scale_(o.grad_scale) {}
  float operator()(Elements index) const {
    double g = g_(index);
    if (quantum_ > 0) g = std::nearbyint(g * quantum_) / quantum_;
    return static_cast<float>(g * scale_);
  }
  bool quantised() const { return quantum_ > 0; }
  /// operator() without the quantum (callers that checked quantised() is false).
  float unquantised(Elements index) const {
    return static_cast<float>(static_cast<double>(g_(index)) * scale_);
  }

 private:
  SyntheticGrads g_;
  double quantum_, scale_;
};

/// The gradient region [d, d + n) of dtype t gets autograd's gradient of the scaled loss for
/// elements first..first+n-1 of its param: grads(k) x loss_scale x op_scale, rounded to t, added
/// to what it holds when accumulating (the new gradient rounded to t first, as autograd adds to
/// p.grad). `inf_at_first`: element 0 of the param is an injected inf (an overflow step).
void write_grads(DType t, unsigned char* d, Elements n, bool accumulate, const StandInGrads& grads,
                 Elements first, float loss_scale, float op_scale, bool inf_at_first);

/// The initial weights of a buffer of dtype t: element i is 0.25 x w(i), rounded to t.
void write_initial_weights(DType t, unsigned char* d, Elements n, const SyntheticGrads& w);

}  // namespace zerosim::exec
