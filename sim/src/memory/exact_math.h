// Exact and saturating integer arithmetic for memory accounting (private to sim/src/memory).
//
// Byte counts in zerosim are exact integers. Products such as s·b·h·34 or P·18 can exceed 64 bits
// for absurd but accepted inputs (P up to 1e15, sequence lengths chosen by a user), so every
// product here is formed in 128 bits and saturates at UINT64_MAX instead of wrapping: a saturated
// result is still "does not fit", never a silently small number.
#pragma once

#include <cstdint>
#include <limits>

#include "zerosim/units.h"

namespace zerosim::memory {

__extension__ typedef unsigned __int128 U128;  // __extension__: no -Wpedantic warning for __int128

inline constexpr U128 kU128Max = ~static_cast<U128>(0);
inline constexpr Bytes kBytesMax = std::numeric_limits<Bytes>::max();

/// a * b in 128 bits, saturating at the 128-bit maximum.
constexpr U128 mul128(U128 a, U128 b) {
  if (a != 0 && b > kU128Max / a) return kU128Max;
  return a * b;
}
/// a + b in 128 bits, saturating.
constexpr U128 add128(U128 a, U128 b) { return a > kU128Max - b ? kU128Max : a + b; }
/// Clamps a 128-bit count to 64 bits (UINT64_MAX when it does not fit).
constexpr Bytes clamp64(U128 v) { return v > kBytesMax ? kBytesMax : static_cast<Bytes>(v); }

/// a + b, saturating at UINT64_MAX.
constexpr Bytes sat_add(Bytes a, Bytes b) { return a > kBytesMax - b ? kBytesMax : a + b; }
/// a * b, saturating at UINT64_MAX.
constexpr Bytes sat_mul(Bytes a, Bytes b) { return clamp64(mul128(a, b)); }
/// elements * dtype size, saturating.
constexpr Bytes bytes_of(Elements n, DType t) { return sat_mul(n, dtype_size(t)); }

/// floor(num * f / den) for a finite f >= 0, computed exactly on f's binary value (a double is
/// m * 2^e with an integer m < 2^53), saturating at UINT64_MAX. den must be > 0.
Bytes floor_scaled(U128 num, U128 den, double f);

}  // namespace zerosim::memory
