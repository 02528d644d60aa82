// Folding and lane building: see timeline_model.h.
#include "model/timeline_model.h"

#include <algorithm>
#include <array>
#include <functional>
#include <numeric>
#include <optional>
#include <unordered_map>

namespace zerosim::view {
namespace {

// FNV-1a over the fields folding compares (deterministic across runs and platforms).
struct Hasher {
  std::uint64_t h = 1469598103934665603ull;
  void add(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xFF;
      h *= 1099511628211ull;
    }
  }
  void add(const std::string& s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 1099511628211ull;
    }
    add(s.size());
  }
};

bool same_span(const Span& a, const Span& b) {
  return a.stream == b.stream && a.op == b.op && a.start_ns == b.start_ns && a.dur_ns == b.dur_ns &&
         a.bytes == b.bytes && a.name == b.name;
}

bool same_sample(const MemorySample& a, const MemorySample& b) {
  return a.t == b.t && a.total == b.total && a.by_category == b.by_category;
}

bool same_oom(const std::optional<OomEvent>& a, const std::optional<OomEvent>& b) {
  if (a.has_value() != b.has_value()) return false;
  return !a || (a->t == b->t && a->bytes == b->bytes && a->buffer_name == b->buffer_name);
}

}  // namespace

const char* lane_kind_name(LaneKind k) {
  static constexpr const char* kNames[kLaneKindCount] = {"compute", "reduce", "gather",   "h2d",
                                                         "d2h",     "host",   "optimizer"};
  return kNames[static_cast<std::size_t>(k)];
}

std::optional<LaneKind> lane_of(const Span& span) {
  if (span.category == "marker" || span.category == "sync" || span.category == "grad_ready") {
    return std::nullopt;  // zero-cost boundaries and hook events, not work on a stream
  }
  if (span.category == "optimizer_step") return LaneKind::Optimizer;
  switch (span.stream) {
    case Stream::Compute:
      return LaneKind::Compute;
    case Stream::Reduce:
      return LaneKind::Reduce;
    case Stream::Gather:
      return LaneKind::Gather;
    case Stream::H2D:
      return LaneKind::H2D;
    case Stream::D2H:
      return LaneKind::D2H;
    case Stream::Host:
      return LaneKind::Host;
  }
  return LaneKind::Compute;
}

std::string group_label(const std::vector<std::uint32_t>& ranks, std::uint64_t rank_count) {
  if (ranks.empty()) return "no ranks";
  if (ranks.size() == 1) {
    std::string s = "rank " + std::to_string(ranks[0]);
    if (rank_count > 1) s += " (" + std::to_string(rank_count) + " ranks)";
    return s;
  }
  const bool contiguous = ranks.back() - ranks.front() + 1 == ranks.size();
  std::string s = "ranks ";
  if (contiguous) {
    s += std::to_string(ranks.front()) + "-" + std::to_string(ranks.back());
  } else {
    for (std::size_t i = 0; i < ranks.size() && i < 4; ++i) {
      if (i > 0) s += ", ";
      s += std::to_string(ranks[i]);
    }
    if (ranks.size() > 4) s += ", ...";
  }
  return s + ", " + std::to_string(rank_count) + " ranks";
}

TimelineModel::TimelineModel(const Trace& trace) : trace_(&trace) {
  const std::size_t n_ranks = trace.ranks.size();
  // Each traced rank's own spans (rank = kAllRanks spans are shared and need no comparison).
  std::unordered_map<std::uint32_t, std::uint32_t> index_of_rank;
  for (std::uint32_t i = 0; i < n_ranks; ++i) index_of_rank.emplace(trace.ranks[i].rank, i);
  std::vector<std::vector<std::uint32_t>> own(n_ranks);
  std::vector<std::uint32_t> shared;
  for (std::uint32_t s = 0; s < trace.spans.size(); ++s) {
    const Span& span = trace.spans[s];
    if (span.rank == kAllRanks) {
      shared.push_back(s);
    } else if (auto it = index_of_rank.find(span.rank); it != index_of_rank.end()) {
      own[it->second].push_back(s);
    }
  }
  std::vector<std::uint64_t> hash(n_ranks);
  for (std::size_t r = 0; r < n_ranks; ++r) {
    Hasher h;
    for (std::uint32_t s : own[r]) {
      const Span& span = trace.spans[s];
      h.add(static_cast<std::uint64_t>(span.stream));
      h.add(span.op);
      h.add(static_cast<std::uint64_t>(span.start_ns));
      h.add(static_cast<std::uint64_t>(span.dur_ns));
      h.add(span.bytes);
    }
    for (const MemorySample& m : trace.ranks[r].memory) {
      h.add(static_cast<std::uint64_t>(m.t));
      h.add(m.total);
    }
    h.add(trace.ranks[r].oom.has_value());
    hash[r] = h.h;
  }
  auto same_timeline = [&](std::size_t a, std::size_t b) {
    const TraceRank& ra = trace.ranks[a];
    const TraceRank& rb = trace.ranks[b];
    if (own[a].size() != own[b].size() || ra.memory.size() != rb.memory.size()) return false;
    for (std::size_t i = 0; i < own[a].size(); ++i) {
      if (!same_span(trace.spans[own[a][i]], trace.spans[own[b][i]])) return false;
    }
    for (std::size_t i = 0; i < ra.memory.size(); ++i) {
      if (!same_sample(ra.memory[i], rb.memory[i])) return false;
    }
    return same_oom(ra.oom, rb.oom);
  };
  // Groups in order of their first member; candidates by hash, confirmed exactly.
  std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> groups_by_hash;
  std::vector<std::uint32_t> group_of(n_ranks);
  for (std::uint32_t r = 0; r < n_ranks; ++r) {
    std::vector<std::uint32_t>& candidates = groups_by_hash[hash[r]];
    std::optional<std::uint32_t> found;
    for (std::uint32_t g : candidates) {
      if (same_timeline(groups_[g].members.front(), r)) {
        found = g;
        break;
      }
    }
    if (!found) {
      found = static_cast<std::uint32_t>(groups_.size());
      candidates.push_back(*found);
      groups_.emplace_back();
    }
    groups_[*found].members.push_back(r);
    groups_[*found].rank_count += trace.ranks[r].rank_count;
  }
  // Lanes of each group: its first member's spans plus the shared ones.
  for (RankGroup& g : groups_) {
    std::vector<std::uint32_t> numbers;
    for (std::uint32_t m : g.members) numbers.push_back(trace.ranks[m].rank);
    g.label = group_label(numbers, g.rank_count);
    std::vector<std::uint32_t> spans = own[g.members.front()];
    spans.insert(spans.end(), shared.begin(), shared.end());
    std::array<Lane, kLaneKindCount> by_kind;
    for (std::uint32_t s : spans) {
      if (auto k = lane_of(trace.spans[s]))
        by_kind[static_cast<std::size_t>(*k)].spans.push_back(s);
    }
    for (std::size_t k = 0; k < kLaneKindCount; ++k) {
      Lane& lane = by_kind[k];
      if (lane.spans.empty()) continue;
      lane.kind = static_cast<LaneKind>(k);
      std::stable_sort(lane.spans.begin(), lane.spans.end(), [&](std::uint32_t a, std::uint32_t b) {
        return trace.spans[a].start_ns < trace.spans[b].start_ns;
      });
      lane.max_end.reserve(lane.spans.size());
      SimTime running = lane.spans.empty() ? 0 : trace.spans[lane.spans.front()].start_ns;
      for (std::uint32_t s : lane.spans) {
        running = std::max(running, trace.spans[s].start_ns + trace.spans[s].dur_ns);
        lane.max_end.push_back(running);
      }
      g.lanes.push_back(std::move(lane));
    }
    g.buckets = bucket_fills(trace, spans);
    g.params = param_events(trace, trace.ranks[g.members.front()], spans);
  }
  expanded_.assign(groups_.size(), false);
  bool any = false;
  for (const Span& s : trace.spans) {
    if (!any) begin_ns_ = s.start_ns, end_ns_ = s.start_ns + s.dur_ns, any = true;
    begin_ns_ = std::min(begin_ns_, s.start_ns);
    end_ns_ = std::max(end_ns_, s.start_ns + s.dur_ns);
  }
  for (const TraceRank& r : trace.ranks) {
    if (!r.memory.empty()) end_ns_ = std::max(end_ns_, r.memory.back().t);
  }
  if (end_ns_ <= begin_ns_) end_ns_ = begin_ns_ + 1;
}

int TimelineModel::group_of_rank(std::uint32_t rank) const {
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    for (std::uint32_t m : groups_[g].members) {
      if (trace_->ranks[m].rank == rank) return static_cast<int>(g);
    }
  }
  return -1;
}

int TimelineModel::group_of_role(std::uint32_t role) const {
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    for (std::uint32_t m : groups_[g].members) {
      if (trace_->ranks[m].role == role) return static_cast<int>(g);
    }
  }
  return -1;
}

bool TimelineModel::expanded(std::uint32_t group) const {
  return group < expanded_.size() && expanded_[group];
}

bool TimelineModel::set_expanded(std::uint32_t group, bool expanded) {
  if (group >= groups_.size() || groups_[group].members.size() < 2) return false;
  expanded_[group] = expanded;
  return true;
}

void TimelineModel::toggle_all() {
  bool any_folded = false;
  for (std::uint32_t g = 0; g < groups_.size(); ++g) {
    any_folded = any_folded || (groups_[g].members.size() > 1 && !expanded_[g]);
  }
  for (std::uint32_t g = 0; g < groups_.size(); ++g) set_expanded(g, any_folded);
}

std::string block_label(const TimelineModel& model, const Row& row) {
  const RankGroup& g = model.groups().at(row.group);
  if (row.member == kAllMembers || row.member >= g.members.size()) {
    if (g.members.size() < 2) return g.label;
    return (model.expanded(row.group) ? "[-] " : "[+] ") + g.label;
  }
  const TraceRank& r = model.trace().ranks[g.members[row.member]];
  return group_label({r.rank}, r.rank_count);
}

std::vector<Row> layout_rows(const TimelineModel& model, const std::vector<std::uint32_t>& groups,
                             const LayoutOptions& options) {
  std::vector<std::uint32_t> order = groups;
  if (order.empty()) {
    order.resize(model.groups().size());
    std::iota(order.begin(), order.end(), 0u);
  }
  std::vector<Row> rows;
  float y = 0;
  // One block: the lanes, then the derived rows and the memory row where they have content.
  auto block = [&](std::uint32_t g, std::uint32_t member) {
    const RankGroup& group = model.groups()[g];
    auto add = [&](Row::Kind kind, std::uint32_t lane, float h) {
      rows.push_back({kind, g, lane, y, y + h, member});
      y += h;
    };
    for (std::uint32_t l = 0; l < group.lanes.size(); ++l) add(Row::Kind::Lane, l, options.lane_px);
    if (!group.buckets.empty() && options.bucket_px > 0) {
      add(Row::Kind::Buckets, 0, options.bucket_px);
    }
    if (!group.params.empty() && options.params_px > 0)
      add(Row::Kind::Params, 0, options.params_px);
    if (options.memory_px > 0) add(Row::Kind::Memory, 0, options.memory_px);
  };
  for (std::uint32_t g : order) {
    if (g >= model.groups().size()) continue;
    // The group's header (with its fold toggle) stays; an expanded group adds one block per
    // member, each under its own header.
    rows.push_back({Row::Kind::Header, g, 0, y, y + options.header_px, kAllMembers});
    y += options.header_px;
    if (model.expanded(g)) {
      const auto n = static_cast<std::uint32_t>(model.groups()[g].members.size());
      for (std::uint32_t m = 0; m < n; ++m) {
        rows.push_back({Row::Kind::Header, g, 0, y, y + options.header_px, m});
        y += options.header_px;
        block(g, m);
      }
    } else {
      block(g, kAllMembers);
    }
    y += options.gap_px;
  }
  return rows;
}

const Row* row_at(const std::vector<Row>& rows, float y) {
  auto it =
      std::upper_bound(rows.begin(), rows.end(), y, [](float v, const Row& r) { return v < r.y1; });
  if (it == rows.end() || y < it->y0) return nullptr;
  return &*it;
}

}  // namespace zerosim::view
