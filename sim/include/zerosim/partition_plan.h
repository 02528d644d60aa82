// PartitionPlan: how DeepSpeed flattens, aligns and partitions parameters across W data-parallel
// ranks (shared/docs/deepspeed_zero.md §2, §7.1 step 3).
//
// Stage 1/2 (and BF16_Optimizer, and the flat layout of stage 0): per param group one flat buffer
// of the group's trainable params, padded after the last param to a multiple of 2W elements, split
// into W equal partitions of S = Pal/W elements (S is always even); params may straddle partitions;
// optional round-robin reorder. Stage 3: every param on its own, partition numel c = ceil(n/W), cut
// into sub-groups for the optimizer step; small params marked persistent.
//
// Scale: nothing here is O(ranks x tensors). Per-rank views are computed on demand by binary search
// over flat offsets, and the per-rank grads_in_partition sizes are derived as a piecewise-constant
// function of the rank (at most 2 pieces per param), so a plan for 2^24 ranks costs what a plan for
// 8 does. Complexities are stated per function below (T = tensors in the plan, G = param groups).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "zerosim/diagnostic.h"
#include "zerosim/units.h"

namespace zerosim {

// Declared only: the plan takes them by reference, and schedule.h (the IR) includes this header
// for the flat layout without pulling in the config or the model (issue #7 item 1's layering).
struct DsConfig;
struct ModelDesc;

/// The largest data-parallel world size plan_partition accepts (2^24 ranks).
inline constexpr std::uint32_t kMaxPartitionWorld = 16777216;

/// Part of param p owned by partition `rank`: elements [offset, offset + length) of p.
struct OwnerSlice {
  std::uint32_t rank = 0;
  Elements offset = 0;  ///< offset inside the param where this owner's slice begins
  Elements length = 0;
  bool operator==(const OwnerSlice&) const = default;
};

/// Stage 1/2 layout of one param group.
struct FlatGroup {
  std::vector<std::uint32_t> params;  ///< model param ids, original group order (trainable only)
  std::vector<std::uint32_t> flat_order;  ///< params in flat-buffer order (round robin applied)
  std::vector<Elements> flat_offset;  ///< start of flat_order[i] in the flat buffer (nondecreasing)
  Elements numel = 0;                 ///< P_g
  Elements padding = 0;               ///< pad_g = (2W - P_g mod 2W) mod 2W
  Elements aligned = 0;               ///< Pal_g = P_g + pad_g
  Elements partition = 0;             ///< S_g = Pal_g / W (even; 0 for a group without elements)
};

/// What partition `rank` of a group holds (deepspeed_zero.md §2.1 steps 7–10).
struct RankPartition {
  std::uint32_t rank = 0;
  std::vector<std::uint32_t> params_in;  ///< model param ids touching the rank's range, flat order
  Elements first_offset = 0;             ///< offset inside params_in[0] where the range begins
  Elements padding = 0;                  ///< padding elements inside the range
  Elements grads_in_partition = 0;       ///< Σ full numel of params_in (straddlers counted whole)
};

/// Ranks [first_rank, next run's first_rank) (the last run: up to W) share one value.
struct RankRun {
  std::uint32_t first_rank = 0;
  Elements value = 0;
  bool operator==(const RankRun&) const = default;
};

/// Stage 3 partitioning of one param (§2.2).
struct Stage3Param {
  Elements numel = 0;       ///< n
  Elements partition = 0;   ///< c = ceil(n / W)
  Elements padding = 0;     ///< W*c - n
  bool persistent = false;  ///< stays gathered (persistence thresholds, §2.2)
};

/// Stage 3 sub-group of a param group (stage3.py:1160): consecutive trainable params of one group,
/// closed right after the param that makes Σc >= sub_group_size, or at the group's last param.
struct SubGroup {
  std::vector<std::uint32_t> params;  ///< model param ids
  Elements partition_numel = 0;       ///< Σ c_i
  std::uint32_t group = 0;  ///< index of the param group (in PartitionOptions::groups order)
};

struct PartitionPlan {
  /// param_group value of a param that is frozen or listed in no group.
  static constexpr std::uint32_t kNoGroup = 0xFFFFFFFFu;

  int stage = 0;
  std::uint32_t world = 1;   ///< W
  bool round_robin = false;  ///< round robin applied (only ever true for stage 1 and 2)

  /// Indexed by model param id: the param group holding it, or kNoGroup (every stage).
  std::vector<std::uint32_t> param_group;
  /// Indexed by model param id: index into groups[param_group].flat_order (stage 0–2 only).
  std::vector<std::uint32_t> flat_index;

  // Stage 0–2: the flat layout (for stage 0 and BF16_Optimizer it is the same 2W-aligned buffer).
  // Empty at stage 3. A group with no trainable params is kept, with P = Pal = S = 0.
  std::vector<FlatGroup> groups;

  // Stage 3 (empty at stage 0–2).
  std::vector<Stage3Param> s3;       ///< indexed by model param id (all params, frozen included)
  std::vector<SubGroup> sub_groups;  ///< in order; groups without trainable params are skipped
  /// Σ c_i over params in sub-groups: lp_param_buffer and grad partitions per rank.
  Elements s3_partition_numel = 0;
  /// Σ c_i over frozen or ungrouped params: each keeps its own ds_tensor, no grad or master slice.
  Elements s3_unoptimized_partition_numel = 0;
  Elements s3_persistent_numel = 0;     ///< Σ n over persistent params
  Elements s3_persistent_gathered = 0;  ///< Σ W*c over persistent params (resident gathered copies)

  /// Stage 1/2: the view of partition `rank` of group g. O(log T_g + |params_in|).
  /// Out-of-range g or rank gives an empty view with that rank.
  RankPartition rank_partition(std::size_t g, std::uint32_t rank) const;
  /// Stage 1/2: owners of a param (model id) in offset order, slices as in §2.1 step 8. A zero-size
  /// param has one slice of length 0 (its start's partition), or none when it starts at Pal.
  /// O(ranks touched). Empty for a param that is not in group g.
  std::vector<OwnerSlice> owners(std::size_t g, std::uint32_t param_id) const;
  /// Stage 1/2: Σ over groups of grads_in_partition(rank) — the one shared T3 buffer.
  /// O(G log T) (member runs are contiguous in flat order, so their sum is an offset difference).
  Elements grads_in_partition(std::uint32_t rank) const;
  /// Stage 1/2: grads_in_partition as a function of the rank: maximal runs of equal value covering
  /// [0, W), first run at rank 0; at most 2T + 1 runs. Independent of W: a param contributes its
  /// numel to the contiguous rank interval it touches (two events per param), events are merged
  /// per group, O(T·G) for G <= 8 groups, O(T log T) beyond.
  std::vector<RankRun> grads_in_partition_runs() const;
  /// Stage 1/2: the largest grads_in_partition over all ranks. Same cost as
  /// grads_in_partition_runs.
  Elements max_grads_in_partition() const;
  /// Stage 1/2: Σ_g S_g (elements each rank owns, padding included). O(G).
  Elements partition_numel() const;
  /// Stage 1/2: Σ_g Pal_g. O(G).
  Elements aligned_numel() const;
  /// Stage 3: real (non-padding) elements of param `param_id` on `rank`:
  /// max(0, min(c, n - rank*c)). 0 for an unknown param. O(1).
  Elements s3_real_numel(std::uint32_t param_id, std::uint32_t rank) const;
};

/// Partitions a model. `groups` lists param ids per optimizer param group (empty = one group of all
/// trainable params in declaration order); frozen params listed in a group are dropped, as
/// DeepSpeed keeps only requires_grad params. Persistence thresholds and sub_group_size only matter
/// for stage 3, round_robin only for stage 1 and 2 (callers modelling BF16_Optimizer pass false).
struct PartitionOptions {
  int stage = 0;
  std::uint32_t world = 1;
  bool round_robin = false;
  std::uint64_t sub_group_size = 1000000000;
  std::uint64_t param_persistence_threshold = 100000;
  std::uint64_t model_persistence_threshold = 9223372036854775807ULL;
  std::vector<std::vector<std::uint32_t>> groups;
};

/// The partition DeepSpeed makes for `ds` on `world` ranks: zero_optimization.stage,
/// sub_group_size and the stage 3 persistence thresholds as configured, and round robin only where
/// DeepSpeedZeroOptimizer applies round_robin_gradients (stage 1/2; BF16_Optimizer and stage 0
/// have none, deepspeed_zero.md §2.1). `groups` is left empty (one group of all trainable params).
/// The one translation from a DsConfig: the CLI, scenario runs, the planner and estimate_memory
/// all call it.
PartitionOptions partition_options(const DsConfig& ds, std::uint32_t world);

/// Pure function. Fails (source "partition") on a stage outside 0..3, W == 0, W >
/// kMaxPartitionWorld, an unknown or repeated param id in `groups`, or a size that does not fit in
/// 64 bits; all input problems are reported at once. O(T) time and memory (W only enters
/// arithmetic).
Result<PartitionPlan> plan_partition(const ModelDesc& model, const PartitionOptions& opts);

}  // namespace zerosim
