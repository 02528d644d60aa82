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

/// The ring formulas more than one collective shares (NCCL tuning.cc; nccl-tests' busbw factors).
namespace ring {
/// (n−1)/n: each rank sends the n−1 shards it does not own.
inline BusFactor shard_bus_factor(std::uint32_t n) { return {n - 1ULL, n}; }
inline std::uint64_t shard_steps(std::uint32_t n) { return n - 1ULL; }
/// 1: every rank but one forwards the whole buffer once.
inline BusFactor whole_buffer_bus_factor(std::uint32_t /*n*/) { return {1, 1}; }
inline std::uint64_t pipelined_steps(std::uint32_t n) { return n; }
/// One pass around the ring crosses each of the nodes − 1 node boundaries once.
inline std::uint64_t one_pass_inter_steps(std::uint32_t nodes) { return nodes - 1ULL; }
}  // namespace ring

/// The ring of the two collectives in which each rank owns one shard of the buffer (all_gather,
/// reduce_scatter): NCCL's count is per rank, and in n−1 steps each rank sends the n−1 shards it
/// does not own (gathered, or partially reduced), so busbw = (n−1)/n × algbw; nodes − 1 of the
/// steps cross the network (NCCL tuning.cc).
constexpr CollectiveTraits shard_ring_traits(CollectiveKind kind, const char* nccl_tests_program,
                                             const char* short_name) {
  return {
      .kind = kind,
      .nccl_tests_program = nccl_tests_program,
      .short_name = short_name,
      .count_is_per_rank = true,
      .bus_factor = &ring::shard_bus_factor,
      .ring_steps = &ring::shard_steps,
      .ring_inter_steps = &ring::one_pass_inter_steps,
      .has_tree = false,
  };
}

/// The pipelined ring of the two rooted collectives (broadcast, reduce): the count is the whole
/// buffer, which every rank but one (the last for broadcast, the root for reduce) forwards once,
/// so busbw = algbw; n steps, nodes − 1 of them over the network (NCCL tuning.cc, ring only;
/// ecosystem.md §4.3).
constexpr CollectiveTraits rooted_ring_traits(CollectiveKind kind, const char* nccl_tests_program,
                                              const char* short_name) {
  return {
      .kind = kind,
      .nccl_tests_program = nccl_tests_program,
      .short_name = short_name,
      .count_is_per_rank = false,
      .bus_factor = &ring::whole_buffer_bus_factor,
      .ring_steps = &ring::pipelined_steps,
      .ring_inter_steps = &ring::one_pass_inter_steps,
      .has_tree = false,
  };
}

const CollectiveTraits& all_reduce_traits();
const CollectiveTraits& reduce_traits();
const CollectiveTraits& broadcast_traits();
const CollectiveTraits& all_gather_traits();
const CollectiveTraits& reduce_scatter_traits();

/// The entry of one kind.
const CollectiveTraits& traits(CollectiveKind k);

}  // namespace zerosim::collectives
