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

OperandSpan resolve(const Schedule& s, const Op& op, const Region& r, std::uint32_t rank,
                    bool is_src) {
  if (r.empty()) return {};
  if (r.list != kNone || r.flush_grads != kNone) {  // pieces: their total length
    Elements total = 0;
    for (const OperandSpan& p : resolve_pieces(s, op, r, rank, is_src)) total += p.length;
    return {kNone, 0, total};
  }
  const CommGroup& comm = op.comm < s.comms.size() ? s.comms[op.comm] : CommGroup{};
  const Elements index = r.rank_stride == 0 || rank < comm.first ? 0 : comm.index_of(rank);
  Elements length = r.length;
  if (length == 0)
    length = op.kind == OpKind::Collective ? (is_src ? op.numel : op.out_numel)
                                           : s.op_elements(op, s.role_of(rank));
  return {r.buffer, r.offset + r.rank_stride * index, length};
}

bool touches_partition(const Schedule& s, std::uint32_t t, std::uint32_t rank) {
  if (t >= s.tensors.size()) return false;
  const TensorInfo& ti = s.tensors[t];
  if (ti.group >= s.layout.groups.size() || ti.numel == 0) return false;
  const Elements part = s.layout.groups[ti.group].partition;
  return part > 0 && ti.flat_offset < part * (Elements{rank} + 1) &&
         ti.flat_offset + ti.numel > part * rank;
}

namespace {

// A contiguous run of a piece at buffer position `at`: its part below the limit, then the rest as
// zeros (a zeros span merges with a zeros span before it).
void push_run(std::vector<OperandSpan>& out, std::uint32_t buffer, Elements at, Elements length,
              Elements limit) {
  if (length == 0) return;
  const Elements real = at >= limit ? 0 : std::min(length, limit - at);
  if (real > 0) out.push_back({buffer, at, real});
  if (real == length) return;
  if (!out.empty() && out.back().buffer == kNone)
    out.back().length += length - real;
  else
    out.push_back({kNone, 0, length - real});
}

void push_piece(std::vector<OperandSpan>& out, const Schedule& s, const Op& op, const Piece& p,
                std::uint32_t rank) {
  if (p.buffer == kNone) {
    push_run(out, kNone, 0, p.length, 0);
    return;
  }
  const CommGroup& comm = op.comm < s.comms.size() ? s.comms[op.comm] : CommGroup{};
  const Elements index = p.rank_stride == 0 || rank < comm.first ? 0 : comm.index_of(rank);
  const Elements start = p.offset + p.rank_stride * index;
  if (p.block == 0) {
    push_run(out, p.buffer, start, p.length, p.limit);
    return;
  }
  for (Elements j = 0, k = 0; j < p.length; j += p.block, ++k)
    push_run(out, p.buffer, start + k * p.block_stride, std::min(p.block, p.length - j), p.limit);
}

}  // namespace

std::vector<OperandSpan> resolve_pieces(const Schedule& s, const Op& op, const Region& r,
                                        std::uint32_t rank, bool is_src) {
  std::vector<OperandSpan> out;
  if (r.list != kNone) {
    if (r.list < s.lists.size())
      for (const Piece& p : s.lists[r.list]) push_piece(out, s, op, p, rank);
  } else if (r.flush_grads != kNone) {
    if (r.flush_grads < s.flush_plans.size())
      for (const FlushEntry& e : s.flush_plans[r.flush_grads].entries)
        if (touches_partition(s, e.tensor, rank))
          out.push_back({e.buffer, e.offset, s.tensors[e.tensor].numel});
  } else if (!r.empty()) {
    out.push_back(resolve(s, op, r, rank, is_src));
  }
  return out;
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
