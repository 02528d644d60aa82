// Predicted against measured, op by op: every span of the measured trace is paired with the span
// of the same op in the predicted trace (the same rank's, or the one every rank shares when the
// prediction times all ranks at once, rank = kAllRanks). An op that ran several times (one span
// per run) pairs in order of occurrence. The viewer lists the pairs by the size of their time
// difference and draws the predicted span as a ghost in the measured span's lane.
#pragma once

#include <cstdint>
#include <vector>

#include "zerosim/trace.h"

namespace zerosim::view {

struct SpanPair {
  std::uint32_t measured = 0;   ///< index into the measured trace's spans
  std::uint32_t predicted = 0;  ///< index into the predicted trace's spans
  SimTime start_diff_ns = 0;    ///< measured start - predicted start
  SimTime dur_diff_ns = 0;      ///< measured duration - predicted duration
};

struct Pairing {
  std::vector<SpanPair> pairs;                ///< measured span order
  std::vector<std::uint32_t> only_measured;   ///< measured spans with no predicted op
  std::vector<std::uint32_t> only_predicted;  ///< predicted spans no measured span took
};

/// Pairs the spans of two traces of one schedule. O(spans) expected (hashing).
Pairing pair_spans(const Trace& measured, const Trace& predicted);

/// The pairs ordered by |dur_diff_ns| descending, then measured index: the differences list.
std::vector<SpanPair> largest_differences(const Pairing& pairing, std::size_t limit);

}  // namespace zerosim::view
