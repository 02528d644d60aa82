// Pairing: see span_pairing.h.
#include "model/span_pairing.h"

#include <algorithm>
#include <cstdlib>
#include <unordered_map>

namespace zerosim::view {
namespace {

std::uint64_t key(std::uint32_t rank, std::uint32_t op) {
  return (static_cast<std::uint64_t>(rank) << 32) | op;
}

}  // namespace

Pairing pair_spans(const Trace& measured, const Trace& predicted) {
  // Predicted spans of each (rank, op), in trace order; a cursor per key consumes them in order.
  // Shared predicted spans are consumed per measured rank, so each rank gets its own cursor.
  std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> by_key;
  for (std::uint32_t i = 0; i < predicted.spans.size(); ++i) {
    by_key[key(predicted.spans[i].rank, predicted.spans[i].op)].push_back(i);
  }
  std::unordered_map<std::uint64_t, std::size_t> cursor;  // (measured rank, key) -> next index
  std::vector<bool> taken(predicted.spans.size(), false);
  Pairing out;
  for (std::uint32_t i = 0; i < measured.spans.size(); ++i) {
    const Span& m = measured.spans[i];
    const std::vector<std::uint32_t>* list = nullptr;
    if (auto it = by_key.find(key(m.rank, m.op)); it != by_key.end()) {
      list = &it->second;
    } else if (auto all = by_key.find(key(kAllRanks, m.op)); all != by_key.end()) {
      list = &all->second;
    }
    std::size_t& next = cursor[key(m.rank, m.op)];
    if (list == nullptr || next >= list->size()) {
      out.only_measured.push_back(i);
      continue;
    }
    const std::uint32_t p = (*list)[next++];
    taken[p] = true;
    const Span& ps = predicted.spans[p];
    out.pairs.push_back({i, p, m.start_ns - ps.start_ns, m.dur_ns - ps.dur_ns});
  }
  for (std::uint32_t p = 0; p < predicted.spans.size(); ++p) {
    if (!taken[p]) out.only_predicted.push_back(p);
  }
  return out;
}

std::vector<SpanPair> largest_differences(const Pairing& pairing, std::size_t limit) {
  std::vector<SpanPair> sorted = pairing.pairs;
  std::stable_sort(sorted.begin(), sorted.end(), [](const SpanPair& a, const SpanPair& b) {
    return std::llabs(a.dur_diff_ns) > std::llabs(b.dur_diff_ns);
  });
  if (sorted.size() > limit) sorted.resize(limit);
  return sorted;
}

}  // namespace zerosim::view
