// Culling and merging of a lane's spans, and hit-testing of what is drawn.
#include <gtest/gtest.h>

#include "model/span_culling.h"
#include "view_model_testlib.h"

namespace zerosim::view {
namespace {

using testing::rank;
using testing::span;

Trace lane_trace(const std::vector<std::pair<SimTime, SimTime>>& start_dur) {
  Trace t;
  t.ranks = {rank(0, 0)};
  std::uint32_t op = 0;
  for (auto [s, d] : start_dur) t.spans.push_back(span(0, Stream::Compute, op++, s, d));
  return t;
}

TEST(ViewModelCulling, OffScreenSpansAreSkipped) {
  const Trace t = lane_trace({{0, 100}, {200, 100}, {400, 100}, {600, 100}});
  TimelineModel m(t);
  TimeView v(100, 250, 450);  // 2 ns per pixel
  std::vector<DrawItem> items;
  visible_items(t, m.groups()[0].lanes[0], v, 3.0, items);
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].first, 1u);  // [200, 300] reaches into the view
  EXPECT_EQ(items[1].first, 2u);
  EXPECT_EQ(items[0].count, 1u);
}

TEST(ViewModelCulling, SubPixelSpansMergeIntoOneItemThatCountsThem) {
  // Ten 1 ns spans 1 ns apart, then a wide span far away, then two tiny ones far apart.
  std::vector<std::pair<SimTime, SimTime>> sd;
  sd.reserve(13);
  for (int i = 0; i < 10; ++i) sd.emplace_back(i * 2, 1);
  sd.emplace_back(1000, 400);
  sd.emplace_back(2000, 1);
  sd.emplace_back(3000, 1);
  const Trace t = lane_trace(sd);
  TimelineModel m(t);
  TimeView v(400, 0, 4000);  // 10 ns per pixel: a 1 ns span is 0.1 px
  std::vector<DrawItem> items;
  visible_items(t, m.groups()[0].lanes[0], v, 3.0, items);
  ASSERT_EQ(items.size(), 4u);
  EXPECT_EQ(items[0].count, 10u);
  EXPECT_EQ(items[0].start_ns, 0);
  EXPECT_EQ(items[0].end_ns, 19);
  EXPECT_EQ(items[1].count, 1u);
  EXPECT_EQ(items[1].start_ns, 1000);
  EXPECT_EQ(items[2].count, 1u);  // 2000 and 3000 are 100 px apart: not merged
  EXPECT_EQ(items[3].first, 12u);
  // Zoomed in to the limit (1 px per ns) with a 0.5 px minimum, every span is its own item.
  TimeView close(400, 0, 40);
  visible_items(t, m.groups()[0].lanes[0], close, 0.5, items);
  EXPECT_EQ(items.size(), 10u);
}

TEST(ViewModelCulling, AWideSpanRightAfterTinyOnesIsNotSwallowed) {
  // Backward passes interleaved with bucket copies: 1 ns copies right before 500 ns ops.
  std::vector<std::pair<SimTime, SimTime>> sd;
  sd.reserve(8);
  for (SimTime k = 0; k < 4; ++k) {
    sd.emplace_back(k * 1000, 1);
    sd.emplace_back(k * 1000 + 1, 500);
  }
  const Trace t = lane_trace(sd);
  TimelineModel m(t);
  TimeView v(400, 0, 4000);  // 10 ns per pixel: the ops are 50 px, the copies 0.1 px
  std::vector<DrawItem> items;
  visible_items(t, m.groups()[0].lanes[0], v, 3.0, items);
  ASSERT_EQ(items.size(), 8u);
  for (std::size_t k = 0; k < 8; ++k) {
    EXPECT_EQ(items[k].first, k);
    EXPECT_EQ(items[k].count, 1u);
  }
}

TEST(ViewModelCulling, AMillionSpansReduceToAtMostAFewItemsPerPixel) {
  std::vector<std::pair<SimTime, SimTime>> sd;
  sd.reserve(1'000'000);
  for (SimTime i = 0; i < 1'000'000; ++i) sd.emplace_back(i * 100, 60);
  const Trace t = lane_trace(sd);
  TimelineModel m(t);
  TimeView v(1000, 0, 100'000'000);
  std::vector<DrawItem> items;
  visible_items(t, m.groups()[0].lanes[0], v, 3.0, items);
  ASSERT_EQ(items.size(), 1u);  // back-to-back sub-pixel spans: one merged run
  EXPECT_EQ(items[0].count, 1'000'000u);
  EXPECT_EQ(items[0].end_ns, 99'999'960);
  // Zoomed to the middle: the merged run stops at the view's right edge instead of running on
  // through the half million spans after it.
  v.fit(25'000'000, 50'000'000);
  visible_items(t, m.groups()[0].lanes[0], v, 3.0, items);
  ASSERT_EQ(items.size(), 1u);
  EXPECT_LE(items[0].end_ns, 50'000'000 + 1'000'000);
  EXPECT_LE(items[0].count, 260'000u);
  // Zoomed to 1000 ns: only the ~11 spans there, each its own item.
  v.fit(50'000'000, 50'001'000);
  visible_items(t, m.groups()[0].lanes[0], v, 3.0, items);
  ASSERT_EQ(items.size(), 11u);
  EXPECT_EQ(items[0].first, 500'000u);  // span 499'999 ends at 49'999'960, before the view
}

TEST(ViewModelCulling, HitTestFindsTheItemUnderThePixel) {
  const Trace t = lane_trace({{0, 100}, {200, 100}, {400, 2}});
  TimelineModel m(t);
  TimeView v(500, 0, 500);  // 1 px per ns
  std::vector<DrawItem> items;
  visible_items(t, m.groups()[0].lanes[0], v, 3.0, items);
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(item_at(items, v, 50)->first, 0u);
  EXPECT_EQ(item_at(items, v, 250.5)->first, 1u);
  EXPECT_FALSE(item_at(items, v, 150).has_value());     // a gap
  EXPECT_EQ(item_at(items, v, 402.5, 1.0)->first, 2u);  // within the slop of a thin span
  EXPECT_FALSE(item_at(items, v, 410, 1.0).has_value());
  EXPECT_FALSE(item_at({}, v, 10).has_value());
}

}  // namespace
}  // namespace zerosim::view
