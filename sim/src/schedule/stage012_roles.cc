// Rank roles for stage 0/1/2 schedules (schedule.h "slots"): the few element counts that depend on
// which flat range a rank owns — grads_in_partition pieces, post-flush copies, owned slices,
// padding zeros, step flatten copies — and the grouping of ranks with identical values into roles.
//
// Why it never costs O(W x params): every slot value is a piecewise-constant function of the rank
// whose breakpoints come from the params' rank intervals. A param starting at flat offset c with n
// elements touches ranks lo = c/S .. hi = (c+n-1)/S and owns a full S-element slice on every rank
// strictly inside; so all slot values are constant between the breakpoints {lo, lo+1, hi, hi+1} of
// every param (plus the padding ranks of each group). Values are evaluated per segment by sweeps
// over those events, and segments with equal value vectors share a role.
#include <algorithm>
#include <tuple>
#include <unordered_map>

#include "schedule/stage012_internal.h"
#include "zerosim/work_limit.h"

namespace zerosim::schedule::s12 {

std::uint32_t SlotTable::add(SlotDef d) {
  auto key = std::make_tuple(d.kind, d.params, d.group, d.pass, d.flush);
  auto it = index_.find(key);
  if (it != index_.end()) return it->second;
  const auto id = static_cast<std::uint32_t>(defs_.size());
  defs_.push_back(std::move(d));
  index_.emplace(std::move(key), id);
  return id;
}

std::uint32_t SlotTable::touching(std::string name, std::vector<std::uint32_t> params) {
  SlotDef d;
  d.kind = SlotKind::Touching;
  d.name = std::move(name);
  d.params = std::move(params);
  return add(std::move(d));
}

std::uint32_t SlotTable::owned_slice(std::string name, std::vector<std::uint32_t> params) {
  SlotDef d;
  d.kind = SlotKind::OwnedSlice;
  d.name = std::move(name);
  d.params = std::move(params);
  return add(std::move(d));
}

std::uint32_t SlotTable::padding() {
  SlotDef d;
  d.kind = SlotKind::Padding;
  d.name = "averaged_gradients padding zeros (T4)";
  return add(std::move(d));
}

std::uint32_t SlotTable::flat_copy(std::uint32_t group) {
  SlotDef d;
  d.kind = SlotKind::FlatCopy;
  d.name = "step flatten copy of group " + std::to_string(group) + " (T6)";
  d.group = group;
  return add(std::move(d));
}

std::uint32_t SlotTable::add_pass(std::vector<std::vector<std::uint32_t>> flushes) {
  passes_.push_back(std::move(flushes));
  return static_cast<std::uint32_t>(passes_.size() - 1);
}

std::uint32_t SlotTable::first_touch(std::string name, std::uint32_t pass, std::uint32_t flush) {
  SlotDef d;
  d.kind = SlotKind::FirstTouch;
  d.name = std::move(name);
  d.pass = pass;
  d.flush = flush;
  return add(std::move(d));
}

namespace {

// A param's place in its group's flat buffer.
struct Span {
  bool valid = false;  // in a group with S > 0 and starting before Pal
  Elements start = 0, n = 0, s = 0;
  std::uint32_t lo = 0, hi = 0;  // ranks touched
};

Span span_of(const PartitionPlan& plan, const ModelDesc& m, std::uint32_t p) {
  Span sp;
  if (p >= plan.param_group.size() || plan.param_group[p] >= plan.groups.size()) return sp;
  const FlatGroup& fg = plan.groups[plan.param_group[p]];
  const std::size_t i = plan.flat_index[p];
  if (fg.partition == 0 || i >= fg.flat_offset.size() || fg.flat_offset[i] >= fg.aligned) return sp;
  sp.valid = true;
  sp.start = fg.flat_offset[i];
  sp.n = m.params[p].numel;
  sp.s = fg.partition;
  sp.lo = static_cast<std::uint32_t>(sp.start / sp.s);
  sp.hi = sp.n == 0 ? sp.lo : static_cast<std::uint32_t>((sp.start + sp.n - 1) / sp.s);
  return sp;
}

class Segments {
 public:
  Segments(const ModelDesc& m, const PartitionPlan& plan) : world_(plan.world) {
    starts_.push_back(0);
    auto add = [&](std::uint64_t r) {
      if (r < world_) starts_.push_back(static_cast<std::uint32_t>(r));
    };
    for (std::uint32_t p = 0; p < m.params.size(); ++p) {
      const Span sp = span_of(plan, m, p);
      if (!sp.valid) continue;
      add(sp.lo);
      add(std::uint64_t{sp.lo} + 1);
      add(sp.hi);
      add(std::uint64_t{sp.hi} + 1);
    }
    for (const FlatGroup& fg : plan.groups) {
      if (fg.partition == 0 || fg.numel >= fg.aligned) continue;
      const Elements rp = fg.numel / fg.partition;  // first rank holding padding
      add(rp);
      add(rp + 1);
    }
    std::sort(starts_.begin(), starts_.end());
    starts_.erase(std::unique(starts_.begin(), starts_.end()), starts_.end());
  }
  std::size_t size() const { return starts_.size(); }
  std::uint32_t first(std::size_t i) const { return starts_[i]; }
  std::uint32_t last(std::size_t i) const {
    return i + 1 < starts_.size() ? starts_[i + 1] - 1 : world_ - 1;
  }
  /// Segment starting at rank r (r must be a breakpoint) or size() for r >= W.
  std::size_t at(std::uint64_t r) const {
    if (r >= world_) return starts_.size();
    return static_cast<std::size_t>(std::lower_bound(starts_.begin(), starts_.end(), r) -
                                    starts_.begin());
  }

 private:
  std::uint32_t world_;
  std::vector<std::uint32_t> starts_;
};

// Adds v on segments [from, to) of a difference array (modular arithmetic: the sums are exact).
void add_range(std::vector<Elements>& diff, std::size_t from, std::size_t to, Elements v) {
  diff[from] += v;
  diff[to] -= v;
}

std::vector<Elements> prefix(std::vector<Elements> diff) {
  Elements run = 0;
  for (auto& d : diff) {
    run += d;
    d = run;
  }
  diff.pop_back();
  return diff;
}

std::vector<Elements> touching_values(const ModelDesc& m, const PartitionPlan& plan,
                                      const Segments& seg,
                                      const std::vector<std::uint32_t>& params) {
  std::vector<Elements> diff(seg.size() + 1, 0);
  for (std::uint32_t p : params) {
    const Span sp = span_of(plan, m, p);
    if (!sp.valid || sp.n == 0) continue;
    add_range(diff, seg.at(sp.lo), seg.at(std::uint64_t{sp.hi} + 1), sp.n);
  }
  return prefix(std::move(diff));
}

std::vector<Elements> owned_values(const ModelDesc& m, const PartitionPlan& plan,
                                   const Segments& seg, const std::vector<std::uint32_t>& params) {
  std::vector<Elements> diff(seg.size() + 1, 0);
  for (std::uint32_t p : params) {
    const Span sp = span_of(plan, m, p);
    if (!sp.valid || sp.n == 0) continue;
    const Elements end = sp.start + sp.n;
    const std::uint64_t lo = sp.lo, hi = sp.hi;
    if (lo == hi) {
      add_range(diff, seg.at(lo), seg.at(lo + 1), sp.n);
      continue;
    }
    add_range(diff, seg.at(lo), seg.at(lo + 1), (lo + 1) * sp.s - sp.start);
    if (hi > lo + 1) add_range(diff, seg.at(lo + 1), seg.at(hi), sp.s);
    add_range(diff, seg.at(hi), seg.at(hi + 1), end - hi * sp.s);
  }
  return prefix(std::move(diff));
}

Elements padding_of(const PartitionPlan& plan, std::uint32_t rank) {
  Elements total = 0;
  for (const FlatGroup& fg : plan.groups) {
    const Elements left = rank * fg.partition, right = left + fg.partition;
    if (fg.numel <= left)
      total += fg.partition;
    else if (fg.numel < right)
      total += right - fg.numel;
  }
  return total;
}

Elements flat_copy_of(const ModelDesc& m, const PartitionPlan& plan, std::uint32_t g,
                      std::uint32_t rank) {
  if (g >= plan.groups.size() || plan.groups[g].partition == 0) return 0;
  const RankPartition rp = plan.rank_partition(g, rank);
  std::size_t tensors = rp.padding > 0 ? 1 : 0;
  for (std::uint32_t p : rp.params_in)
    if (m.params[p].numel > 0) ++tensors;
  return tensors > 1 ? plan.groups[g].partition : 0;
}

// Values of every slot on every segment: out[segment][slot].
std::vector<std::vector<Elements>> slot_values(const ModelDesc& m, const PartitionPlan& plan,
                                               const SlotTable& slots, const Segments& seg) {
  const auto& defs = slots.defs();
  std::vector<std::vector<Elements>> out(seg.size(), std::vector<Elements>(defs.size(), 0));
  // FirstTouch: per pass, which flush first touches each segment.
  std::vector<std::vector<std::uint32_t>> first_flush(slots.passes().size());
  for (std::size_t ps = 0; ps < slots.passes().size(); ++ps) {
    first_flush[ps].assign(seg.size(), kNone);
    const auto& flushes = slots.passes()[ps];
    for (std::size_t f = 0; f < flushes.size(); ++f) {
      const auto touched = touching_values(m, plan, seg, flushes[f]);
      for (std::size_t i = 0; i < seg.size(); ++i)
        if (touched[i] > 0 && first_flush[ps][i] == kNone)
          first_flush[ps][i] = static_cast<std::uint32_t>(f);
    }
  }
  for (std::size_t k = 0; k < defs.size(); ++k) {
    const SlotDef& d = defs[k];
    std::vector<Elements> col;
    if (d.kind == SlotKind::Touching) col = touching_values(m, plan, seg, d.params);
    if (d.kind == SlotKind::OwnedSlice) col = owned_values(m, plan, seg, d.params);
    for (std::size_t i = 0; i < seg.size(); ++i) {
      const std::uint32_t rep = seg.first(i);
      switch (d.kind) {
        case SlotKind::Touching:
        case SlotKind::OwnedSlice:
          out[i][k] = col[i];
          break;
        case SlotKind::Padding:
          out[i][k] = padding_of(plan, rep);
          break;
        case SlotKind::FlatCopy:
          out[i][k] = flat_copy_of(m, plan, d.group, rep);
          break;
        case SlotKind::FirstTouch:
          out[i][k] = first_flush[d.pass][i] == d.flush ? plan.grads_in_partition(rep) : 0;
          break;
      }
    }
  }
  return out;
}

}  // namespace

std::vector<RankRole> compute_roles(const ModelDesc& m, const PartitionPlan& plan,
                                    const SlotTable& slots, Diagnostics& diags) {
  const Segments seg(m, plan);
  // The table below is dense (a value per segment and slot): a model of 10^15 parameters in
  // thousands of tensors at 2^20 ranks asked for tens of GB here. Refused up front instead.
  if (!check_role_table(seg.size(), slots.defs().size(), plan.world, diags)) return {};
  auto values = slot_values(m, plan, slots, seg);  // each new role takes its vector
  std::vector<RankRole> roles;
  // Segments with equal value vectors share a role, numbered by first segment. Grouped by a hash
  // (equal vectors confirmed element by element), not an ordered map of vectors: with ~1000
  // segments x ~1000 slots (Llama-3.1-405B at 1024 ranks) the map's comparisons walked the long
  // common prefixes of similar vectors and dominated `zerosim plan`. Role order is the same.
  std::unordered_multimap<std::uint64_t, std::uint32_t> by_hash;
  for (std::size_t i = 0; i < seg.size(); ++i) {
    std::uint64_t h = 1469598103934665603ULL;  // FNV-1a over the values
    for (Elements v : values[i]) h = (h ^ v) * 1099511628211ULL;
    std::uint32_t id = kNone;
    for (auto [it, end] = by_hash.equal_range(h); it != end && id == kNone; ++it)
      if (roles[it->second].slots == values[i]) id = it->second;
    if (id == kNone) {
      id = static_cast<std::uint32_t>(roles.size());
      by_hash.emplace(h, id);
      RankRole role;
      role.representative = seg.first(i);
      role.slots = std::move(values[i]);
      roles.push_back(std::move(role));
    }
    auto& ranges = roles[id].ranks;
    if (!ranges.empty() && ranges.back().second + 1 == seg.first(i)) {
      ranges.back().second = seg.last(i);  // extends the role's previous segment
    } else {
      ranges.emplace_back(seg.first(i), seg.last(i));
    }
  }
  return roles;
}

}  // namespace zerosim::schedule::s12
