// The memory stack of one traced rank: device bytes over time stacked by category, the device
// capacity, the peak (with its breakdown) and the OOM, reduced to one column per pixel for drawing
// (Tracy's per-pixel min/max plots, ecosystem.md §1.7): each column shows the sample with the
// largest total among those in it, or the state carried from before, so a spike narrower than a
// pixel is never lost. O(width × log samples) per frame.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "model/time_view.h"
#include "zerosim/trace.h"

namespace zerosim::view {

struct MemoryColumn {
  int x = 0;  ///< pixel column, 0 = the view's left edge
  Bytes total = 0;
  CategoryBytes by_category{};
};

class MemoryStack {
 public:
  /// `capacity` in bytes (0: unknown). The rank must outlive the stack.
  MemoryStack(const TraceRank& rank, Bytes capacity);

  /// Peak from the curve itself (the largest sample; the first on ties).
  Bytes peak_bytes() const { return peak_bytes_; }
  SimTime peak_t() const { return peak_t_; }
  const CategoryBytes& peak_by_category() const { return peak_by_category_; }
  Bytes capacity() const { return capacity_; }
  const std::optional<OomEvent>& oom() const { return rank_->oom; }
  /// Top of the y axis: the capacity (plus 5%) when the peak reaches a quarter of it or more,
  /// else 125% of the peak (the capacity line is then off the plot, and the drawing says so).
  Bytes y_max() const;

  /// The state at time t: the last sample at or before t (all zero before the first).
  MemorySample at(SimTime t) const;
  /// Replaces `out` with one column per pixel of [0, width) where the curve has a value.
  void columns(const TimeView& view, std::vector<MemoryColumn>& out) const;

 private:
  const TraceRank* rank_;
  Bytes capacity_ = 0;
  Bytes peak_bytes_ = 0;
  SimTime peak_t_ = 0;
  CategoryBytes peak_by_category_{};
};

}  // namespace zerosim::view
