// reduce: the root ends with the element-wise reduction of all ranks' buffers.
//
// nccl-tests (src/reduce.cu): S = count × dtype size, busbw factor 1: in NCCL's pipelined ring
// every rank but the root forwards the whole (partially reduced) buffer once. NCCL (tuning.cc):
// ring only, n steps, nodes − 1 of them over the network (rooted_ring_traits; ecosystem.md §4.3).
#include "collectives/collective_table.h"

namespace zerosim::collectives {

const CollectiveTraits& reduce_traits() {
  static constexpr CollectiveTraits kTraits =
      rooted_ring_traits(CollectiveKind::Reduce, "reduce_perf", "reduce");
  return kTraits;
}

}  // namespace zerosim::collectives
