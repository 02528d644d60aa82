// Culling and merging: see span_culling.h.
#include "model/span_culling.h"

#include <algorithm>

namespace zerosim::view {

void visible_items(const Trace& trace, const Lane& lane, const TimeView& view, double min_px,
                   std::vector<DrawItem>& out) {
  out.clear();
  const SimTime view_lo = view.start_ns();
  const SimTime view_hi = view.end_ns();
  const SimTime min_ns = view.ns_of_px(min_px);
  const auto start_of = [&](std::uint32_t i) { return trace.spans[lane.spans[i]].start_ns; };
  const auto end_of = [&](std::uint32_t i) {
    return trace.spans[lane.spans[i]].start_ns + trace.spans[lane.spans[i]].dur_ns;
  };
  const auto n = static_cast<std::uint32_t>(lane.spans.size());
  // First span that can reach into the view: max_end is non-decreasing.
  auto i = static_cast<std::uint32_t>(
      std::lower_bound(lane.max_end.begin(), lane.max_end.end(), view_lo) - lane.max_end.begin());
  while (i < n && start_of(i) <= view_hi) {
    const SimTime s = start_of(i);
    const SimTime e = end_of(i);
    if (e - s >= min_ns) {
      out.push_back({s, e, i, 1});
      ++i;
      continue;
    }
    // A sub-pixel run (Tracy's zone folding): jump by binary search to the first span that
    // reaches min_px past the run's end; everything before it is absorbed. That span joins the
    // run only if it is itself sub-pixel and starts within min_px; a wide span ends the run, so
    // a long op right after a burst of tiny ones is still drawn on its own.
    SimTime run_end = std::max(e, s + 1);
    std::uint32_t j = i + 1;
    while (j < n && start_of(j) <= view_hi) {  // a run ends at the view's right edge
      const SimTime limit = run_end + min_ns;
      const auto k = static_cast<std::uint32_t>(
          std::lower_bound(lane.max_end.begin() + j, lane.max_end.end(), limit) -
          lane.max_end.begin());
      if (k > j) {
        run_end = std::max(run_end, lane.max_end[k - 1]);
        j = k;
        continue;
      }
      if (start_of(j) >= limit || end_of(j) - start_of(j) >= min_ns) break;
      run_end = std::max(run_end, end_of(j));
      ++j;
    }
    out.push_back({s, run_end, i, j - i});
    i = j;
  }
}

std::optional<DrawItem> item_at(const std::vector<DrawItem>& items, const TimeView& view,
                                double x_px, double slop_px) {
  const SimTime t = view.t_at(x_px);
  // Items are in start order and do not overlap in pixels much; pick the nearest containing one.
  auto it = std::upper_bound(items.begin(), items.end(), t,
                             [](SimTime v, const DrawItem& d) { return v < d.start_ns; });
  std::optional<DrawItem> best;
  double best_dist = slop_px;
  for (int k = 0; k < 2 && it != items.begin(); ++k) {
    --it;
    const double x0 = view.x_of(it->start_ns);
    const double x1 = view.x_of(it->end_ns);
    const double dist = x_px < x0 ? x0 - x_px : (x_px > x1 ? x_px - x1 : 0.0);
    if (dist <= best_dist) {
      best_dist = dist;
      best = *it;
      if (dist == 0) break;
    }
  }
  return best;
}

}  // namespace zerosim::view
