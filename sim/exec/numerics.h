// Bit-exact 16-bit float storage for the host backend: IEEE binary16 (fp16) and bfloat16 to and
// from float32 with round-to-nearest-even, as CUDA's __float2half_rn / __float2bfloat16_rn and
// PyTorch's .to(torch.float16 / torch.bfloat16) round. Infinities and NaN are kept (a NaN stays a
// quiet NaN); fp16 overflow rounds to infinity and underflow to subnormals or signed zero.
#pragma once

#include <cstdint>
#include <cstring>

namespace zerosim::exec {

inline std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float bits_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline float bf16_to_float(std::uint16_t h) { return bits_float(std::uint32_t{h} << 16); }

inline std::uint16_t float_to_bf16(float f) {
  const std::uint32_t u = float_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
  const std::uint32_t rounded = u + 0x7FFFu + ((u >> 16) & 1u);  // ties to even
  return static_cast<std::uint16_t>(rounded >> 16);
}

inline float fp16_to_float(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t{h & 0x8000u} << 16;
  const std::uint32_t exp = (h >> 10) & 0x1Fu;
  std::uint32_t mant = h & 0x3FFu;
  if (exp == 0x1F) return bits_float(sign | 0x7F800000u | (mant << 13));  // inf / NaN
  if (exp != 0) return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
  if (mant == 0) return bits_float(sign);  // signed zero
  // Subnormal: normalise.
  std::uint32_t e = 113;
  while ((mant & 0x400u) == 0) {
    mant <<= 1;
    --e;
  }
  return bits_float(sign | (e << 23) | ((mant & 0x3FFu) << 13));
}

inline std::uint16_t float_to_fp16(float f) {
  const std::uint32_t u = float_bits(f);
  const auto sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const std::uint32_t abs = u & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return static_cast<std::uint16_t>(sign | 0x7E00u);  // NaN
  // 65520 (halfway from 65504, the largest finite half, to 65536) and above round to infinity.
  if (abs >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);
  if (abs >= 0x38800000u) {  // normal half (>= 2^-14)
    const std::uint32_t mant = abs & 0x7FFFFFu;
    const std::uint32_t exp = (abs >> 23) - 112u;
    std::uint32_t h = (exp << 10) | (mant >> 13);
    const std::uint32_t rest = mant & 0x1FFFu;                 // the 13 dropped bits
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // ties to even (may carry to inf)
    return static_cast<std::uint16_t>(sign | h);
  }
  if (abs < 0x33000000u) return sign;  // below half the smallest subnormal (2^-25): zero
  // Subnormal half: value = mant_h × 2^-24.
  const std::uint32_t exp = abs >> 23;  // 102..112
  const std::uint32_t mant = (abs & 0x7FFFFFu) | 0x800000u;
  const std::uint32_t shift = 126u - exp;  // 14..24: bits dropped from the 24-bit mantissa
  std::uint32_t h = mant >> shift;
  const std::uint32_t rest = mant & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  if (rest > half || (rest == half && (h & 1u))) ++h;
  return static_cast<std::uint16_t>(sign | h);
}

}  // namespace zerosim::exec
