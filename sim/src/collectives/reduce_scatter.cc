// reduce_scatter (torch reduce_scatter_tensor): rank r ends with the reduction of shard r of every
// rank's input, recvcount elements.
//
// nccl-tests (src/reduce_scatter.cu): S = n × recvcount × dtype size (the full input), busbw factor
// (n−1)/n: with a ring each rank sends n−1 partially reduced shards, one per step. NCCL
// (tuning.cc): ring with n−1 steps, nodes − 1 of them over the network.
#include "collectives/collective_table.h"

namespace zerosim::collectives {
namespace {
BusFactor bus_factor(std::uint32_t n) { return {n - 1ULL, n}; }
std::uint64_t ring_steps(std::uint32_t n) { return n - 1ULL; }
std::uint64_t ring_inter_steps(std::uint32_t nodes) { return nodes - 1ULL; }
}  // namespace

const CollectiveTraits& reduce_scatter_traits() {
  static constexpr CollectiveTraits kTraits{
      .kind = CollectiveKind::ReduceScatter,
      .nccl_tests_program = "reduce_scatter_perf",
      .short_name = "reduce_scatter",
      .count_is_per_rank = true,
      .bus_factor = &bus_factor,
      .ring_steps = &ring_steps,
      .ring_inter_steps = &ring_inter_steps,
      .has_tree = false,
  };
  return kTraits;
}

}  // namespace zerosim::collectives
