// The ring algorithms of the host backend's collectives, as a plan of which chunk each rank sends
// and receives at each step (NCCL's ring, src/device/prims and the algorithm descriptions in
// doc/PERFORMANCE.md of nccl-tests). The data path moves bytes by this plan and the count-only
// path counts them from it, so both count the same bytes.
//   all_reduce N:      chunk i = [iN/n, (i+1)N/n); reduce-scatter then all-gather around the ring,
//                      2(n-1) steps; rank r sends 2N - c[r+1] - c[r+2], receives 2N - c[r] - c[r+1]
//   reduce_scatter:    n blocks of M (the output per rank), n-1 steps: (n-1)M each way
//   all_gather:        n blocks of M (the input per rank), n-1 steps: (n-1)M each way
//   broadcast N:       a chain from the root: every rank but the root's left neighbour sends N,
//                      every rank but the root receives N
//   reduce N:          a chain ending at the root: every rank but the root sends N, every rank but
//                      the root's right neighbour receives N
// One rank, or nothing to move: no bytes (NCCL returns at once).
#pragma once

#include <cstdint>

#include "zerosim/ir_types.h"
#include "zerosim/units.h"

namespace zerosim::exec {

/// Elements of chunk i of N split over n ranks (floor partition: sizes differ by at most one).
inline Elements ring_chunk(Elements total, std::uint32_t n, std::uint32_t i) {
  __extension__ typedef unsigned __int128 u128;  // exact (total × i) for any 64-bit total
  const auto hi = static_cast<u128>(total) * (i + 1) / n;
  const auto lo = static_cast<u128>(total) * i / n;
  return static_cast<Elements>(hi - lo);
}

struct RingBytes {
  Bytes sent = 0;
  Bytes received = 0;
};

/// What rank `r` of an `n`-rank ring sends and receives for one call: `numel` input and
/// `out_numel` output elements per rank of `elem_bytes` each, root `root` for reduce/broadcast.
RingBytes ring_bytes(CollectiveKind kind, Elements numel, Elements out_numel, Bytes elem_bytes,
                     std::uint32_t n, std::uint32_t r, std::uint32_t root);

}  // namespace zerosim::exec
