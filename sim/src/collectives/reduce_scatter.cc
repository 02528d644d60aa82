// reduce_scatter (torch reduce_scatter_tensor): rank r ends with the reduction of shard r of every
// rank's input, recvcount elements.
//
// nccl-tests (src/reduce_scatter.cu): S = n × recvcount × dtype size (the full input), busbw factor
// (n−1)/n: with a ring each rank sends n−1 partially reduced shards, one per step. NCCL
// (tuning.cc): ring with n−1 steps, nodes − 1 of them over the network (shard_ring_traits).
#include "collectives/collective_table.h"

namespace zerosim::collectives {

const CollectiveTraits& reduce_scatter_traits() {
  static constexpr CollectiveTraits kTraits =
      shard_ring_traits(CollectiveKind::ReduceScatter, "reduce_scatter_perf", "reduce_scatter");
  return kTraits;
}

}  // namespace zerosim::collectives
