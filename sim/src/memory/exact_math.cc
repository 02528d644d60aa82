// floor_scaled: exact floor(num * f / den) on the binary value of a double factor.
//
// DeepSpeed's estimators multiply integer parameter counts by a float factor (1.5 by default);
// zerosim reproduces the exact real-number result instead of Python's float rounding, which agrees
// with Python whenever the product is below 2^53 (see ds_estimator.cc).
#include "memory/exact_math.h"

#include <cmath>

namespace zerosim::memory {

Bytes floor_scaled(U128 num, U128 den, double f) {
  if (!(f > 0) || den == 0 || num == 0) return 0;  // also NaN
  if (std::isinf(f)) return kBytesMax;
  int exp = 0;
  double frac = std::frexp(f, &exp);  // f = frac * 2^exp, frac in [0.5, 1)
  // frac has at most 53 significant bits, so frac * 2^53 is an exact integer.
  auto m = static_cast<U128>(std::ldexp(frac, 53));
  int shift = exp - 53;
  while (m % 2 == 0) {  // drop trailing zero bits to keep the products small (m > 0 here)
    m /= 2;
    ++shift;
  }
  // Beyond 128 bits (only for absurd inputs): long double, then clamp.
  auto approx = [&] {
    long double v =
        static_cast<long double>(num) / static_cast<long double>(den) * static_cast<long double>(f);
    return v >= static_cast<long double>(kBytesMax) ? kBytesMax : static_cast<Bytes>(v);
  };
  U128 prod = mul128(num, m);
  if (prod == kU128Max) return approx();
  if (shift >= 0) {
    if (shift >= 127 || prod > (kU128Max >> shift)) return approx();
    return clamp64((prod << shift) / den);
  }
  int k = -shift;
  if (k >= 127 || den > (kU128Max >> k)) return 0;  // den * 2^k exceeds any 128-bit product
  return clamp64(prod / (den << k));
}

}  // namespace zerosim::memory
