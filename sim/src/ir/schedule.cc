// Schedule IR basics: per-role size lookups. The IR's rules are checked by lower_schedule
// (schedule_graph.h).
#include "zerosim/schedule.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "zerosim/model_desc.h"

namespace zerosim {
namespace {
constexpr Elements kNoOffset = std::numeric_limits<Elements>::max();
}  // namespace

SlotValues::SlotValues(std::initializer_list<Elements> dense) {
  for (Elements v : dense) push_back(v);
}

SlotValues SlotValues::zeros(std::size_t count) {
  SlotValues s;
  s.count_ = count;
  return s;
}

Elements SlotValues::operator[](std::size_t k) const {
  auto it = std::lower_bound(values_.begin(), values_.end(), k,
                             [](const Entry& e, std::size_t slot) { return e.slot < slot; });
  return it != values_.end() && it->slot == k ? it->value : 0;
}

void SlotValues::set(std::size_t k, Elements v) {
  auto it = std::lower_bound(values_.begin(), values_.end(), k,
                             [](const Entry& e, std::size_t slot) { return e.slot < slot; });
  if (it != values_.end() && it->slot == k) {
    if (v == 0)
      values_.erase(it);
    else
      it->value = v;
  } else if (v != 0) {
    values_.insert(it, Entry{static_cast<std::uint32_t>(k), v});
  }
}

void SlotValues::push_back(Elements v) {
  if (v != 0) values_.push_back({static_cast<std::uint32_t>(count_), v});
  ++count_;
}

std::vector<Elements> SlotValues::dense() const {
  std::vector<Elements> out(count_, 0);
  for (const Entry& e : values_)
    if (e.slot < count_) out[e.slot] = e.value;
  return out;
}

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
  if (role >= roles.size()) return 0;
  return roles[role].slots[b.slot];
}

OperandSpan resolve(const Schedule& s, const Op& op, const Region& r, std::uint32_t rank,
                    bool is_src) {
  if (r.empty()) return {};
  if (r.list != kNone || r.flush_grads != kNone || r.derived != kNone) {  // pieces: their total
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

// The slice [lo, hi) of tensor t that partition `rank` of its group owns (hi == lo: none).
std::pair<Elements, Elements> owned_slice(const Schedule& s, std::uint32_t t, std::uint32_t rank) {
  const TensorInfo& ti = s.tensors[t];
  if (ti.group >= s.layout.groups.size()) return {0, 0};
  const Elements part = s.layout.groups[ti.group].partition;
  const Elements left = part * rank, right = left + part;
  const Elements lo = std::max(left, ti.flat_offset),
                 hi = std::min(right, ti.flat_offset + ti.numel);
  if (hi <= lo) return {0, 0};
  return {lo - ti.flat_offset, hi - ti.flat_offset};
}

Elements touching_total(const Schedule& s, std::uint32_t plan, std::uint32_t rank) {
  Elements total = 0;
  if (plan < s.flush_plans.size())
    for (const FlushEntry& e : s.flush_plans[plan].entries)
      if (touches_partition(s, e.tensor, rank)) total += s.tensors[e.tensor].numel;
  return total;
}

// Where a pass's grads_in_partition lives for `rank`: the T3 piece of the first flush touching it.
std::uint32_t partition_buffer(const Schedule& s, const GradPass& gp, std::uint32_t set,
                               std::uint32_t rank) {
  if (set >= gp.t3.size()) return kNone;
  for (std::size_t f = 0; f < gp.flush_plans.size() && f < gp.t3[set].size(); ++f)
    if (touching_total(s, gp.flush_plans[f], rank) > 0) return gp.t3[set][f];
  return kNone;
}

// Where each gradient of a pass sits for `rank` in set `set` (buffer, offset), kNone for the
// tensors that do not touch its partition: packed into the first touching flush's piece, or with
// per_flush from the start of its own flush's piece.
std::vector<std::pair<std::uint32_t, Elements>> pass_positions(const Schedule& s,
                                                               const GradPass& gp,
                                                               std::uint32_t set,
                                                               std::uint32_t rank) {
  std::vector<std::pair<std::uint32_t, Elements>> at(s.tensors.size(), {kNone, kNoOffset});
  const std::uint32_t packed = partition_buffer(s, gp, set, rank);
  Elements cursor = 0;
  for (std::size_t f = 0; f < gp.flush_plans.size(); ++f) {
    if (gp.flush_plans[f] >= s.flush_plans.size()) continue;
    if (gp.per_flush) cursor = 0;
    std::uint32_t buf = packed;
    if (gp.per_flush) buf = set < gp.t3.size() && f < gp.t3[set].size() ? gp.t3[set][f] : kNone;
    for (const FlushEntry& e : s.flush_plans[gp.flush_plans[f]].entries)
      if (touches_partition(s, e.tensor, rank)) {
        at[e.tensor] = {buf, cursor};
        cursor += s.tensors[e.tensor].numel;
      }
  }
  return at;
}

void resolve_derived(const Schedule& s, const DerivedOperand& d, std::uint32_t rank,
                     std::vector<OperandSpan>& out) {
  switch (d.kind) {
    case DerivedKind::PartitionGrads: {
      if (d.pass >= s.grad_passes.size()) return;
      const GradPass& gp = s.grad_passes[d.pass];
      if (gp.per_flush) {  // each flush's piece from its start
        for (std::size_t f = 0; f < gp.flush_plans.size(); ++f) {
          const Elements t = touching_total(s, gp.flush_plans[f], rank);
          if ((d.flush == kNone || f == d.flush) && t > 0 && d.set < gp.t3.size() &&
              f < gp.t3[d.set].size())
            out.push_back({gp.t3[d.set][f], 0, t});
        }
        return;
      }
      const std::uint32_t buf = partition_buffer(s, gp, d.set, rank);
      Elements offset = 0, length = 0;
      for (std::size_t f = 0; f < gp.flush_plans.size(); ++f) {
        const Elements t = touching_total(s, gp.flush_plans[f], rank);
        if (d.flush == kNone || f == d.flush) length += t;
        if (d.flush != kNone && f < d.flush) offset += t;
      }
      if (length > 0) out.push_back({buf, offset, length});
      return;
    }
    case DerivedKind::AveragedGrads: {
      if (d.group >= s.layout.groups.size() || d.pass >= s.grad_passes.size()) return;
      const Elements part = s.layout.groups[d.group].partition;
      if (d.flat != kNone && s.buffer_numel(d.flat, s.role_of(rank)) > 0) {
        out.push_back({d.flat, 0, part});
        return;
      }
      const auto at = pass_positions(s, s.grad_passes[d.pass], 0, rank);  // set 0, per tensor
      Elements filled = 0;
      for (std::uint32_t t : s.layout.groups[d.group].flat_order) {
        if (t >= s.tensors.size() || at[t].second == kNoOffset) continue;
        const auto [lo, hi] = owned_slice(s, t, rank);
        if (hi > lo) out.push_back({at[t].first, at[t].second + lo, hi - lo});
        filled += hi - lo;
      }
      if (filled < part) out.push_back({kNone, 0, part - filled});  // the padding zeros (T4)
      return;
    }
    case DerivedKind::OwnedGrads:
    case DerivedKind::OwnedPartition: {
      if (d.flush_plan >= s.flush_plans.size()) return;
      if (d.kind == DerivedKind::OwnedGrads && d.rank != kNone && rank != d.rank) return;
      Elements packed_at = 0;
      for (const FlushEntry& e : s.flush_plans[d.flush_plan].entries) {
        const auto [lo, hi] = owned_slice(s, e.tensor, rank);
        if (hi <= lo) continue;
        if (d.kind == DerivedKind::OwnedGrads) {
          Elements at = e.offset + lo, end = e.offset + hi;
          if (d.window_length > 0) {
            at = std::max(at, d.window);
            end = std::min(end, d.window + d.window_length);
            if (end <= at) continue;
          }
          if (d.into == kNone) {
            out.push_back({e.buffer, at, end - at});
          } else if (d.packed) {
            out.push_back({d.into, packed_at, end - at});
            packed_at += end - at;
          } else {
            out.push_back({d.into, at - d.window, end - at});
          }
          continue;
        }
        const TensorInfo& ti = s.tensors[e.tensor];
        const Elements part = s.layout.groups[ti.group].partition;
        const std::uint32_t buf = ti.group < d.buffers.size() ? d.buffers[ti.group] : kNone;
        out.push_back({buf, ti.flat_offset + lo - part * rank, hi - lo});
      }
      return;
    }
  }
}

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

std::string_view derived_kind_name(DerivedKind k) {
  switch (k) {
    case DerivedKind::PartitionGrads:
      return "partition_grads";
    case DerivedKind::AveragedGrads:
      return "averaged_grads";
    case DerivedKind::OwnedGrads:
      return "owned_grads";
    case DerivedKind::OwnedPartition:
      return "owned_partition";
  }
  return "unknown";
}

std::vector<OperandSpan> resolve_pieces(const Schedule& s, const Op& op, const Region& r,
                                        std::uint32_t rank, bool is_src) {
  std::vector<OperandSpan> out;
  if (r.derived != kNone) {
    if (r.derived < s.derived.size()) resolve_derived(s, s.derived[r.derived], rank, out);
  } else if (r.list != kNone) {
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
  if (role >= roles.size()) return 0;
  return roles[role].slots[op.slot];
}

}  // namespace zerosim
