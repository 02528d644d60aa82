// What a lane draws in one frame: the spans inside the view (binary search on the lane's running
// maximum of span ends, so off-screen spans cost nothing), with runs of spans narrower than a
// minimum width merged into one item that says how many spans it hides (Tracy's zone folding).
// A merged run is found by binary search on span starts too, so a frame costs
// O(items drawn × log spans), not O(spans), however many spans the view holds.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "model/time_view.h"
#include "model/timeline_model.h"
#include "zerosim/trace.h"

namespace zerosim::view {

struct DrawItem {
  SimTime start_ns = 0;
  SimTime end_ns = 0;
  std::uint32_t first = 0;  ///< index into the lane's spans of the first span
  std::uint32_t count = 1;  ///< spans it stands for (> 1: a merged run of sub-pixel spans)
};

/// Replaces `out` with the items of `lane` visible in `view`. A span narrower than `min_px`
/// starts a merged run that takes every following sub-pixel span starting within `min_px` of the
/// run's end; a span at least `min_px` wide is never merged.
void visible_items(const Trace& trace, const Lane& lane, const TimeView& view, double min_px,
                   std::vector<DrawItem>& out);

/// The item under pixel x (`slop_px` either side for thin items), or nullopt.
std::optional<DrawItem> item_at(const std::vector<DrawItem>& items, const TimeView& view,
                                double x_px, double slop_px = 1.0);

}  // namespace zerosim::view
