// Plain memory results shared by the memory ledger (memory_ledger.h) and the trace format
// (trace.h): a peak with its breakdown by category, the first out-of-memory event, one point of a
// memory curve. No dependency beyond the IR's enums.
#pragma once

#include <cstdint>
#include <string>

#include "zerosim/ir_types.h"
#include "zerosim/units.h"

namespace zerosim {

/// The largest live total of one role and what it was made of.
struct MemoryPeak {
  Bytes bytes = 0;              ///< live bytes at the peak
  SimTime t = 0;                ///< time of the first event that reached it, ns
  std::uint64_t event = 0;      ///< index of that event (0 when nothing was ever live)
  CategoryBytes by_category{};  ///< breakdown at the peak; sums to `bytes`
};

/// The first event that took a role's device bytes above the capacity.
struct OomEvent {
  SimTime t = 0;  ///< ns
  std::uint32_t role = 0;
  std::uint32_t buffer = 0;  ///< ledger buffer being allocated
  std::string buffer_name;
  BufferCategory category = BufferCategory::Temp;
  Bytes bytes = 0;       ///< size of that allocation on this role
  Bytes live_bytes = 0;  ///< device bytes live after it
  Bytes capacity = 0;
};

/// One point of a role's memory curve: live bytes after an event (counter tracks of the trace).
struct MemorySample {
  SimTime t = 0;
  Bytes total = 0;              ///< device bytes live
  CategoryBytes by_category{};  ///< device bytes per category
};

}  // namespace zerosim
