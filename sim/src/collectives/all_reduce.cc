// all_reduce: every rank ends with the element-wise reduction of all ranks' buffers.
//
// nccl-tests (src/all_reduce.cu): S = count × dtype size, busbw factor 2(n−1)/n, because a ring
// all-reduce is a reduce-scatter followed by an all-gather and each rank sends (n−1)/n × S in each.
// NCCL (tuning.cc): the ring has 2(n−1) steps, 2(nodes−1) of them over the network; Tree exists.
#include "collectives/collective_table.h"

namespace zerosim::collectives {
namespace {
BusFactor bus_factor(std::uint32_t n) { return {2ULL * (n - 1), n}; }
std::uint64_t ring_steps(std::uint32_t n) { return 2ULL * (n - 1); }
std::uint64_t ring_inter_steps(std::uint32_t nodes) { return 2ULL * (nodes - 1); }
}  // namespace

const CollectiveTraits& all_reduce_traits() {
  static constexpr CollectiveTraits kTraits{
      .kind = CollectiveKind::AllReduce,
      .nccl_tests_program = "all_reduce_perf",
      .short_name = "all_reduce",
      .count_is_per_rank = false,
      .bus_factor = &bus_factor,
      .ring_steps = &ring_steps,
      .ring_inter_steps = &ring_inter_steps,
      .has_tree = true,
  };
  return kTraits;
}

}  // namespace zerosim::collectives
