// TimeView arithmetic: see time_view.h. Every conversion goes through the int64 left edge and the
// double scale; nothing else is stored.
#include "model/time_view.h"

#include <algorithm>
#include <cmath>

namespace zerosim::view {

TimeView::TimeView(double width_px, SimTime start_ns, SimTime end_ns)
    : width_px_(std::max(width_px, 1.0)) {
  fit(start_ns, end_ns);
}

void TimeView::set_bounds(SimTime lo_ns, SimTime hi_ns) {
  lo_ns_ = lo_ns;
  hi_ns_ = std::max(hi_ns, lo_ns + 1);
  bounded_ = true;
  clamp();
}

void TimeView::set_width(double width_px) {
  width_px_ = std::max(width_px, 1.0);
  clamp();
}

void TimeView::fit(SimTime start_ns, SimTime end_ns) {
  const SimTime span = std::max<SimTime>(end_ns - start_ns, 1);
  start_ns_ = start_ns;
  px_per_ns_ = std::min(width_px_ / static_cast<double>(span), kMaxPxPerNs);
  clamp();
}

void TimeView::zoom_at(double cursor_px, double factor) {
  if (!(factor > 0) || !std::isfinite(factor)) return;
  const double t_cursor = static_cast<double>(start_ns_) + cursor_px / px_per_ns_;
  px_per_ns_ = std::min(px_per_ns_ * factor, kMaxPxPerNs);
  if (bounded_) {  // zooming out stops at twice the bounds
    const double min_scale = width_px_ / (2.0 * static_cast<double>(hi_ns_ - lo_ns_));
    px_per_ns_ = std::max(px_per_ns_, min_scale);
  }
  start_ns_ = static_cast<SimTime>(std::llround(t_cursor - cursor_px / px_per_ns_));
  clamp();
}

void TimeView::pan_px(double dx_px) {
  start_ns_ -= static_cast<SimTime>(std::llround(dx_px / px_per_ns_));
  clamp();
}

void TimeView::center_on(SimTime t_ns) {
  start_ns_ = t_ns - static_cast<SimTime>(std::llround(width_px_ / (2.0 * px_per_ns_)));
  clamp();
}

TimeView TimeView::shifted(SimTime offset_ns) const {
  TimeView v = *this;
  v.bounded_ = false;
  v.start_ns_ = start_ns_ - offset_ns;
  return v;
}

double TimeView::x_of(SimTime t_ns) const {
  return static_cast<double>(t_ns - start_ns_) * px_per_ns_;
}

SimTime TimeView::t_at(double x_px) const {
  return start_ns_ + static_cast<SimTime>(std::floor(x_px / px_per_ns_));
}

SimTime TimeView::end_ns() const {
  return start_ns_ + static_cast<SimTime>(std::ceil(width_px_ / px_per_ns_));
}

SimTime TimeView::ns_of_px(double px) const {
  return std::max<SimTime>(1, static_cast<SimTime>(std::ceil(px / px_per_ns_)));
}

SimTime TimeView::tick_step_ns(double min_px) const {
  SimTime step = 1;
  while (static_cast<double>(step) * px_per_ns_ < min_px && step < (SimTime{1} << 61) / 10) {
    step *= 10;
  }
  return step;
}

void TimeView::clamp() {
  if (!bounded_) return;
  // Keep some of the run on screen: the left edge may go half a screen before the start and the
  // right edge half a screen past the end.
  const SimTime half = static_cast<SimTime>(std::llround(width_px_ / (2.0 * px_per_ns_)));
  const SimTime visible = end_ns() - start_ns_;
  const SimTime min_start = lo_ns_ - half;
  const SimTime max_start = std::max(min_start, hi_ns_ + half - visible);
  start_ns_ = std::clamp(start_ns_, min_start, max_start);
}

}  // namespace zerosim::view
