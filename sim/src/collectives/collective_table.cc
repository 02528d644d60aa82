// The collective registry: the list of table entries, name lookup, nccl-tests' S and busbw factor,
// and CalibratedLinks' accessors. The only file to touch besides the new <collective>.cc when a
// collective is added.
#include "collectives/collective_table.h"

#include <cstddef>
#include <utility>

namespace zerosim {
namespace collectives {

const CollectiveTraits& traits(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::AllReduce:
      return all_reduce_traits();
    case CollectiveKind::Reduce:
      return reduce_traits();
    case CollectiveKind::Broadcast:
      return broadcast_traits();
    case CollectiveKind::AllGather:
      return all_gather_traits();
    case CollectiveKind::ReduceScatter:
      return reduce_scatter_traits();
  }
  return all_reduce_traits();  // unreachable: the switch covers every enumerator
}

}  // namespace collectives

std::string_view nccl_tests_program(CollectiveKind k) {
  return collectives::traits(k).nccl_tests_program;
}

std::optional<CollectiveKind> parse_collective(std::string_view name) {
  for (const CollectiveKind k : kAllCollectiveKinds) {
    const auto& t = collectives::traits(k);
    if (name == collective_name(k) || name == t.nccl_tests_program || name == t.short_name)
      return k;
  }
  return std::nullopt;
}

std::optional<Bytes> collective_algbw_bytes(CollectiveKind k, Elements count, DType dtype,
                                            std::uint32_t ranks) {
  std::optional<Bytes> s = checked_mul(count, dtype_size(dtype));
  if (s && collectives::traits(k).count_is_per_rank) s = checked_mul(*s, ranks);
  return s;
}

double collective_busbw_factor(CollectiveKind k, std::uint32_t ranks) {
  if (ranks == 0) return 0.0;
  const collectives::BusFactor f = collectives::traits(k).bus_factor(ranks);
  return static_cast<double>(f.num) / static_cast<double>(f.den);
}

const CalibratedCollective* CalibratedLinks::find(CollectiveKind k) const {
  const auto& c = by_kind[static_cast<std::size_t>(k)];
  return c ? &*c : nullptr;
}

void CalibratedLinks::set(CollectiveKind k, CalibratedCollective c) {
  by_kind[static_cast<std::size_t>(k)] = std::move(c);
}

bool CalibratedLinks::empty() const {
  for (const auto& c : by_kind) {
    if (c) return false;
  }
  return true;
}

}  // namespace zerosim
