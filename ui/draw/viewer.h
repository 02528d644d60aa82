// The viewer's ImGui layer: one frame of the timeline (ruler, lanes per rank group, the memory
// stack, the ghost of a second trace), the summary panel and the error panel, drawn with
// ImDrawList into the current ImGui context. Everything it shows comes from the headless model
// (ui/model); this file only maps it to pixels and colours (palette.h). No GL here: the same
// frame renders through EGL (render/), GLFW, or the null renderer in tests.
#pragma once

#include <imgui.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "draw/derived_rows.h"
#include "model/memory_stack.h"
#include "model/span_culling.h"
#include "model/span_pairing.h"
#include "model/time_view.h"
#include "model/timeline_model.h"
#include "zerosim/trace.h"

namespace zerosim::view {

/// A trace file as the viewer opened it: the trace, or the reason it could not be read.
struct OpenedTrace {
  std::string path;
  std::optional<Trace> trace;
  std::vector<std::string> errors;  ///< one line each (empty when the trace is present)
};

/// Opens a trace file; never throws (read_trace_file's diagnostics become `errors`).
OpenedTrace open_trace(const std::string& path);

/// Top pixel row of the capacity line in a memory row from `row_top` to `row_bottom` (screen y).
float capacity_line_y(float row_top, float row_bottom, const MemoryStack& stack);

/// What a user set up in a viewer that the viewer of a new run keeps (a what-if re-simulation,
/// issue #9): the time range shown, the groups expanded (by the first traced rank of each, since a
/// new run's groups are new) and the rows' scroll.
struct ViewerState {
  SimTime start_ns = 0, end_ns = 0;
  std::vector<std::uint32_t> expanded_ranks;
  float scroll_y = 0;
};

class Viewer {
 public:
  /// `main` is drawn normally, `ghost` (optional: the predicted run, or the previous what-if
  /// configuration) as a strip under each span in the same lanes, shifted so that both runs'
  /// first spans start at the same pixel (a measured clock does not start at 0). Both must
  /// outlive the viewer.
  Viewer(const OpenedTrace& main, const OpenedTrace* ghost);

  /// True when the main trace could not be read (the frame shows the error panel only).
  bool failed() const { return !model_; }
  const std::vector<std::string>& errors() const { return errors_; }

  /// Shows only the group holding traced rank `rank`; false when no group holds it.
  bool show_only_rank(std::uint32_t rank);
  /// The time view of the lane area (width follows the frame).
  TimeView& view() { return view_; }
  const TimeView& view() const { return view_; }
  /// Fits the whole run into the lane area of a display `display_width` pixels wide (the first
  /// frame does this unless it was called before).
  void reset_view(float display_width);
  /// The state to carry to the viewer of the next run (empty when the trace failed).
  std::optional<ViewerState> state() const;
  /// Fits the view to the state's range in a display `display_width` pixels wide and expands the
  /// group that now holds each of its expanded ranks (a group of one rank stays as it is).
  void restore(const ViewerState& state, float display_width);
  /// Right edge of the lane area for a display of `width` pixels (the left one is kGutterPx).
  static float lanes_right(float display_width);
  const std::vector<Row>& rows() const { return rows_; }
  /// Pixels the rows are scrolled up by (Up/Down, Page Up/Down in the window; 0 in screenshots).
  float scroll_y() const { return scroll_y_; }
  const TimelineModel* model() const { return model_.get(); }
  /// The model, for folding and expanding groups (nullptr when the trace failed).
  TimelineModel* model() { return model_.get(); }
  /// The memory stack of a group (its first member's curve).
  const MemoryStack& stack_of_group(std::uint32_t group) const;
  const std::optional<Pairing>& pairing() const { return pairing_; }
  /// The tooltip the last interactive frame showed (empty: none): what the mouse is over.
  const std::string& tooltip() const { return tooltip_; }
  /// The details of the span last clicked (empty: none), shown in the summary panel.
  const std::string& details() const { return details_; }
  /// The duration label of the range being measured (left-drag), "" when none.
  const std::string& measure_label() const { return measure_label_; }
  /// Highlights spans whose name contains `text` (the search box).
  void set_search(const std::string& text);

  /// Draws one frame into the current ImGui context (between NewFrame and Render), covering
  /// the whole display. `interactive`: mouse/keys zoom, pan and hover (the window; not shots).
  void frame(bool interactive);

 private:
  void draw_timeline(float width, float height, bool interactive);
  void draw_summary(float x, float height);
  void draw_errors(float width, float height);
  void handle_input();
  void draw_tooltip(float width);
  // `full`: the click details (longer lists) rather than the tooltip.
  std::string describe_at(ImVec2 mouse, float width, bool full);

  const OpenedTrace* main_;
  const OpenedTrace* ghost_;
  std::vector<std::string> errors_;
  std::unique_ptr<TimelineModel> model_;
  std::unique_ptr<TimelineModel> ghost_model_;
  std::vector<MemoryStack> stacks_;  // per group
  std::optional<Pairing> pairing_;
  SimTime ghost_offset_ns_ = 0;  // added to ghost times: both runs start at the same pixel
  Summary summary_;
  std::vector<std::uint32_t> shown_;  // groups shown (empty: all)
  std::vector<Row> rows_;
  TimeView view_{1000, 0, 1};
  bool view_initialised_ = false;
  float scroll_y_ = 0;
  std::vector<DrawItem> items_;  // reused per lane
  std::vector<MemoryColumn> columns_;
  std::vector<FlowLine> flows_;  // bucket fill to collective, drawn after the rows
  std::string tooltip_;
  std::string details_;
  std::string measure_label_;
  std::array<char, 128> search_{};
  bool press_armed_ = false;
  bool measuring_ = false;
  SimTime measure_from_ = 0, measure_to_ = 0;
};

}  // namespace zerosim::view
