// Memory stack reduction: see memory_stack.h.
#include "model/memory_stack.h"

#include <algorithm>
#include <cmath>

namespace zerosim::view {

MemoryStack::MemoryStack(const TraceRank& rank, Bytes capacity)
    : rank_(&rank), capacity_(capacity) {
  for (const MemorySample& m : rank.memory) {
    if (m.total > peak_bytes_) {
      peak_bytes_ = m.total;
      peak_t_ = m.t;
      peak_by_category_ = m.by_category;
    }
  }
}

Bytes MemoryStack::y_max() const {
  if (capacity_ > 0 && peak_bytes_ >= capacity_ / 4) {
    return std::max(peak_bytes_, capacity_) / 20 * 21;
  }
  return std::max<Bytes>(peak_bytes_ / 4 * 5, 1);
}

MemorySample MemoryStack::at(SimTime t) const {
  const auto& m = rank_->memory;
  auto it = std::upper_bound(m.begin(), m.end(), t,
                             [](SimTime v, const MemorySample& s) { return v < s.t; });
  if (it == m.begin()) return MemorySample{t, 0, {}};
  return *(it - 1);
}

void MemoryStack::columns(const TimeView& view, std::vector<MemoryColumn>& out) const {
  out.clear();
  const auto& m = rank_->memory;
  if (m.empty()) return;
  const int width = static_cast<int>(std::ceil(view.width_px()));
  // Sample index of the first sample at or after the left edge of column x.
  auto first_at = [&](std::size_t from, SimTime t) {
    return static_cast<std::size_t>(
        std::lower_bound(m.begin() + static_cast<std::ptrdiff_t>(from), m.end(), t,
                         [](const MemorySample& s, SimTime v) { return s.t < v; }) -
        m.begin());
  };
  std::size_t i = first_at(0, view.t_at(0));
  for (int x = 0; x < width; ++x) {
    const SimTime t1 = view.t_at(x + 1);
    if (t1 <= m.front().t) continue;       // the column ends before the first sample
    if (view.t_at(x) > m.back().t) break;  // the run is over: the curve ends
    // The state carried into the column, then the largest sample inside it.
    MemoryColumn col{x, 0, {}};
    if (i > 0) {
      col.total = m[i - 1].total;
      col.by_category = m[i - 1].by_category;
    }
    const std::size_t j = first_at(i, t1);
    for (std::size_t k = i; k < j; ++k) {
      if (m[k].total >= col.total) {
        col.total = m[k].total;
        col.by_category = m[k].by_category;
      }
    }
    i = j;
    out.push_back(col);
  }
}

}  // namespace zerosim::view
