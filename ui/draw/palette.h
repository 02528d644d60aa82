// The viewer's colours and fixed screen geometry, as plain numbers (no ImGui) so the pixel tests
// (tests/view/) check rendered screenshots against the same values the drawing uses.
#pragma once

#include <cstddef>
#include <cstdint>

#include "zerosim/ir_types.h"

namespace zerosim::view {

/// 0xRRGGBB.
using Rgb = std::uint32_t;

/// Collectives, by CollectiveKind (colour-blind-friendly, distinct hues).
inline constexpr Rgb kCollectiveColor[kCollectiveKindCount] = {
    0xD62728,  // all_reduce: red
    0xFF7F0E,  // reduce: orange
    0x9467BD,  // broadcast: purple
    0x2CA02C,  // all_gather: green
    0x1F77B4,  // reduce_scatter: blue
};
inline constexpr Rgb kForwardColor = 0x7F9FBF;
inline constexpr Rgb kBackwardColor = 0x4F6F8F;
inline constexpr Rgb kRecomputeColor = 0xA0B8D0;
inline constexpr Rgb kOptimizerColor = 0xE6C229;
inline constexpr Rgb kCopyColor = 0x17BECF;    // copies, bucket copies, h2d/d2h, write-back
inline constexpr Rgb kOtherColor = 0x8C8C8C;   // alloc/free and anything else with a duration
inline constexpr Rgb kMergedColor = 0x6A6A6A;  // a merged run of sub-pixel spans
inline constexpr Rgb kGhostColor = 0xC8C8FF;   // the second trace, drawn under the first
inline constexpr Rgb kSearchColor = 0xFFFF00;  // outline of spans matching the search box
inline constexpr Rgb kCapacityColor = 0xFF3030;
inline constexpr Rgb kOomColor = 0xFF00FF;
inline constexpr Rgb kPeakColor = 0xFFFFFF;
// The derived rows (model/derived_lanes.h): an IPG bucket's fill, its flush, the flow line to its
// collective (ending in a small square at the collective's start), stage 3 gathers and releases.
inline constexpr Rgb kBucketFillColor = 0x8C564B;
inline constexpr Rgb kBucketFlushColor = 0xF7B6D2;
inline constexpr Rgb kFlowColor = 0xE377C2;
inline constexpr Rgb kGatherColor = 0x98DF8A;
inline constexpr Rgb kReleaseColor = 0xFF9896;
inline constexpr Rgb kBackgroundColor = 0x1E1E22;
inline constexpr Rgb kLaneBackgroundColor = 0x2A2A30;
/// What a renderer clears the display to before a frame: the lanes' background, the colour most
/// of the display shows, so the frame does not fill it again (Viewer::frame paints the rest).
inline constexpr Rgb kBackdropColor = kLaneBackgroundColor;
/// A colour's channel at bit `shift` (16 red, 8 green, 0 blue) as glClearColor takes it.
inline constexpr float channel(Rgb c, int shift) {
  return static_cast<float>((c >> shift) & 0xFFu) / 255.0f;
}

/// Memory categories, by BufferCategory, stacked bottom-up in enum order.
inline constexpr Rgb kCategoryColor[kCategoryCount] = {
    0x3182BD,  // param16
    0x6BAED6,  // param32
    0xE6550D,  // grad
    0x31A354,  // optim_state
    0xFDAE6B,  // activation
    0x756BB1,  // comm_bucket
    0x9E9AC8,  // gathered_param
    0xBDBDBD,  // temp
};

/// Screen geometry (pixels): lane labels on the left, the summary panel on the right, the time
/// ruler on top; rows follow TimelineModel's layout_rows() from kRowsTop down.
inline constexpr float kGutterPx = 170;
inline constexpr float kSummaryPx = 300;
inline constexpr float kRulerPx = 24;
inline constexpr float kRowsTop = kRulerPx + 4;
/// A span fills its lane from y0 + kSpanTopPx to y1 - kSpanBottomPx; the ghost strip (second
/// trace) lies below it, from y1 - kGhostStripPx to y1 - 1.
inline constexpr float kSpanTopPx = 2;
inline constexpr float kSpanBottomPx = 6;
inline constexpr float kGhostStripPx = 5;
/// The memory stack's y axis runs from the row's bottom - 1 (0 bytes) up to y0 + kMemoryTopPx
/// (MemoryStack::y_max()); the capacity line is kCapacityLinePx tall from capacity_line_y() down.
inline constexpr float kMemoryTopPx = 1;
inline constexpr float kCapacityLinePx = 2;
/// The flow line's end: a kFlowTipPx square centred on the collective's start, at the middle of
/// the collective's lane.
inline constexpr float kFlowTipPx = 4;
/// Spans narrower than this many pixels merge (span_culling.h).
inline constexpr double kMinSpanPx = 3.0;

}  // namespace zerosim::view
