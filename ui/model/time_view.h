// The visible time range of the timeline: int64 nanoseconds for the left edge, a double for the
// pixel scale only (ecosystem.md §1.6 item 7, as Tracy keeps its view), so zooming deep into a
// long run loses no precision. Pure arithmetic, no ImGui: the drawing layer and the tests share it.
#pragma once

#include <cstdint>

#include "zerosim/units.h"

namespace zerosim::view {

/// Zoom limits: at most 1 pixel per ns (rounding the left edge to whole ns then moves the cursor
/// by less than a pixel), at least the whole run plus margins on screen.
inline constexpr double kMaxPxPerNs = 1.0;

class TimeView {
 public:
  /// A view of `width_px` pixels showing [start_ns, end_ns] (end > start; otherwise 1 ns).
  TimeView(double width_px, SimTime start_ns, SimTime end_ns);

  /// Bounds the view may pan and zoom out to (the trace's extent); fit() shows exactly them.
  void set_bounds(SimTime lo_ns, SimTime hi_ns);
  void set_width(double width_px);
  /// Shows [start_ns, end_ns] across the width.
  void fit(SimTime start_ns, SimTime end_ns);
  /// Multiplies the scale by `factor` (> 1 zooms in) keeping the time under `cursor_px` fixed.
  void zoom_at(double cursor_px, double factor);
  /// Moves the content right by `dx_px` pixels (drag to the right shows earlier times).
  void pan_px(double dx_px);
  /// Puts `t_ns` at the centre, keeping the scale.
  void center_on(SimTime t_ns);

  /// The same view (width, scale) over times `offset_ns` earlier, without bounds: what a second
  /// trace aligned `offset_ns` later is drawn through (ghost overlay).
  TimeView shifted(SimTime offset_ns) const;

  /// Pixel x (relative to the view's left edge) of a time; may lie outside [0, width].
  double x_of(SimTime t_ns) const;
  /// Time at pixel x, rounded down to the ns.
  SimTime t_at(double x_px) const;
  SimTime start_ns() const { return start_ns_; }
  /// Time at the right edge (rounded up).
  SimTime end_ns() const;
  double px_per_ns() const { return px_per_ns_; }
  double width_px() const { return width_px_; }
  /// Duration of `px` pixels, at least 1 ns.
  SimTime ns_of_px(double px) const;

  /// Major tick step of the time ruler: the smallest power of ten of ns that is at least
  /// `min_px` pixels wide (Tracy's ruler).
  SimTime tick_step_ns(double min_px = 100.0) const;

 private:
  void clamp();

  SimTime start_ns_ = 0;
  double px_per_ns_ = 1.0;
  double width_px_ = 1.0;
  SimTime lo_ns_ = 0;
  SimTime hi_ns_ = 0;
  bool bounded_ = false;
};

}  // namespace zerosim::view
