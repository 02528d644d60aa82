// Saturating arithmetic on sizes and times (issue 12): a sum or difference that does not fit in
// 64 bits never wraps. A byte count saturates at kBytesOverflow, which printers show as "overflow"
// (format_gib) and the planner refuses naming the inputs; a time saturates at the int64 limits
// (signed overflow is undefined behaviour, and UBSan stops on it).
#pragma once

#include <cstdint>

#include "zerosim/units.h"

namespace zerosim {

/// A byte count that saturated: the true value does not fit in 64 bits (2^64 - 1, which would
/// otherwise read as 17179869184.00 GiB).
inline constexpr Bytes kBytesOverflow = ~Bytes{0};

/// a + b, or kBytesOverflow when the sum does not fit (a saturated operand stays saturated).
constexpr Bytes saturating_add(Bytes a, Bytes b) {
  return a > kBytesOverflow - b ? kBytesOverflow : a + b;
}

/// capacity - used as a signed count clamped to +-INT64_MAX: a headroom, negative when `used`
/// exceeds `capacity`, and symmetric so that negating it is defined. Casting either operand to
/// int64 first flips its sign above 2^63.
constexpr std::int64_t signed_difference(Bytes capacity, Bytes used) {
  constexpr auto kMax = static_cast<Bytes>(INT64_MAX);
  const Bytes d = capacity >= used ? capacity - used : used - capacity;
  const auto m = static_cast<std::int64_t>(d > kMax ? kMax : d);
  return capacity >= used ? m : -m;
}

/// a + b for times and durations, saturating at the int64 limits.
constexpr SimTime add_time(SimTime a, SimTime b) {
  SimTime r = 0;
  if (!__builtin_add_overflow(a, b, &r)) return r;
  return b < 0 ? INT64_MIN : INT64_MAX;
}

/// The end of a span or comm record: start + duration, saturating (add_time). The trace reader
/// refuses records ending past INT64_MAX; traces built in memory and sums of many durations are
/// held to the same bound here.
constexpr SimTime span_end(SimTime start_ns, SimTime dur_ns) { return add_time(start_ns, dur_ns); }

}  // namespace zerosim
