// TimeView: int64 left edge + double scale, zoom around the cursor, pan, bounds, ruler ticks.
#include <gtest/gtest.h>

#include <limits>

#include "model/time_view.h"

namespace zerosim::view {
namespace {

TEST(ViewModelTimeView, FitMapsTheRangeOntoTheWidth) {
  TimeView v(1000, 0, 1'000'000);
  EXPECT_DOUBLE_EQ(v.px_per_ns(), 1e-3);
  EXPECT_DOUBLE_EQ(v.x_of(0), 0);
  EXPECT_DOUBLE_EQ(v.x_of(500'000), 500);
  EXPECT_EQ(v.t_at(250), 250'000);
  EXPECT_EQ(v.end_ns(), 1'000'000);
}

TEST(ViewModelTimeView, ZoomKeepsTheTimeUnderTheCursor) {
  TimeView v(1000, 0, 1'000'000);
  const SimTime under = v.t_at(300);
  v.zoom_at(300, 4.0);
  EXPECT_DOUBLE_EQ(v.px_per_ns(), 4e-3);
  EXPECT_NEAR(static_cast<double>(v.t_at(300)), static_cast<double>(under), 1.0);
  v.zoom_at(300, 0.25);
  EXPECT_NEAR(static_cast<double>(v.t_at(300)), static_cast<double>(under), 1.0);
  EXPECT_DOUBLE_EQ(v.px_per_ns(), 1e-3);
}

TEST(ViewModelTimeView, DeepZoomIntoALongRunKeepsNanosecondPrecision) {
  // 10^15 ns (11.6 days) into a run: a float would be off by ~10^8 ns here; int64 is exact.
  const SimTime far = 1'000'000'000'000'000;
  TimeView v(1000, 0, far + 1'000'000);
  for (int i = 0; i < 60; ++i) v.zoom_at(v.x_of(far + 123), 2.0);
  EXPECT_DOUBLE_EQ(v.px_per_ns(), kMaxPxPerNs);  // capped
  const double x = v.x_of(far + 123);
  EXPECT_EQ(v.t_at(x), far + 123);
  EXPECT_EQ(v.t_at(x + 1), far + 124);
}

TEST(ViewModelTimeView, PanMovesByPixelsAndBoundsStopIt) {
  TimeView v(1000, 0, 1'000'000);
  v.zoom_at(0, 10.0);  // 100'000 ns on screen
  v.pan_px(-200);      // drag left: later times
  EXPECT_EQ(v.start_ns(), 20'000);
  v.set_bounds(0, 1'000'000);
  v.pan_px(1e9);  // far right drag: stops half a screen before the start
  EXPECT_EQ(v.start_ns(), -50'000);
  v.pan_px(-1e12);  // far left drag: the end stays half a screen in
  EXPECT_EQ(v.end_ns(), 1'050'000);
  v.zoom_at(500, 1e-9);  // zooming out stops at twice the bounds
  EXPECT_DOUBLE_EQ(v.px_per_ns(), 1000.0 / 2'000'000.0);
}

TEST(ViewModelTimeView, AShiftedViewMapsTheOffsetTimesToTheSamePixels) {
  TimeView v(1000, 5'000, 6'000);
  v.set_bounds(5'000, 6'000);
  const TimeView g = v.shifted(5'000);  // a trace starting at 0 drawn aligned to 5'000
  EXPECT_DOUBLE_EQ(g.x_of(0), v.x_of(5'000));
  EXPECT_DOUBLE_EQ(g.x_of(250), v.x_of(5'250));
  EXPECT_DOUBLE_EQ(g.px_per_ns(), v.px_per_ns());
}

TEST(ViewModelTimeView, GarbageZoomFactorsAreIgnored) {
  TimeView v(1000, 0, 1'000'000);
  v.zoom_at(10, 0.0);
  v.zoom_at(10, -3.0);
  v.zoom_at(10, std::numeric_limits<double>::infinity());
  v.zoom_at(10, std::numeric_limits<double>::quiet_NaN());
  EXPECT_DOUBLE_EQ(v.px_per_ns(), 1e-3);
  EXPECT_EQ(v.start_ns(), 0);
}

TEST(ViewModelTimeView, TickStepIsThePowerOfTenAtLeastMinPixelsWide) {
  TimeView v(1000, 0, 1'000'000);  // 1 px = 1000 ns: 100 px = 100'000 ns
  EXPECT_EQ(v.tick_step_ns(100), 100'000);
  EXPECT_EQ(v.tick_step_ns(101), 1'000'000);
  TimeView tiny(1000, 0, 10);  // capped at 1 px/ns
  EXPECT_EQ(tiny.tick_step_ns(100), 100);
}

}  // namespace
}  // namespace zerosim::view
