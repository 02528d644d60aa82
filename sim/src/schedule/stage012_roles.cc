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
#include <unordered_map>

#include "schedule/stage012_internal.h"
#include "zerosim/work_limit.h"

namespace zerosim::schedule::s12 {

// Slots are interned by a hash of their definition (equal definitions confirmed field by field):
// an ordered map keyed by a tuple holding a copy of the params cost a vector copy per lookup.
std::uint32_t SlotTable::add(SlotDef d) {
  std::uint64_t h = kHashSeed;  // over the definition's fields
  const auto mix = [&h](std::uint64_t v) { h = hash_mix(h, v); };
  for (std::uint64_t v : {std::uint64_t{static_cast<std::uint8_t>(d.kind)}, std::uint64_t{d.group},
                          std::uint64_t{d.pass}, std::uint64_t{d.flush}, std::uint64_t{d.window},
                          std::uint64_t{d.window_length}, std::uint64_t{d.owner}})
    mix(v);
  const std::vector<std::uint32_t>& params = d.param_list();
  for (std::uint32_t p : params) mix(p);
  for (auto [it, end] = index_.equal_range(h); it != end; ++it) {
    const SlotDef& o = defs_[it->second];
    if (o.kind == d.kind && o.group == d.group && o.pass == d.pass && o.flush == d.flush &&
        o.window == d.window && o.window_length == d.window_length && o.owner == d.owner &&
        o.param_list() == params)
      return it->second;
  }
  const auto id = static_cast<std::uint32_t>(defs_.size());
  names_.push_back(std::move(d.name));
  d.name.clear();
  defs_.push_back(std::move(d));
  index_.emplace(h, id);
  return id;
}

std::uint32_t SlotTable::touching(std::string name, std::vector<std::uint32_t> params) {
  SlotDef d;
  d.kind = SlotKind::Touching;
  d.name = std::move(name);
  d.params = std::move(params);
  return add(std::move(d));
}

std::uint32_t SlotTable::flush_touching(std::string name, std::uint32_t pass, std::uint32_t flush) {
  SlotDef d;
  d.kind = SlotKind::Touching;
  d.name = std::move(name);
  d.shared = &passes_[pass][flush];
  return add(std::move(d));
}

std::uint32_t SlotTable::flush_owned_slice(std::string name, std::uint32_t pass,
                                           std::uint32_t flush) {
  SlotDef d;
  d.kind = SlotKind::OwnedSlice;
  d.name = std::move(name);
  d.shared = &passes_[pass][flush];
  return add(std::move(d));
}

std::uint32_t SlotTable::owned_chunk(std::string name, std::uint32_t pass, std::uint32_t flush,
                                     Elements window, Elements length, std::uint32_t owner) {
  SlotDef d;
  d.kind = SlotKind::OwnedSlice;
  d.name = std::move(name);
  d.shared = &passes_[pass][flush];
  d.window = window;
  d.window_length = length;
  d.owner = owner;
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

// The part of span `sp` (of a param at bucket position `base`) at bucket positions [w, w + len):
// the same span cut down to the elements inside (n 0 when none are).
Span window_of(Span sp, Elements base, Elements w, Elements len) {
  const Elements from = std::max(base, w), to = std::min(base + sp.n, w + len);
  if (to <= from) {
    sp.n = 0;
    return sp;
  }
  sp.start += from - base;
  sp.n = to - from;
  sp.lo = static_cast<std::uint32_t>(sp.start / sp.s);
  sp.hi = static_cast<std::uint32_t>((sp.start + sp.n - 1) / sp.s);
  return sp;
}

// Calls f(span) for each param of a windowed OwnedSlice slot: its part inside the window.
template <class F>
void for_each_window_span(const ModelDesc& m, const std::vector<Span>& spans, const SlotDef& d,
                          F f) {
  Elements base = 0;
  for (std::uint32_t p : d.param_list()) {
    const Span& sp = spans[p];
    if (sp.valid && sp.n > 0) f(window_of(sp, base, d.window, d.window_length));
    base += m.params[p].numel;
  }
}

class Segments {
 public:
  Segments(const ModelDesc& m, const PartitionPlan& plan, const std::vector<Span>& spans,
           const SlotTable& slots)
      : world_(plan.world) {
    starts_.push_back(0);
    auto add = [&](std::uint64_t r) {
      if (r < world_) starts_.push_back(static_cast<std::uint32_t>(r));
    };
    auto add_span = [&](const Span& sp) {
      add(sp.lo);
      add(std::uint64_t{sp.lo} + 1);
      add(sp.hi);
      add(std::uint64_t{sp.hi} + 1);
    };
    for (std::uint32_t p = 0; p < m.params.size(); ++p) {
      const Span& sp = spans[p];
      if (!sp.valid) continue;
      add_span(sp);
    }
    // A reduction chunk's owned slices change where its window cuts a param, and a reduce's copy
    // back is its root's alone.
    for (const SlotDef& d : slots.defs()) {
      if (d.kind != SlotKind::OwnedSlice) continue;
      if (d.owner != kNone) {
        add(d.owner);
        add(std::uint64_t{d.owner} + 1);
      }
      if (d.window_length > 0)
        for_each_window_span(m, spans, d, [&](const Span& sp) {
          if (sp.n > 0) add_span(sp);
        });
    }
    for (const FlatGroup& fg : plan.groups) {
      if (fg.partition == 0 || fg.numel >= fg.aligned) continue;
      const Elements rp = fg.numel / fg.partition;  // first rank holding padding
      add(rp);
      add(rp + 1);
    }
    if (world_ > 0 && world_ <= 8 * starts_.size()) {
      // Few ranks per breakpoint (a large model on ~1000 ranks): a mark per rank instead of
      // sorting ~4 breakpoints per param, and with it the segment of every rank (O(1) `at`,
      // which the value sweeps call a few times per param and slot).
      std::vector<std::uint8_t> mark(world_, 0);
      for (std::uint32_t r : starts_) mark[r] = 1;
      starts_.clear();
      dense_.resize(std::size_t{world_} + 1);
      for (std::uint32_t r = 0; r < world_; ++r) {
        dense_[r] = static_cast<std::uint32_t>(starts_.size());  // segments starting before r
        if (mark[r] != 0) starts_.push_back(r);
      }
      dense_[world_] = static_cast<std::uint32_t>(starts_.size());
    } else {
      std::sort(starts_.begin(), starts_.end());
      starts_.erase(std::unique(starts_.begin(), starts_.end()), starts_.end());
    }
  }
  std::size_t size() const { return starts_.size(); }
  std::uint32_t first(std::size_t i) const { return starts_[i]; }
  std::uint32_t last(std::size_t i) const {
    return i + 1 < starts_.size() ? starts_[i + 1] - 1 : world_ - 1;
  }
  /// Segment starting at rank r (r must be a breakpoint) or size() for r >= W.
  std::size_t at(std::uint64_t r) const {
    if (r >= world_) return starts_.size();
    if (!dense_.empty()) return dense_[r];
    return static_cast<std::size_t>(std::lower_bound(starts_.begin(), starts_.end(), r) -
                                    starts_.begin());
  }

 private:
  std::uint32_t world_;
  std::vector<std::uint32_t> starts_;
  std::vector<std::uint32_t> dense_;  ///< per rank: the first segment starting at or after it
};

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

// The non-zero slot values of every segment. Most slots are zero on most segments (a flush's
// gradients touch a few of ~1000 ranks), so values are accumulated over the segments each param
// actually spans and kept as (slot, value) pairs per segment: the dense segments x slots table
// (~10 MB for Llama-3.1-405B at 1024 ranks: 939 roles x 1271 slots) was a quarter of `zerosim
// plan`'s instructions. Sums are modulo 2^64, as the difference arrays they replace were.
class SparseSlots {
 public:
  struct Entry {
    std::uint32_t slot;
    Elements value;
    friend bool operator==(const Entry&, const Entry&) = default;
  };

  SparseSlots(const ModelDesc& m, const PartitionPlan& plan, const std::vector<Span>& spans,
              const SlotTable& slots, const Segments& seg)
      : m_(m), plan_(plan), spans_(spans), seg_(seg), n_(seg.size()), acc_(n_, 0), marked_(n_, 0) {
    fill(slots);
    transpose();
  }
  /// Segment i's non-zero values, in slot order.
  const Entry* begin(std::size_t i) const { return entries_.data() + row_start_[i]; }
  const Entry* end(std::size_t i) const { return entries_.data() + row_start_[i + 1]; }
  bool same(std::size_t a, std::size_t b) const {
    return std::equal(begin(a), end(a), begin(b), end(b));
  }

 private:
  // Adds v on segments [from, to).
  void add_range(std::size_t from, std::size_t to, Elements v) {
    for (std::size_t i = from; i < to; ++i) {
      if (marked_[i] == 0) {
        marked_[i] = 1;
        touched_.push_back(static_cast<std::uint32_t>(i));
      }
      acc_[i] += v;
    }
  }
  // Moves the accumulated values of slot k into its column list, segments ascending.
  void flush_column(std::uint32_t k) {
    std::sort(touched_.begin(), touched_.end());
    for (std::uint32_t i : touched_) {
      if (acc_[i] != 0) by_slot_.push_back({i, k, acc_[i]});
      acc_[i] = 0;
      marked_[i] = 0;
    }
    touched_.clear();
  }
  void add_touching(const std::vector<std::uint32_t>& params) {
    for (std::uint32_t p : params) {
      const Span& sp = spans_[p];
      if (!sp.valid || sp.n == 0) continue;
      add_range(seg_.at(sp.lo), seg_.at(std::uint64_t{sp.hi} + 1), sp.n);
    }
  }
  // The slice of `sp` each rank owns, added on its segments (on `owner`'s only unless kNone).
  void add_owned_span(const Span& sp, std::uint32_t owner) {
    if (sp.n == 0) return;
    const Elements end = sp.start + sp.n;
    const std::uint64_t lo = sp.lo, hi = sp.hi;
    if (owner != kNone) {
      if (owner < lo || owner > hi) return;
      const Elements from = std::max<Elements>(sp.start, Elements{owner} * sp.s);
      const Elements to = std::min<Elements>(end, (Elements{owner} + 1) * sp.s);
      add_range(seg_.at(owner), seg_.at(std::uint64_t{owner} + 1), to - from);
      return;
    }
    if (lo == hi) {
      add_range(seg_.at(lo), seg_.at(lo + 1), sp.n);
      return;
    }
    add_range(seg_.at(lo), seg_.at(lo + 1), (lo + 1) * sp.s - sp.start);
    if (hi > lo + 1) add_range(seg_.at(lo + 1), seg_.at(hi), sp.s);
    add_range(seg_.at(hi), seg_.at(hi + 1), end - hi * sp.s);
  }
  void add_owned(const SlotDef& d) {
    if (d.window_length > 0) {
      for_each_window_span(m_, spans_, d, [&](const Span& sp) { add_owned_span(sp, d.owner); });
      return;
    }
    for (std::uint32_t p : d.param_list()) {
      const Span& sp = spans_[p];
      if (sp.valid) add_owned_span(sp, d.owner);
    }
  }

  void fill(const SlotTable& slots) {
    const auto& defs = slots.defs();
    // FirstTouch: per pass, which flush first touches each segment (a param with elements
    // spanning it), and the slot of each (pass, flush).
    std::vector<std::vector<std::uint32_t>> first_flush(slots.passes().size());
    for (std::size_t ps = 0; ps < slots.passes().size(); ++ps) {
      first_flush[ps].assign(n_, kNone);
      const auto& flushes = slots.passes()[ps];
      for (std::size_t f = 0; f < flushes.size(); ++f) {
        for (std::uint32_t p : flushes[f]) {
          const Span& sp = spans_[p];
          if (!sp.valid || sp.n == 0) continue;
          const std::size_t to = seg_.at(std::uint64_t{sp.hi} + 1);
          for (std::size_t i = seg_.at(sp.lo); i < to; ++i)
            if (first_flush[ps][i] == kNone) first_flush[ps][i] = static_cast<std::uint32_t>(f);
        }
      }
    }
    // FirstTouch values: grads_in_partition of the segment, in the slot of its first flush. The
    // segments of each (pass, flush) are listed once (a counting sort by first flush, segments
    // ascending), so every slot's values are appended in slot order like the others'.
    std::vector<std::vector<std::uint32_t>> by_first_start(first_flush.size());
    std::vector<std::vector<std::uint32_t>> by_first(first_flush.size());
    std::vector<Elements> gip;
    const auto first_touch = [&](const SlotDef& d, std::uint32_t slot) {
      if (d.pass >= first_flush.size()) return;
      auto& start = by_first_start[d.pass];
      auto& list = by_first[d.pass];
      if (start.empty()) {  // this pass's segments by first flush
        const auto& ff = first_flush[d.pass];
        start.assign(slots.passes()[d.pass].size() + 2, 0);
        for (std::uint32_t f : ff)
          if (f != kNone) ++start[f + 2];
        for (std::size_t f = 2; f < start.size(); ++f) start[f] += start[f - 1];
        list.resize(start.back());
        for (std::size_t i = 0; i < n_; ++i)
          if (ff[i] != kNone) list[start[ff[i] + 1]++] = static_cast<std::uint32_t>(i);
      }
      if (gip.empty()) {
        gip.resize(n_);
        for (std::size_t i = 0; i < n_; ++i) gip[i] = plan_.grads_in_partition(seg_.first(i));
      }
      if (std::size_t{d.flush} + 1 >= start.size()) return;
      for (std::uint32_t j = start[d.flush]; j < start[d.flush + 1]; ++j)
        if (const std::uint32_t i = list[j]; gip[i] != 0) by_slot_.push_back({i, slot, gip[i]});
    };
    for (std::size_t k = 0; k < defs.size(); ++k) {
      const SlotDef& d = defs[k];
      const auto slot = static_cast<std::uint32_t>(k);
      switch (d.kind) {
        case SlotKind::Touching:
          add_touching(d.param_list());
          flush_column(slot);
          break;
        case SlotKind::OwnedSlice:
          add_owned(d);
          flush_column(slot);
          break;
        case SlotKind::Padding:
          for (std::size_t i = 0; i < n_; ++i)
            if (const Elements v = padding_of(plan_, seg_.first(i)); v != 0)
              by_slot_.push_back({static_cast<std::uint32_t>(i), slot, v});
          break;
        case SlotKind::FlatCopy:
          for (std::size_t i = 0; i < n_; ++i)
            if (const Elements v = flat_copy_of(m_, plan_, d.group, seg_.first(i)); v != 0)
              by_slot_.push_back({static_cast<std::uint32_t>(i), slot, v});
          break;
        case SlotKind::FirstTouch:
          first_touch(d, slot);
          break;
      }
    }
  }

  // Groups the values by segment (a counting sort), each segment's in slot order: by_slot_ is in
  // slot order already (every slot's values are appended when the slot is visited).
  void transpose() {
    row_start_.assign(n_ + 1, 0);
    for (const Cell& c : by_slot_) ++row_start_[c.segment + 1];
    for (std::size_t i = 0; i < n_; ++i) row_start_[i + 1] += row_start_[i];
    entries_.resize(by_slot_.size());
    std::vector<std::size_t> next(row_start_.begin(), row_start_.end() - 1);
    for (const Cell& c : by_slot_) entries_[next[c.segment]++] = {c.slot, c.value};
    by_slot_ = {};
  }

  struct Cell {
    std::uint32_t segment;
    std::uint32_t slot;
    Elements value;
  };
  const ModelDesc& m_;
  const PartitionPlan& plan_;
  const std::vector<Span>& spans_;  // per param
  const Segments& seg_;
  std::size_t n_;
  std::vector<Elements> acc_;           // per segment: the column being accumulated
  std::vector<std::uint8_t> marked_;    // per segment: in touched_
  std::vector<std::uint32_t> touched_;  // segments the column being accumulated has touched
  std::vector<Cell> by_slot_;
  std::vector<std::size_t> row_start_;  // n_ + 1 offsets into entries_
  std::vector<Entry> entries_;
};

}  // namespace

std::uint64_t max_slots_before_refusal(const ModelDesc& m, const PartitionPlan& plan) {
  Diagnostics d;
  const std::uint64_t limit = max_role_table(d);
  if (d.has_errors()) return UINT64_MAX;
  std::vector<Span> spans(m.params.size());
  for (std::uint32_t p = 0; p < m.params.size(); ++p) spans[p] = span_of(plan, m, p);
  const SlotTable none;  // no owned slices: the breakpoints of the spans and the padding only
  const Segments seg(m, plan, spans, none);
  return limit / std::max<std::uint64_t>(seg.size(), 1);
}

std::vector<RankRole> compute_roles(const ModelDesc& m, const PartitionPlan& plan,
                                    const SlotTable& slots, Diagnostics& diags) {
  // Every param's span, computed once: the breakpoints and every slot's sweep read them.
  std::vector<Span> spans(m.params.size());
  for (std::uint32_t p = 0; p < m.params.size(); ++p) spans[p] = span_of(plan, m, p);
  const Segments seg(m, plan, spans, slots);
  // RankRole keeps a dense value per slot: a model of 10^15 parameters in thousands of tensors at
  // 2^20 ranks asked for tens of GB of them. Refused up front instead.
  if (!check_role_table(seg.size(), slots.defs().size(), plan.world, diags, slots.full()))
    return {};
  const SparseSlots values(m, plan, spans, slots, seg);
  const std::size_t n = seg.size(), slot_count = slots.defs().size();
  // Segments with equal value vectors share a role, numbered by first segment. Grouped by a hash
  // of the non-zero values (equal vectors confirmed value by value), not an ordered map of
  // vectors: with ~1000 segments x ~1000 slots (Llama-3.1-405B at 1024 ranks) the map's
  // comparisons walked the long common prefixes of similar vectors. Role order is the same.
  std::vector<RankRole> roles;
  std::vector<std::size_t> first_segment;  // per role
  std::unordered_multimap<std::uint64_t, std::uint32_t> by_hash;
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t h = kHashSeed;  // over the (slot, value) pairs
    for (const auto* e = values.begin(i); e != values.end(i); ++e)
      h = hash_mix(hash_mix(h, e->slot), e->value);
    std::uint32_t id = kNone;
    for (auto [it, end] = by_hash.equal_range(h); it != end && id == kNone; ++it)
      if (values.same(first_segment[it->second], i)) id = it->second;
    if (id == kNone) {
      id = static_cast<std::uint32_t>(roles.size());
      by_hash.emplace(h, id);
      RankRole role;
      role.representative = seg.first(i);
      role.slots = SlotValues::zeros(slot_count);
      for (const auto* e = values.begin(i); e != values.end(i); ++e)
        role.slots.set(e->slot, e->value);
      roles.push_back(std::move(role));
      first_segment.push_back(i);
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
