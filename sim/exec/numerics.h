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

// Both fp16 conversions are branch-free (every case computed, one selected) so that loops over
// them vectorise; they agree bit for bit with the case-by-case definitions they replaced on every
// one of the 2^16 halves and 2^32 floats (checked exhaustively when they were introduced).
inline float fp16_to_float(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t{h & 0x8000u} << 16;
  const std::uint32_t em = std::uint32_t{h & 0x7FFFu} << 13;  // exponent and mantissa, aligned
  const std::uint32_t exp = em & 0x0F800000u;
  const std::uint32_t normal = em + (112u << 23);   // rebias 15 -> 127
  const std::uint32_t special = em + (224u << 23);  // inf / NaN: exponent all ones, mantissa kept
  // Subnormal (exponent 0): mant x 2^-24, exactly (2^-14 + mant x 2^-24) - 2^-14 in float; zero
  // gives +0, the sign is or-ed in below.
  const float sub = bits_float(em + (113u << 23)) - bits_float(113u << 23);
  const std::uint32_t mag = exp == 0x0F800000u ? special : exp == 0 ? float_bits(sub) : normal;
  return bits_float(sign | mag);
}

inline std::uint16_t float_to_fp16(float f) {
  const std::uint32_t u = float_bits(f);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  const std::uint32_t abs = u & 0x7FFFFFFFu;
  // Normal half (>= 2^-14): rebias, round the 13 dropped bits to nearest even; values from 65520
  // (halfway from 65504, the largest finite half, to 65536) carry into the infinity encoding.
  const std::uint32_t normal = (abs - (112u << 23) + 0xFFFu + ((abs >> 13) & 1u)) >> 13;
  // Subnormal half: adding 0.5 rounds the value to a multiple of 2^-24 (the float ulp at 0.5),
  // nearest even, in the FPU; below 2^-25 that is zero.
  const std::uint32_t sub = float_bits(bits_float(abs) + 0.5f) - float_bits(0.5f);
  const std::uint32_t big = abs > 0x7F800000u ? 0x7E00u : 0x7C00u;  // NaN (quiet) : overflow
  const std::uint32_t mag = abs >= 0x47800000u ? big : abs < 0x38800000u ? sub : normal;
  return static_cast<std::uint16_t>(sign | mag);
}

}  // namespace zerosim::exec
