// reduce: the root ends with the element-wise reduction of all ranks' buffers.
//
// nccl-tests (src/reduce.cu): S = count × dtype size, busbw factor 1: in NCCL's pipelined ring
// every rank but the root forwards the whole (partially reduced) buffer once. NCCL (tuning.cc):
// ring only, n steps, nodes − 1 of them over the network (ecosystem.md §4.3).
#include "collectives/collective_table.h"

namespace zerosim::collectives {
namespace {
BusFactor bus_factor(std::uint32_t) { return {1, 1}; }
std::uint64_t ring_steps(std::uint32_t n) { return n; }
std::uint64_t ring_inter_steps(std::uint32_t nodes) { return nodes - 1ULL; }
}  // namespace

const CollectiveTraits& reduce_traits() {
  static constexpr CollectiveTraits kTraits{
      .kind = CollectiveKind::Reduce,
      .nccl_tests_program = "reduce_perf",
      .short_name = "reduce",
      .count_is_per_rank = false,
      .bus_factor = &bus_factor,
      .ring_steps = &ring_steps,
      .ring_inter_steps = &ring_inter_steps,
      .has_tree = false,
  };
  return kTraits;
}

}  // namespace zerosim::collectives
