// all_gather (torch all_gather_into_tensor): every rank ends with all ranks' sendcount-element
// shards.
//
// nccl-tests (src/all_gather.cu): S = n × sendcount × dtype size (the gathered output), busbw
// factor (n−1)/n: with a ring each rank forwards the n−1 shards it does not own, one per step. NCCL
// (tuning.cc): ring with n−1 steps, nodes − 1 of them over the network.
#include "collectives/collective_table.h"

namespace zerosim::collectives {
namespace {
BusFactor bus_factor(std::uint32_t n) { return {n - 1ULL, n}; }
std::uint64_t ring_steps(std::uint32_t n) { return n - 1ULL; }
std::uint64_t ring_inter_steps(std::uint32_t nodes) { return nodes - 1ULL; }
}  // namespace

const CollectiveTraits& all_gather_traits() {
  static constexpr CollectiveTraits kTraits{
      .kind = CollectiveKind::AllGather,
      .nccl_tests_program = "all_gather_perf",
      .short_name = "all_gather",
      .count_is_per_rank = true,
      .bus_factor = &bus_factor,
      .ring_steps = &ring_steps,
      .ring_inter_steps = &ring_inter_steps,
      .has_tree = false,
  };
  return kTraits;
}

}  // namespace zerosim::collectives
