// Schedule IR basics: per-role size lookups. The IR's rules are checked by lower_schedule
// (schedule_graph.h).
#include "zerosim/schedule.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

namespace zerosim {

std::uint64_t RankRole::rank_count() const {
  std::uint64_t n = 0;
  for (const auto& [first, last] : ranks)
    if (last >= first) n += static_cast<std::uint64_t>(last - first) + 1;
  return n;
}

std::uint32_t Schedule::role_of(std::uint32_t rank) const {
  // Each role's ranges are sorted and disjoint: binary search inside every role.
  for (std::size_t r = 0; r < roles.size(); ++r) {
    const auto& ranges = roles[r].ranks;
    auto it = std::upper_bound(ranges.begin(), ranges.end(), rank,
                               [](std::uint32_t v, const auto& range) { return v < range.first; });
    if (it != ranges.begin() && std::prev(it)->second >= rank) return static_cast<std::uint32_t>(r);
  }
  return kNone;
}

Elements Schedule::buffer_numel(std::uint32_t buffer, std::uint32_t role) const {
  if (buffer >= buffers.size()) return 0;
  const Buffer& b = buffers[buffer];
  if (b.slot == kNone) return b.numel;
  if (role >= roles.size() || b.slot >= roles[role].slots.size()) return 0;
  return roles[role].slots[b.slot];
}

ModelDesc tensor_model(const Schedule& s) {
  ModelDesc m;
  m.name = s.meta.model;
  m.params.reserve(s.tensors.size());
  for (const TensorInfo& t : s.tensors) m.params.push_back({t.name, t.shape, t.numel, t.trainable});
  return m;
}

PartitionOptions layout_options(const Layout& l) {
  PartitionOptions o;
  o.stage = l.stage;
  o.world = l.world;
  o.round_robin = l.round_robin;
  o.sub_group_size = l.sub_group_size;
  o.param_persistence_threshold = l.param_persistence_threshold;
  o.model_persistence_threshold = l.model_persistence_threshold;
  o.groups.reserve(l.groups.size());
  for (const GroupLayout& g : l.groups) o.groups.push_back(g.params);
  return o;
}

Result<PartitionPlan> plan_of(const Schedule& s) {
  return plan_partition(tensor_model(s), layout_options(s.layout));
}

Elements Schedule::op_elements(const Op& op, std::uint32_t role) const {
  if (op.slot == kNone) return op.elements;
  if (role >= roles.size() || op.slot >= roles[role].slots.size()) return 0;
  return roles[role].slots[op.slot];
}

}  // namespace zerosim
