// The timeline's data model (Tracy's split: no ImGui here; the drawing layer reads it). Built once
// per trace: the traced ranks folded into groups of identical timelines, and for each group its
// lanes, each an index of the trace's spans sorted by start with a running maximum of their ends
// (what span_culling.h binary-searches), plus the vertical layout of groups, lanes and memory rows.
//
// Folding: two traced ranks fold when everything the viewer draws for them is equal: their own
// spans (stream, op, name, start, duration, bytes; spans of every rank, rank = kAllRanks, are
// shared by all), their memory curves and their OOM. A group counts the ranks it stands for
// (TraceRank::rank_count summed: a simulated role already stands for many ranks). Building is
// O(spans + samples) with hashing, then one exact comparison per rank against its group's first
// member, so hash collisions never merge different timelines.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/derived_lanes.h"
#include "zerosim/trace.h"

namespace zerosim::view {

/// Lanes of a rank, in drawing order. Optimizer steps get their own lane whatever stream ran them.
enum class LaneKind : std::uint8_t { Compute, Reduce, Gather, H2D, D2H, Host, Optimizer };
inline constexpr std::size_t kLaneKindCount = static_cast<std::size_t>(LaneKind::Optimizer) + 1;
/// "compute", "reduce", "gather", "h2d", "d2h", "host", "optimizer".
const char* lane_kind_name(LaneKind k);
/// The lane a span belongs to (markers and zero-duration sync points belong to none: nullopt).
std::optional<LaneKind> lane_of(const Span& span);

struct Lane {
  LaneKind kind = LaneKind::Compute;
  std::vector<std::uint32_t> spans;  ///< indices into Trace::spans, by start (then trace order)
  std::vector<SimTime> max_end;      ///< max_end[i]: largest end of spans[0..i] (non-decreasing)
};

struct RankGroup {
  std::vector<std::uint32_t> members;  ///< indices into Trace::ranks, ascending
  std::uint64_t rank_count = 0;        ///< ranks the group stands for
  std::string label;                   ///< "rank 3", "ranks 1-1023, 1023 ranks", ...
  std::vector<Lane> lanes;             ///< non-empty lanes, LaneKind order
  std::vector<BucketFill> buckets;     ///< IPG bucket fills of the first member (derived_lanes.h)
  std::vector<ParamEvent> params;      ///< stage 3 gathers/releases of the first member
};

class TimelineModel {
 public:
  /// Builds the model of `trace`; the trace must outlive the model.
  explicit TimelineModel(const Trace& trace);

  const Trace& trace() const { return *trace_; }
  const std::vector<RankGroup>& groups() const { return groups_; }
  /// Index of the group holding the traced rank numbered `rank`, or -1.
  int group_of_rank(std::uint32_t rank) const;
  /// Index of the group whose first member has role `role`, or -1.
  int group_of_role(std::uint32_t role) const;
  /// Folding state of a group (issue #9 "expandable"): an expanded group lays out one block of
  /// rows per member instead of one for all. Groups start folded; a one-member group has nothing
  /// to expand and stays folded.
  bool expanded(std::uint32_t group) const;
  /// Sets it; false (and no change) for an unknown or one-member group.
  bool set_expanded(std::uint32_t group, bool expanded);
  bool toggle_expanded(std::uint32_t group) { return set_expanded(group, !expanded(group)); }
  /// Expands every group with more than one member when any is folded, else folds them all.
  void toggle_all();
  /// [first span start, last span end] (0, 1 for an empty trace).
  SimTime begin_ns() const { return begin_ns_; }
  SimTime end_ns() const { return end_ns_; }

 private:
  const Trace* trace_;
  std::vector<RankGroup> groups_;
  std::vector<bool> expanded_;  // per group
  SimTime begin_ns_ = 0;
  SimTime end_ns_ = 1;
};

/// The label of a group of traced ranks (`ranks` ascending, `rank_count` ranks in all): "rank 0",
/// "rank 0 (1024 ranks)" for a role, "ranks 1-1023, 1023 ranks" for a contiguous run, "ranks 0, 2,
/// 5, 3 ranks" otherwise (at most 4 numbers, then "...").
std::string group_label(const std::vector<std::uint32_t>& ranks, std::uint64_t rank_count);

/// Vertical layout of the timeline (pixels from the top of the lane area).
struct LayoutOptions {
  float header_px = 18;  ///< group title row
  float lane_px = 20;
  float bucket_px = 16;  ///< bucket fill row (groups with IPG buckets)
  float params_px = 16;  ///< stage 3 gather/release row (groups with such events)
  float memory_px = 90;  ///< memory stack row; 0 hides it
  float gap_px = 6;      ///< after each group
};

/// Row::member of a folded group's rows (they stand for every member).
inline constexpr std::uint32_t kAllMembers = 0xFFFFFFFFu;

struct Row {
  enum class Kind : std::uint8_t { Header, Lane, Buckets, Params, Memory };
  Kind kind = Kind::Lane;
  std::uint32_t group = 0;
  std::uint32_t lane = 0;  ///< index into the group's lanes (Kind::Lane)
  float y0 = 0, y1 = 0;
  /// Index into the group's members when the group is expanded, else kAllMembers. Members of a
  /// group have identical timelines, so their rows draw the group's lanes and memory.
  std::uint32_t member = kAllMembers;
};

/// The label of a row block: the group's, or for one member of an expanded group "rank N".
std::string block_label(const TimelineModel& model, const Row& row);

/// Rows of every group in `groups` (indices into model.groups(); empty: all), top to bottom: per
/// group (per member when expanded) a header, its lanes, the bucket fill row, the parameter row
/// and the memory row (the last three only where they have something to show).
std::vector<Row> layout_rows(const TimelineModel& model, const std::vector<std::uint32_t>& groups,
                             const LayoutOptions& options);
/// The row under y, or nullptr.
const Row* row_at(const std::vector<Row>& rows, float y);

}  // namespace zerosim::view
