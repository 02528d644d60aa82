// The comm record of a collective op (trace.h CommRecord) as far as the schedule fixes it, so the
// simulator, the host backend and the CUDA backend write those fields one way: each producer adds
// only what it knows (bytes sent and received, times, bandwidths, the algorithm's name).
#pragma once

#include <cstdint>

#include "zerosim/schedule.h"
#include "zerosim/trace.h"

namespace zerosim {

/// Op `op`'s record for `rank` (kAllRanks: one record standing for every rank): op, rank, kind,
/// phase, step, bucket, numel, out_numel, dtype, group size, nccl-tests' S (NCCL's count: the
/// per-rank receive count for reduce-scatter), micro-step, reduce op, and the root as a rank of
/// `rank`'s group (of the group the first rank belongs to for kAllRanks). Precondition: `op` is a
/// collective of `s`.
CommRecord schedule_comm_record(const Schedule& s, std::uint32_t op, std::uint32_t rank);

/// algbw = S / t (GB/s, 1e9 B/s) and busbw = algbw × `busbw_factor` when t > 0; 0 otherwise.
void set_comm_bandwidths(CommRecord& r, double busbw_factor);

}  // namespace zerosim
