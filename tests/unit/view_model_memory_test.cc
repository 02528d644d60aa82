// MemoryStack: per-pixel columns keep spikes, the peak and its breakdown, the y range.
#include <gtest/gtest.h>

#include "model/memory_stack.h"
#include "view_model_testlib.h"

namespace zerosim::view {
namespace {

using testing::rank;
using testing::sample;

constexpr auto kParam = static_cast<std::size_t>(BufferCategory::Param16);
constexpr auto kAct = static_cast<std::size_t>(BufferCategory::Activation);

TEST(ViewModelMemory, PeakAndStateAtATime) {
  TraceRank r = rank(0, 0);
  r.memory = {sample(0, 100, 0), sample(10, 100, 50), sample(20, 100, 30), sample(30, 100, 50)};
  MemoryStack m(r, 1000);
  EXPECT_EQ(m.peak_bytes(), 150u);
  EXPECT_EQ(m.peak_t(), 10);  // the first sample reaching it
  EXPECT_EQ(m.peak_by_category()[kAct], 50u);
  EXPECT_EQ(m.at(-5).total, 0u);
  EXPECT_EQ(m.at(15).total, 150u);
  EXPECT_EQ(m.at(20).total, 130u);
  EXPECT_EQ(m.at(99).by_category[kParam], 100u);
}

TEST(ViewModelMemory, AColumnShowsTheLargestSampleInItSoSpikesSurvive) {
  TraceRank r = rank(0, 0);
  // A 1 ns spike to 900 inside what is one pixel (10 ns) at this zoom.
  r.memory = {sample(0, 100, 0), sample(13, 100, 800), sample(14, 100, 0), sample(95, 100, 100)};
  MemoryStack m(r, 0);
  TimeView v(10, 0, 100);
  std::vector<MemoryColumn> cols;
  m.columns(v, cols);
  ASSERT_EQ(cols.size(), 10u);
  EXPECT_EQ(cols[0].total, 100u);
  EXPECT_EQ(cols[1].total, 900u);  // the spike
  EXPECT_EQ(cols[1].by_category[kAct], 800u);
  EXPECT_EQ(cols[2].total, 100u);  // carried state after it
  EXPECT_EQ(cols[9].total, 200u);
}

TEST(ViewModelMemory, TheCurveStartsAtTheFirstSampleAndEndsAtTheLast) {
  TraceRank r = rank(0, 0);
  r.memory = {sample(50, 10, 0), sample(60, 20, 0)};
  MemoryStack m(r, 0);
  TimeView v(10, 0, 100);
  std::vector<MemoryColumn> cols;
  m.columns(v, cols);
  ASSERT_EQ(cols.size(), 2u);
  EXPECT_EQ(cols[0].x, 5);
  EXPECT_EQ(cols[1].x, 6);
  EXPECT_EQ(cols[1].total, 20u);
  TraceRank empty = rank(1, 1);
  MemoryStack e(empty, 0);
  e.columns(v, cols);
  EXPECT_TRUE(cols.empty());
}

TEST(ViewModelMemory, TheYRangeShowsTheCapacityWhenThePeakIsNearIt) {
  TraceRank r = rank(0, 0);
  r.memory = {sample(0, 300, 0)};
  EXPECT_EQ(MemoryStack(r, 1000).y_max(), 1050u);  // capacity + 5%
  EXPECT_EQ(MemoryStack(r, 2000).y_max(), 375u);   // peak < capacity / 4: 125% of the peak
  EXPECT_EQ(MemoryStack(r, 0).y_max(), 375u);
  r.memory = {sample(0, 3000, 0)};  // over capacity (an OOM)
  EXPECT_EQ(MemoryStack(r, 1000).y_max(), 3150u);
}

}  // namespace
}  // namespace zerosim::view
