// all_gather (torch all_gather_into_tensor): every rank ends with all ranks' sendcount-element
// shards.
//
// nccl-tests (src/all_gather.cu): S = n × sendcount × dtype size (the gathered output), busbw
// factor (n−1)/n: with a ring each rank forwards the n−1 shards it does not own, one per step. NCCL
// (tuning.cc): ring with n−1 steps, nodes − 1 of them over the network (shard_ring_traits).
#include "collectives/collective_table.h"

namespace zerosim::collectives {

const CollectiveTraits& all_gather_traits() {
  static constexpr CollectiveTraits kTraits =
      shard_ring_traits(CollectiveKind::AllGather, "all_gather_perf", "all_gather");
  return kTraits;
}

}  // namespace zerosim::collectives
