// The work limit of a schedule build: how much a `schedule`, `simulate` or `validate` run may ask
// for before anything is built. A schedule holds O(steps x micro-steps x tensors) ops (about 17
// ops, 6 KB and 60 us of build time per unit for Llama-2-70B at stage 3), so flags that are each
// in range (--steps 10000, --grad-accum 1048576) can still ask for terabytes; such a run is refused
// up front with the limit and the product in one line.
#pragma once

#include <cstdint>
#include <string>

#include "zerosim/diagnostic.h"

namespace zerosim {

/// steps x micro-steps per step x tensors allowed by default: 2^20 (a build of about 6 GB and a
/// minute at the limit).
inline constexpr std::uint64_t kDefaultMaxScheduleWork = std::uint64_t{1} << 20;
inline constexpr const char* kMaxScheduleWorkEnv = "ZEROSIM_MAX_SCHEDULE_WORK";

/// The limit: ZEROSIM_MAX_SCHEDULE_WORK (an integer >= 1) when set, else kDefaultMaxScheduleWork.
/// A malformed value adds an error and returns 0.
std::uint64_t max_schedule_work(Diagnostics& diags);

/// Adds one error against `source` when steps x micro_steps x tensors exceeds the limit (or 64
/// bits): "expected steps x micro-steps x tensors <= L (the work limit; ZEROSIM_MAX_SCHEDULE_WORK
/// raises it), got S x M x T = P". Returns false then.
bool check_schedule_work(std::uint64_t steps, std::uint64_t micro_steps, std::uint64_t tensors,
                         const std::string& source, Diagnostics& diags);

/// Entries of a stage 0-2 schedule's role table (ranks with distinct partition boundaries x size
/// slots, 8 bytes each) allowed by default: 2^27, 1 GiB. The table is dense; models of ~10^15
/// parameters at ~2^20 ranks asked for tens of GB.
inline constexpr std::uint64_t kDefaultMaxRoleTable = std::uint64_t{1} << 27;
inline constexpr const char* kMaxRoleTableEnv = "ZEROSIM_MAX_ROLE_TABLE";

/// The role-table limit: ZEROSIM_MAX_ROLE_TABLE (an integer >= 1) when set, else
/// kDefaultMaxRoleTable. A malformed value adds an error and returns 0.
std::uint64_t max_role_table(Diagnostics& diags);

/// Adds one error when segments x slots exceeds ZEROSIM_MAX_ROLE_TABLE (an integer >= 1) or
/// kDefaultMaxRoleTable: "--gpus: expected ranks with distinct partitions x size slots <= L (the
/// role-table limit; ZEROSIM_MAX_ROLE_TABLE raises it), got S x T = P at W GPUs" ("got at least"
/// when `lower_bound`: the builder stopped before the table was complete). Returns false then.
bool check_role_table(std::uint64_t segments, std::uint64_t slots, std::uint64_t world,
                      Diagnostics& diags, bool lower_bound = false);

}  // namespace zerosim
