// broadcast: every rank ends with the root's buffer.
//
// nccl-tests (src/broadcast.cu): S = count × dtype size, busbw factor 1: in NCCL's pipelined ring
// the root and every rank but the last forward the whole buffer once. NCCL (tuning.cc): ring only,
// n steps, nodes − 1 of them over the network (ecosystem.md §4.3).
#include "collectives/collective_table.h"

namespace zerosim::collectives {
namespace {
BusFactor bus_factor(std::uint32_t) { return {1, 1}; }
std::uint64_t ring_steps(std::uint32_t n) { return n; }
std::uint64_t ring_inter_steps(std::uint32_t nodes) { return nodes - 1ULL; }
}  // namespace

const CollectiveTraits& broadcast_traits() {
  static constexpr CollectiveTraits kTraits{
      .kind = CollectiveKind::Broadcast,
      .nccl_tests_program = "broadcast_perf",
      .short_name = "broadcast",
      .count_is_per_rank = false,
      .bus_factor = &bus_factor,
      .ring_steps = &ring_steps,
      .ring_inter_steps = &ring_inter_steps,
      .has_tree = false,
  };
  return kTraits;
}

}  // namespace zerosim::collectives
