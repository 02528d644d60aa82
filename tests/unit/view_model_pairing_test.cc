// Pairing of measured with predicted spans, op by op.
#include <gtest/gtest.h>

#include "model/span_pairing.h"
#include "view_model_testlib.h"

namespace zerosim::view {
namespace {

using testing::span;

TEST(ViewModelPairing, MeasuredRanksPairWithTheSharedPredictedSpanOfTheirOp) {
  Trace predicted, measured;
  predicted.spans = {span(kAllRanks, Stream::Compute, 1, 0, 100),
                     span(kAllRanks, Stream::Reduce, 2, 100, 50)};
  measured.spans = {span(0, Stream::Compute, 1, 0, 120), span(1, Stream::Compute, 1, 0, 90),
                    span(0, Stream::Reduce, 2, 130, 50), span(1, Stream::Reduce, 9, 0, 1)};
  const Pairing p = pair_spans(measured, predicted);
  ASSERT_EQ(p.pairs.size(), 3u);
  EXPECT_EQ(p.pairs[0].predicted, 0u);
  EXPECT_EQ(p.pairs[0].dur_diff_ns, 20);
  EXPECT_EQ(p.pairs[1].predicted, 0u);  // rank 1 pairs with the same shared span
  EXPECT_EQ(p.pairs[1].dur_diff_ns, -10);
  EXPECT_EQ(p.pairs[2].start_diff_ns, 30);
  EXPECT_EQ(p.only_measured, (std::vector<std::uint32_t>{3}));  // op 9 was not predicted
  EXPECT_TRUE(p.only_predicted.empty());
}

TEST(ViewModelPairing, RepeatedOpsPairInOrderAndPerRankSpansWin) {
  Trace predicted, measured;
  predicted.spans = {span(0, Stream::Compute, 1, 0, 10), span(0, Stream::Compute, 1, 50, 20),
                     span(kAllRanks, Stream::Compute, 1, 0, 99)};
  measured.spans = {span(0, Stream::Compute, 1, 0, 11), span(0, Stream::Compute, 1, 52, 25),
                    span(0, Stream::Compute, 1, 90, 1)};
  const Pairing p = pair_spans(measured, predicted);
  ASSERT_EQ(p.pairs.size(), 2u);
  EXPECT_EQ(p.pairs[0].predicted, 0u);
  EXPECT_EQ(p.pairs[1].predicted, 1u);
  EXPECT_EQ(p.pairs[1].start_diff_ns, 2);
  EXPECT_EQ(p.only_measured, (std::vector<std::uint32_t>{2}));
  EXPECT_EQ(p.only_predicted, (std::vector<std::uint32_t>{2}));
}

TEST(ViewModelPairing, LargestDifferencesComeFirst) {
  Trace predicted, measured;
  for (std::uint32_t op = 0; op < 5; ++op) {
    predicted.spans.push_back(span(kAllRanks, Stream::Compute, op, 0, 100));
    measured.spans.push_back(span(0, Stream::Compute, op, 0, 100 + (op == 3 ? -70 : 10 * op)));
  }
  const std::vector<SpanPair> top = largest_differences(pair_spans(measured, predicted), 2);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].measured, 3u);  // -70
  EXPECT_EQ(top[1].measured, 4u);  // +40
}

}  // namespace
}  // namespace zerosim::view
