// TimelineModel: lanes per rank, folding of identical ranks (1024 ranks into a few groups),
// labels, layout rows.
#include <gtest/gtest.h>

#include "model/timeline_model.h"
#include "view_model_testlib.h"

namespace zerosim::view {
namespace {

using testing::rank;
using testing::sample;
using testing::span;

TEST(ViewModelTimeline, SpansGoToTheLaneOfTheirStreamAndOptimizerStepsToTheirOwn) {
  Trace t;
  t.ranks = {rank(0, 0)};
  t.spans = {span(kAllRanks, Stream::Compute, 0, 0, 0, "marker"),
             span(kAllRanks, Stream::Compute, 1, 0, 10, "forward"),
             span(kAllRanks, Stream::Reduce, 2, 5, 20, "collective"),
             span(kAllRanks, Stream::Compute, 3, 10, 5, "backward"),
             span(kAllRanks, Stream::Host, 4, 30, 40, "optimizer_step"),
             span(kAllRanks, Stream::H2D, 5, 70, 3, "host_to_device")};
  TimelineModel m(t);
  ASSERT_EQ(m.groups().size(), 1u);
  const RankGroup& g = m.groups()[0];
  ASSERT_EQ(g.lanes.size(), 4u);  // compute, reduce, h2d, optimizer (no empty lanes, no marker)
  EXPECT_EQ(g.lanes[0].kind, LaneKind::Compute);
  EXPECT_EQ(g.lanes[0].spans, (std::vector<std::uint32_t>{1, 3}));
  EXPECT_EQ(g.lanes[0].max_end, (std::vector<SimTime>{10, 15}));
  EXPECT_EQ(g.lanes[1].kind, LaneKind::Reduce);
  EXPECT_EQ(g.lanes[2].kind, LaneKind::H2D);
  EXPECT_EQ(g.lanes[3].kind, LaneKind::Optimizer);
  EXPECT_EQ(g.lanes[3].spans, (std::vector<std::uint32_t>{4}));
  EXPECT_EQ(m.begin_ns(), 0);
  EXPECT_EQ(m.end_ns(), 73);
}

TEST(ViewModelTimeline, LanesAreSortedByStartAndKeepARunningMaximumOfEnds) {
  Trace t;
  t.ranks = {rank(0, 0)};
  t.spans = {span(0, Stream::Compute, 1, 50, 10), span(0, Stream::Compute, 2, 0, 100),
             span(0, Stream::Compute, 3, 20, 5)};
  TimelineModel m(t);
  const Lane& lane = m.groups()[0].lanes[0];
  EXPECT_EQ(lane.spans, (std::vector<std::uint32_t>{1, 2, 0}));
  EXPECT_EQ(lane.max_end, (std::vector<SimTime>{100, 100, 100}));
}

// A measured trace of 1024 ranks: rank 0 also broadcasts, ranks 1..1023 run the same ops at the
// same times, except rank 512 whose memory curve differs and rank 700 whose op is 1 ns longer.
Trace measured_1024() {
  Trace t;
  for (std::uint32_t r = 0; r < 1024; ++r) {
    t.ranks.push_back(rank(r, r));
    t.ranks.back().memory = {sample(0, 100, 0), sample(10, 100, r == 512 ? 60 : 50)};
    t.spans.push_back(span(r, Stream::Compute, 1, 0, r == 700 ? 11 : 10));
    t.spans.push_back(span(r, Stream::Reduce, 2, 10, 30, "collective"));
    if (r == 0) t.spans.push_back(span(r, Stream::Compute, 3, 40, 5, "collective"));
  }
  return t;
}

TEST(ViewModelTimeline, A1024RankTraceFoldsIntoGroupsOfIdenticalTimelines) {
  const Trace t = measured_1024();
  TimelineModel m(t);
  ASSERT_EQ(m.groups().size(), 4u);
  EXPECT_EQ(m.groups()[0].label, "rank 0");
  EXPECT_EQ(m.groups()[1].rank_count, 1021u);
  EXPECT_EQ(m.groups()[1].members.size(), 1021u);
  EXPECT_EQ(m.groups()[1].label, "ranks 1, 2, 3, 4, ..., 1021 ranks");  // 512 and 700 missing
  EXPECT_EQ(m.groups()[2].label, "rank 512");
  EXPECT_EQ(m.groups()[3].label, "rank 700");
  EXPECT_EQ(m.group_of_rank(0), 0);
  EXPECT_EQ(m.group_of_rank(1023), 1);
  EXPECT_EQ(m.group_of_rank(512), 2);
  EXPECT_EQ(m.group_of_rank(700), 3);
  EXPECT_EQ(m.group_of_rank(5000), -1);
  // Each group's lanes hold its first member's spans only.
  EXPECT_EQ(m.groups()[0].lanes[0].spans.size(), 2u);
  EXPECT_EQ(m.groups()[1].lanes[0].spans.size(), 1u);
}

TEST(ViewModelTimeline, ContiguousRanksFoldIntoARangeLabel) {
  Trace t;
  for (std::uint32_t r = 0; r < 1024; ++r) {
    t.ranks.push_back(rank(r, r));
    t.spans.push_back(span(r, Stream::Compute, 1, 0, r == 0 ? 20 : 10));
  }
  TimelineModel m(t);
  ASSERT_EQ(m.groups().size(), 2u);
  EXPECT_EQ(m.groups()[1].label, "ranks 1-1023, 1023 ranks");
}

TEST(ViewModelTimeline, SimulatedRolesShareSpansAndFoldOnlyWhenTheirMemoryIsEqual) {
  Trace t;
  t.ranks = {rank(0, 0, 1), rank(1, 1, 511), rank(2, 2, 512)};
  t.ranks[0].memory = {sample(0, 10, 0)};
  t.ranks[1].memory = {sample(0, 20, 0)};
  t.ranks[2].memory = {sample(0, 20, 0)};
  t.spans = {span(kAllRanks, Stream::Compute, 1, 0, 10)};
  TimelineModel m(t);
  ASSERT_EQ(m.groups().size(), 2u);
  EXPECT_EQ(m.groups()[0].label, "rank 0");
  EXPECT_EQ(m.groups()[1].label, "ranks 1-2, 1023 ranks");
  EXPECT_EQ(m.groups()[1].lanes[0].spans.size(), 1u);  // the shared span
  EXPECT_EQ(m.group_of_role(2), 1);
}

TEST(ViewModelTimeline, AnOomKeepsARankOutOfAnOtherwiseIdenticalGroup) {
  Trace t;
  t.ranks = {rank(0, 0), rank(1, 1)};
  t.ranks[1].oom = OomEvent{};
  TimelineModel m(t);
  EXPECT_EQ(m.groups().size(), 2u);
}

TEST(ViewModelTimeline, GroupLabels) {
  EXPECT_EQ(group_label({3}, 1), "rank 3");
  EXPECT_EQ(group_label({0}, 1024), "rank 0 (1024 ranks)");
  EXPECT_EQ(group_label({1, 2, 3}, 3), "ranks 1-3, 3 ranks");
  EXPECT_EQ(group_label({0, 2, 5}, 3), "ranks 0, 2, 5, 3 ranks");
  EXPECT_EQ(group_label({}, 0), "no ranks");
}

TEST(ViewModelTimeline, LayoutStacksHeaderLanesAndMemoryPerGroup) {
  const Trace t = measured_1024();
  TimelineModel m(t);
  LayoutOptions o;
  o.header_px = 10;
  o.lane_px = 20;
  o.memory_px = 50;
  o.gap_px = 5;
  const std::vector<Row> rows = layout_rows(m, {0, 1}, o);
  ASSERT_EQ(rows.size(), 8u);  // (header, compute, reduce, memory) x 2
  EXPECT_EQ(rows[0].kind, Row::Kind::Header);
  EXPECT_EQ(rows[1].kind, Row::Kind::Lane);
  EXPECT_FLOAT_EQ(rows[1].y0, 10);
  EXPECT_FLOAT_EQ(rows[2].y1, 50);
  EXPECT_EQ(rows[3].kind, Row::Kind::Memory);
  EXPECT_FLOAT_EQ(rows[3].y1, 100);
  EXPECT_FLOAT_EQ(rows[4].y0, 105);  // gap
  EXPECT_EQ(rows[4].group, 1u);
  EXPECT_EQ(row_at(rows, 15)->lane, 0u);
  EXPECT_EQ(row_at(rows, 45)->lane, 1u);
  EXPECT_EQ(row_at(rows, 102), nullptr);  // the gap
  EXPECT_EQ(row_at(rows, 1e6), nullptr);
  EXPECT_EQ(layout_rows(m, {}, o).size(), 4u * 4u);  // every group
}

}  // namespace
}  // namespace zerosim::view
