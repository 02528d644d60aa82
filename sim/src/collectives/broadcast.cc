// broadcast: every rank ends with the root's buffer.
//
// nccl-tests (src/broadcast.cu): S = count × dtype size, busbw factor 1: in NCCL's pipelined ring
// the root and every rank but the last forward the whole buffer once. NCCL (tuning.cc): ring only,
// n steps, nodes − 1 of them over the network (rooted_ring_traits; ecosystem.md §4.3).
#include "collectives/collective_table.h"

namespace zerosim::collectives {

const CollectiveTraits& broadcast_traits() {
  static constexpr CollectiveTraits kTraits =
      rooted_ring_traits(CollectiveKind::Broadcast, "broadcast_perf", "broadcast");
  return kTraits;
}

}  // namespace zerosim::collectives
