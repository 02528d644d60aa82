// Queries on a finished PartitionPlan: per-rank views, owner lists and grads_in_partition sizes
// (deepspeed_zero.md §2.1 steps 7–10), answered without visiting every rank.
//
// Two facts keep everything independent of W:
//  - the members of partition r are a contiguous run of the flat order: the params starting inside
//    [rS, (r+1)S) plus at most one straddler just before them (get_partition_info, :1986), so a
//    binary search over flat offsets finds them, and the sum of their full numel is an offset
//    difference;
//  - a param touches the contiguous rank interval [c/S, (c+n-1)/S], so grads_in_partition(r) is a
//    sum of interval indicators: a sweep over two events per param gives it for all ranks at once.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <utility>
#include <vector>

#include "zerosim/partition_plan.h"

namespace zerosim {
namespace {

// End offset of flat_order[i] in the flat buffer.
Elements end_of(const FlatGroup& fg, std::size_t i) {
  return i + 1 < fg.flat_offset.size() ? fg.flat_offset[i + 1] : fg.numel;
}

// Members of partition `rank` of fg as flat-order indices [first, last), and whether `first` is a
// straddler that starts before the partition.
struct Members {
  std::size_t first = 0;
  std::size_t last = 0;
  bool straddler = false;
};

Members members_of(const FlatGroup& fg, std::uint32_t rank) {
  const Elements left = rank * fg.partition;
  const Elements right = left + fg.partition;  // ≤ Pal: fits
  const auto& off = fg.flat_offset;
  // Params with left <= start < right are members (a zero-size param included).
  const auto begin = std::lower_bound(off.begin(), off.end(), left);
  const auto end = std::lower_bound(begin, off.end(), right);
  Members m;
  m.first = static_cast<std::size_t>(begin - off.begin());
  m.last = static_cast<std::size_t>(end - off.begin());
  // Only the param just before `begin` can cross `left`: every earlier one ends at or before its
  // start, which is < left.
  if (m.first > 0 && end_of(fg, m.first - 1) > left) {
    --m.first;
    m.straddler = true;
  }
  return m;
}

// grads_in_partition of one group: Σ full numel of members = end of the last - start of the first.
Elements group_grads(const FlatGroup& fg, std::uint32_t rank) {
  const Members m = members_of(fg, rank);
  if (m.first == m.last) return 0;
  return end_of(fg, m.last - 1) - fg.flat_offset[m.first];
}

struct RankEvent {
  std::uint32_t rank = 0;
  Elements add = 0;
  Elements sub = 0;
};

bool by_rank(const RankEvent& a, const RankEvent& b) { return a.rank < b.rank; }

// Up to this many groups the events are merged group by group (O(G·T)); beyond, sorted once.
constexpr std::size_t kMaxMergedGroups = 8;

// Partition index of flat offsets visited in nondecreasing order. Consecutive params mostly start
// in the partition where the previous one ended, so the 64-bit division is skipped when the hint
// (or the partition after it) already holds the offset.
class RankOf {
 public:
  explicit RankOf(Elements partition) : s_(partition) {}
  Elements operator()(Elements x) {
    // hint_ * s_ <= x <= Pal: no product here can wrap, even for a Pal near 2^64.
    const Elements d = x - hint_ * s_;
    if (d >= s_) hint_ = d - s_ < s_ ? hint_ + 1 : x / s_;
    return hint_;
  }

 private:
  Elements s_;
  Elements hint_ = 0;
};

// The events of one group: +n at the first rank a param touches, -n one past its last rank.
std::pair<std::vector<RankEvent>, std::vector<RankEvent>> group_events(const FlatGroup& fg,
                                                                       std::uint32_t world) {
  std::vector<RankEvent> adds, subs;
  if (fg.partition == 0) return {adds, subs};
  adds.reserve(fg.flat_order.size());
  subs.reserve(fg.flat_order.size());
  RankOf rank_of(fg.partition);
  for (std::size_t i = 0; i < fg.flat_order.size(); ++i) {
    const Elements start = fg.flat_offset[i];
    const Elements end = end_of(fg, i);
    if (start == end) continue;  // a zero-size param adds nothing to any rank
    const auto lo = static_cast<std::uint32_t>(rank_of(start));
    const auto hi = static_cast<std::uint32_t>(rank_of(end - 1));  // < W since end <= Pal
    adds.push_back({lo, end - start, 0});
    if (hi + 1 < world) subs.push_back({hi + 1, 0, end - start});
  }
  return {std::move(adds), std::move(subs)};
}

}  // namespace

RankPartition PartitionPlan::rank_partition(std::size_t g, std::uint32_t rank) const {
  RankPartition rp;
  rp.rank = rank;
  if (g >= groups.size() || rank >= world) return rp;
  const FlatGroup& fg = groups[g];
  const Elements left = rank * fg.partition;
  const Elements right = left + fg.partition;
  // §2.1 step 9 (groups_padding, :473–483).
  if (fg.numel <= left) {
    rp.padding = fg.partition;
  } else if (fg.numel < right) {
    rp.padding = right - fg.numel;
  }
  const Members m = members_of(fg, rank);
  rp.params_in.assign(fg.flat_order.begin() + static_cast<std::ptrdiff_t>(m.first),
                      fg.flat_order.begin() + static_cast<std::ptrdiff_t>(m.last));
  if (m.straddler) rp.first_offset = left - fg.flat_offset[m.first];
  if (m.first != m.last) rp.grads_in_partition = end_of(fg, m.last - 1) - fg.flat_offset[m.first];
  return rp;
}

std::vector<OwnerSlice> PartitionPlan::owners(std::size_t g, std::uint32_t param_id) const {
  std::vector<OwnerSlice> out;
  if (g >= groups.size() || param_id >= param_group.size() || param_id >= flat_index.size() ||
      param_group[param_id] != g)
    return out;
  const FlatGroup& fg = groups[g];
  const std::size_t idx = flat_index[param_id];
  const Elements start = fg.flat_offset[idx];
  const Elements end = end_of(fg, idx);
  const Elements s = fg.partition;
  // A zero-size param starting at Pal (after a padding-free buffer) lies in no partition.
  if (s == 0 || start >= fg.aligned) return out;
  const Elements first = start / s;
  if (start == end) {
    out.push_back({static_cast<std::uint32_t>(first), 0, 0});
    return out;
  }
  const Elements last = (end - 1) / s;
  out.reserve(static_cast<std::size_t>(last - first + 1));
  for (Elements k = first; k <= last; ++k) {
    const Elements lo = std::max(start, k * s);
    const Elements hi = std::min(end, (k + 1) * s);
    out.push_back({static_cast<std::uint32_t>(k), lo - start, hi - lo});
  }
  return out;
}

Elements PartitionPlan::grads_in_partition(std::uint32_t rank) const {
  if (rank >= world) return 0;
  Elements total = 0;
  for (const FlatGroup& fg : groups) total += group_grads(fg, rank);  // ≤ Σ P_g: fits
  return total;
}

std::vector<RankRun> PartitionPlan::grads_in_partition_runs() const {
  // Per group, additions come sorted by first rank and removals by one-past-last rank (both
  // follow the flat offsets), so a linear merge orders them; with many groups a sort is cheaper.
  std::vector<RankEvent> events, merged;
  const bool sort_at_end = groups.size() > kMaxMergedGroups;
  for (const FlatGroup& fg : groups) {
    auto [adds, subs] = group_events(fg, world);
    if (sort_at_end) {
      events.insert(events.end(), adds.begin(), adds.end());
      events.insert(events.end(), subs.begin(), subs.end());
      continue;
    }
    merged.clear();
    merged.reserve(events.size() + adds.size() + subs.size());
    std::merge(adds.begin(), adds.end(), subs.begin(), subs.end(), std::back_inserter(merged),
               by_rank);
    std::vector<RankEvent> all;
    all.reserve(events.size() + merged.size());
    std::merge(events.begin(), events.end(), merged.begin(), merged.end(), std::back_inserter(all),
               by_rank);
    events.swap(all);
  }
  if (sort_at_end) std::sort(events.begin(), events.end(), by_rank);
  std::vector<RankRun> runs{{0, 0}};
  Elements sum = 0;
  for (std::size_t i = 0; i < events.size();) {
    const std::uint32_t rank = events[i].rank;
    // A subtraction belongs to a param whose addition came at an earlier rank: never wraps.
    for (; i < events.size() && events[i].rank == rank; ++i)
      sum = sum - events[i].sub + events[i].add;
    if (runs.back().first_rank == rank) {  // only rank 0: later event ranks are all distinct
      runs.back().value = sum;
    } else if (runs.back().value != sum) {
      runs.push_back({rank, sum});
    }
  }
  return runs;
}

Elements PartitionPlan::max_grads_in_partition() const {
  Elements best = 0;
  for (const RankRun& r : grads_in_partition_runs()) best = std::max(best, r.value);
  return best;
}

Elements PartitionPlan::partition_numel() const {
  Elements total = 0;
  for (const FlatGroup& fg : groups) total += fg.partition;  // ≤ Σ Pal_g, checked at planning
  return total;
}

Elements PartitionPlan::aligned_numel() const {
  Elements total = 0;
  for (const FlatGroup& fg : groups) total += fg.aligned;  // checked at planning
  return total;
}

Elements PartitionPlan::s3_real_numel(std::uint32_t param_id, std::uint32_t rank) const {
  if (param_id >= s3.size()) return 0;
  const Stage3Param& p = s3[param_id];
  auto start = checked_mul(rank, p.partition);
  if (!start || *start >= p.numel) return 0;
  return std::min(p.partition, p.numel - *start);
}

}  // namespace zerosim
