// Drawing and hover text of the rows model/derived_lanes.h derives: the IPG bucket fill (a bar
// per flush with its parameter count and bytes, a tick where it flushes, a flow line to the
// collective it feeds) and the stage 3 parameter row (gathers in the top half, releases in the
// bottom half, at most one tick per pixel column and kind, so a frame costs O(width)).
#pragma once

#include <imgui.h>

#include <functional>
#include <string>
#include <vector>

#include "model/time_view.h"
#include "model/timeline_model.h"

namespace zerosim::view {

/// A row on screen: the lane area's edges and the row's top and bottom (screen pixels).
struct RowBox {
  float left = 0, right = 0, y0 = 0, y1 = 0;
};

/// A flow line, drawn after every row so later rows do not cover it.
struct FlowLine {
  ImVec2 from, to;
};

/// Draws `group`'s bucket fills. `collective_y(span)` is the screen y of the middle of the lane
/// showing that collective span in this row block (negative: not shown, no flow line); the flow
/// of each visible fill with a collective is appended to `flows`.
void draw_bucket_row(ImDrawList* dl, const Trace& trace, const RankGroup& group,
                     const TimeView& view, RowBox box,
                     const std::function<float(const Span&)>& collective_y,
                     std::vector<FlowLine>& flows);
void draw_params_row(ImDrawList* dl, const RankGroup& group, const TimeView& view, RowBox box);
/// Draws the flow lines (a line and a kFlowTipPx square at the collective's end).
void draw_flows(ImDrawList* dl, const std::vector<FlowLine>& flows);

/// What is at pixel x (relative to the lane area) of the bucket row, or "": the fill's bucket,
/// step, parameter count, bytes, fill and flush times, the collective it feeds and the parameter
/// names (the first 8; `full`: the first 64, one per line, for the click details).
std::string describe_bucket_at(const Trace& trace, const RankGroup& group, const TimeView& view,
                               double x, bool full);
/// What is at pixel x of the parameter row, or "": one gather or release, or a count of those
/// within 2 pixels.
std::string describe_params_at(const Trace& trace, const RankGroup& group, const TimeView& view,
                               double x);

/// The fill of `group` whose bar covers pixel x (2 pixels of slop), or nullptr.
const BucketFill* fill_at(const RankGroup& group, const TimeView& view, double x);

}  // namespace zerosim::view
