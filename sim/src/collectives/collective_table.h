// The per-collective table behind collective_model.h: one entry per collective, each filled by its
// own file (all_reduce.cc, reduce.cc, ...), as nccl-tests fills one testColl per src/<name>.cu.
// Adding a collective = one file + one line in collective_table.cc.
#pragma once

#include <cstdint>

#include "zerosim/collective_model.h"

namespace zerosim::collectives {

/// busbw / algbw as an exact fraction, so byte counts stay integers.
struct BusFactor {
  std::uint64_t num = 0;
  std::uint64_t den = 1;
};

struct CollectiveTraits {
  CollectiveKind kind;
  const char* nccl_tests_program;  ///< nccl-tests binary that measures it
  const char* short_name;          ///< "all_gather": NCCL's name without "nccl"
  /// True when NCCL's count is per rank (all-gather sendcount, reduce-scatter recvcount), so that
  /// nccl-tests' S = n × count × dtype size; false when S = count × dtype size.
  bool count_is_per_rank;
  /// nccl-tests' busbw factor for n >= 1 ranks (doc/PERFORMANCE.md).
  BusFactor (*bus_factor)(std::uint32_t n);
  /// NCCL ring latency model (tuning.cc): steps of the ring, and how many of them cross nodes.
  std::uint64_t (*ring_steps)(std::uint32_t n);
  std::uint64_t (*ring_inter_steps)(std::uint32_t nodes);
  /// Whether NCCL can run it with the Tree algorithm (all-reduce only).
  bool has_tree;
};

const CollectiveTraits& all_reduce_traits();
const CollectiveTraits& reduce_traits();
const CollectiveTraits& broadcast_traits();
const CollectiveTraits& all_gather_traits();
const CollectiveTraits& reduce_scatter_traits();

/// The entry of one kind.
const CollectiveTraits& traits(CollectiveKind k);

}  // namespace zerosim::collectives
