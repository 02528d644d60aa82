// Element types and byte formatting.
#include "zerosim/units.h"

#include <array>
#include <cctype>
#include <cstdio>
#include <utility>

namespace zerosim {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::Float16:
      return "float16";
    case DType::BFloat16:
      return "bfloat16";
    case DType::Float32:
      return "float32";
    case DType::Float64:
      return "float64";
    case DType::UInt8:
      return "uint8";
    case DType::Int64:
      return "int64";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view s) {
  std::string low(s);
  for (char& c : low) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (low.rfind("torch.", 0) == 0) low = low.substr(6);
  static const std::array<std::pair<std::string_view, DType>, 16> kNames = {{
      {"float16", DType::Float16},
      {"fp16", DType::Float16},
      {"half", DType::Float16},
      {"bfloat16", DType::BFloat16},
      {"bf16", DType::BFloat16},
      {"float32", DType::Float32},
      {"fp32", DType::Float32},
      {"float", DType::Float32},
      {"float64", DType::Float64},
      {"fp64", DType::Float64},
      {"double", DType::Float64},
      {"uint8", DType::UInt8},
      {"u8", DType::UInt8},
      {"byte", DType::UInt8},
      {"int64", DType::Int64},
      {"long", DType::Int64},
  }};
  for (const auto& [name, t] : kNames)
    if (low == name) return t;
  return std::nullopt;
}

std::string format_gib(Bytes b) {
  // 2^64 - 1 is a saturated count (zerosim/saturating.h), not a size: never "17179869184.00 GiB".
  if (b == ~Bytes{0}) return "overflow";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(b) / kGiB);
  return buf;
}

std::string format_size(Bytes b) {
  if (b < 1024) return std::to_string(b) + " B";
  // The unit is chosen after rounding to two decimals: 1048575 B is "1.00 MiB", not "1024.00 KiB".
  const double v = static_cast<double>(b);
  char buf[64];
  if (v < 0x1p20 - 0x1p10 * 0.005)
    std::snprintf(buf, sizeof buf, "%.2f KiB", v / 0x1p10);
  else if (v < 0x1p30 - 0x1p20 * 0.005)
    std::snprintf(buf, sizeof buf, "%.2f MiB", v / 0x1p20);
  else
    return format_gib(b);
  return buf;
}

std::optional<std::uint64_t> checked_mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::optional<std::uint64_t> checked_add(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

}  // namespace zerosim
