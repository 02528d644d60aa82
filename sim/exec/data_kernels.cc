// data_kernels.h: the typed loops, and the element-by-element definitions they are instances of.
#include "data_kernels.h"

#include <algorithm>
#include <cstring>

#include "numerics.h"
#include "vector_clones.h"

namespace zerosim::exec {

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

namespace {

// The dtypes computed in float: load<T> and store<T> are load() and store() for them, without the
// switch (a value computed in float is stored as that float, rounded to T).
enum class F { Half, Brain, Single };

template <F T>
float ld(const unsigned char* p, Elements i) {
  if constexpr (T == F::Single) {
    float f;
    std::memcpy(&f, p + 4 * i, 4);
    return f;
  } else {
    std::uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    return T == F::Half ? fp16_to_float(h) : bf16_to_float(h);
  }
}

template <F T>
void st(unsigned char* p, Elements i, float v) {
  if constexpr (T == F::Single) {
    std::memcpy(p + 4 * i, &v, 4);
  } else {
    const std::uint16_t h = T == F::Half ? float_to_fp16(v) : float_to_bf16(v);
    std::memcpy(p + 2 * i, &h, 2);
  }
}

// A value as stored in T and read back (autograd's gradient in the gradient's dtype).
template <F T>
float rounded(float v) {
  if constexpr (T == F::Half) return fp16_to_float(float_to_fp16(v));
  if constexpr (T == F::Brain) return bf16_to_float(float_to_bf16(v));
  return v;
}

bool as_f(DType t, F& out) {
  switch (t) {
    case DType::Float16:
      out = F::Half;
      return true;
    case DType::BFloat16:
      out = F::Brain;
      return true;
    case DType::Float32:
      out = F::Single;
      return true;
    default:
      return false;
  }
}

// convert()'s float arithmetic for one (src, dst, scaled, accumulate): v = src; v *= scale;
// v = dst + v; dst = v rounded. (`__restrict` would be wrong: d may equal s.)
template <F S, F D, bool Scaled, bool Acc>
void convert_run(unsigned char* d, const unsigned char* s, Elements n, float scale) {
  for (Elements i = 0; i < n; ++i) {
    float v = ld<S>(s, i);
    if constexpr (Scaled) v *= scale;
    if constexpr (Acc) v = ld<D>(d, i) + v;
    st<D>(d, i, v);
  }
}

template <F S, F D>
void convert_modes(unsigned char* d, const unsigned char* s, Elements n, float scale, bool scaled,
                   bool acc) {
  if (scaled)
    acc ? convert_run<S, D, true, true>(d, s, n, scale)
        : convert_run<S, D, true, false>(d, s, n, scale);
  else
    acc ? convert_run<S, D, false, true>(d, s, n, scale)
        : convert_run<S, D, false, false>(d, s, n, scale);
}

template <F S>
void convert_to(F dt, unsigned char* d, const unsigned char* s, Elements n, float scale,
                bool scaled, bool acc) {
  switch (dt) {
    case F::Half:
      return convert_modes<S, F::Half>(d, s, n, scale, scaled, acc);
    case F::Brain:
      return convert_modes<S, F::Brain>(d, s, n, scale, scaled, acc);
    case F::Single:
      return convert_modes<S, F::Single>(d, s, n, scale, scaled, acc);
  }
}

bool wide(DType t) { return t == DType::Float64 || t == DType::Int64; }

template <F T, bool Acc, bool Quantised>
void grads_run(unsigned char* d, Elements begin, Elements n, const StandInGrads& grads_in,
               Elements first, float ls, float op_scale) {
  const StandInGrads grads = grads_in;  // a local copy: its key stays in a register (no aliasing)
  for (Elements i = begin; i < n; ++i) {
    const float g = (Quantised ? grads(first + i) : grads.unquantised(first + i)) * ls * op_scale;
    if constexpr (Acc)
      st<T>(d, i, ld<T>(d, i) + rounded<T>(g));
    else
      st<T>(d, i, g);  // storing the rounded value again rounds to the same bits
  }
}

template <F T>
void grads_typed(unsigned char* d, Elements begin, Elements n, bool acc, const StandInGrads& grads,
                 Elements first, float ls, float op_scale) {
  const bool q = grads.quantised();
  if (acc)
    q ? grads_run<T, true, true>(d, begin, n, grads, first, ls, op_scale)
      : grads_run<T, true, false>(d, begin, n, grads, first, ls, op_scale);
  else
    q ? grads_run<T, false, true>(d, begin, n, grads, first, ls, op_scale)
      : grads_run<T, false, false>(d, begin, n, grads, first, ls, op_scale);
}

template <F T>
void weights_run(unsigned char* d, Elements n, const SyntheticGrads& w_in) {
  const SyntheticGrads w = w_in;  // as grads_run
  for (Elements i = 0; i < n; ++i) st<T>(d, i, 0.25f * w(i));
}

// sum_squares' loop: x as stored, widened to double, squared and added in element order.
template <F T>
double squares_run(const unsigned char* p, Elements n, double sq) {
  for (Elements i = 0; i < n; ++i) {
    const double x = ld<T>(p, i);
    sq += x * x;
  }
  return sq;
}

// any_nonfinite's loop: an all-ones exponent is inf or NaN; or-ed over every element (no early
// exit, so it vectorises; the answer is the same).
template <class U>
bool nonfinite_run(const unsigned char* p, Elements n, U exponent) {
  bool bad = false;
  for (Elements i = 0; i < n; ++i) {
    U u;
    std::memcpy(&u, p + sizeof(U) * i, sizeof(U));
    bad |= (u & exponent) == exponent;
  }
  return bad;
}

}  // namespace

ZEROSIM_VECTOR_CLONES
double sum_squares(DType t, const unsigned char* p, Elements n, double sq) {
  F f{};
  if (as_f(t, f)) {
    switch (f) {
      case F::Half:
        return squares_run<F::Half>(p, n, sq);
      case F::Brain:
        return squares_run<F::Brain>(p, n, sq);
      case F::Single:
        return squares_run<F::Single>(p, n, sq);
    }
  }
  for (Elements i = 0; i < n; ++i) {
    const double x = load(t, p, i);
    sq += x * x;
  }
  return sq;
}

ZEROSIM_VECTOR_CLONES
bool any_nonfinite(DType t, const unsigned char* p, Elements n) {
  switch (t) {
    case DType::Float16:
      return nonfinite_run<std::uint16_t>(p, n, 0x7C00u);
    case DType::BFloat16:
      return nonfinite_run<std::uint16_t>(p, n, 0x7F80u);
    case DType::Float32:
      return nonfinite_run<std::uint32_t>(p, n, 0x7F800000u);
    default:
      for (Elements i = 0; i < n; ++i)
        if (!std::isfinite(load(t, p, i))) return true;
      return false;
  }
}

ZEROSIM_VECTOR_CLONES
void convert(unsigned char* d, DType dt, const unsigned char* s, DType st, Elements n, double scale,
             bool accumulate) {
  if (s && !accumulate && scale == 1.0 && dt == st) {
    std::memmove(d, s, n * dtype_size(dt));
    return;
  }
  if (!s && !accumulate) {  // zeros: all-zero bytes in every dtype
    std::memset(d, 0, n * dtype_size(dt));
    return;
  }
  const auto fscale = static_cast<float>(scale);
  F sf{}, df{};
  if (s && as_f(st, sf) && as_f(dt, df)) {
    const bool scaled = scale != 1.0;
    switch (sf) {
      case F::Half:
        return convert_to<F::Half>(df, d, s, n, fscale, scaled, accumulate);
      case F::Brain:
        return convert_to<F::Brain>(df, d, s, n, fscale, scaled, accumulate);
      case F::Single:
        return convert_to<F::Single>(df, d, s, n, fscale, scaled, accumulate);
    }
  }
  const bool dbl = wide(dt) || wide(st);
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

ZEROSIM_VECTOR_CLONES
void write_grads(DType t, unsigned char* d, Elements n, bool accumulate, const StandInGrads& grads,
                 Elements first, float ls, float op_scale, bool inf_at_first) {
  if (n == 0) return;
  // The injected inf (element 0 of the param) as the loop below would write it.
  const bool inf_here = inf_at_first && first == 0;
  if (inf_here)
    store(t, d, 0, accumulate ? static_cast<float>(load(t, d, 0)) + INFINITY : INFINITY);
  const Elements begin = inf_here ? 1 : 0;
  F f{};
  if (as_f(t, f)) {
    switch (f) {
      case F::Half:
        return grads_typed<F::Half>(d, begin, n, accumulate, grads, first, ls, op_scale);
      case F::Brain:
        return grads_typed<F::Brain>(d, begin, n, accumulate, grads, first, ls, op_scale);
      case F::Single:
        return grads_typed<F::Single>(d, begin, n, accumulate, grads, first, ls, op_scale);
    }
  }
  for (Elements i = begin; i < n; ++i) {
    const float v = grads(first + i) * ls * op_scale;
    store(t, d, i, accumulate ? static_cast<float>(load(t, d, i)) + v : v);
  }
}

ZEROSIM_VECTOR_CLONES
void write_initial_weights(DType t, unsigned char* d, Elements n, const SyntheticGrads& w) {
  F f{};
  if (as_f(t, f)) {
    switch (f) {
      case F::Half:
        return weights_run<F::Half>(d, n, w);
      case F::Brain:
        return weights_run<F::Brain>(d, n, w);
      case F::Single:
        return weights_run<F::Single>(d, n, w);
    }
  }
  for (Elements i = 0; i < n; ++i) store(t, d, i, 0.25f * w(i));
}

}  // namespace zerosim::exec
