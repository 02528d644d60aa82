// Units and element types used everywhere in zerosim.
//
// Quantities are integers where they are counted (bytes, elements, nanoseconds) so that results are
// exact and deterministic; rates are doubles. Unit strings such as "40GB/s" are parsed only by
// loaders.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace zerosim {

using Bytes = std::uint64_t;     ///< a byte count
using Elements = std::uint64_t;  ///< a tensor element count
using SimTime = std::int64_t;    ///< simulated time in integer nanoseconds

inline constexpr double kGiB = 1073741824.0;  ///< 2^30 bytes
inline constexpr double kGB = 1e9;            ///< 10^9 bytes (nccl-tests' GB)

/// Tensor element types, spelled as torch.distributed logs spell them (dtype_name).
enum class DType : std::uint8_t { Float16, BFloat16, Float32, Float64, UInt8, Int64 };
/// Number of DType values (for tables indexed by DType).
inline constexpr std::size_t kDTypeCount = static_cast<std::size_t>(DType::Int64) + 1;

/// Bytes per element.
constexpr Bytes dtype_size(DType t) {
  switch (t) {
    case DType::Float16:
    case DType::BFloat16:
      return 2;
    case DType::Float32:
      return 4;
    case DType::Float64:
    case DType::Int64:
      return 8;
    case DType::UInt8:
      return 1;
  }
  return 0;
}

/// torch name: "float16", "bfloat16", "float32", "float64", "uint8", "int64".
std::string_view dtype_name(DType t);

/// Accepts torch names and DeepSpeed spellings ("fp16", "half", "bf16", "fp32", "float", ...).
std::optional<DType> parse_dtype(std::string_view s);

/// "12.34 GiB" with two decimals, the unit spelled out.
std::string format_gib(Bytes b);
/// In GiB from 1 GiB up, else in the largest binary unit it fills ("2.31 MiB", "512 B"): a small
/// model's figures would read "0.00 GiB" in format_gib.
std::string format_size(Bytes b);

/// a * b, or nullopt when the product does not fit in 64 bits.
std::optional<std::uint64_t> checked_mul(std::uint64_t a, std::uint64_t b);
/// a + b, or nullopt when the sum does not fit in 64 bits.
std::optional<std::uint64_t> checked_add(std::uint64_t a, std::uint64_t b);

/// ceil(a / b) for b > 0.
constexpr std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return a / b + (a % b != 0); }

}  // namespace zerosim
