// PartitionPlan: how DeepSpeed flattens, aligns and partitions parameters across W data-parallel
// ranks (shared/docs/deepspeed_zero.md §2).
//
// Stage 1/2 (and BF16_Optimizer): per param group one flat buffer, padded to a multiple of 2W
// elements, split into W equal partitions of S = Pal/W elements; params may straddle partitions;
// optional round-robin reorder. Stage 3: every param on its own, partition numel ceil(n/W).
//
// Scale: nothing here is O(ranks x tensors). Per-rank views are computed on demand by binary search
// over flat offsets, so a plan for 65536 ranks costs what a plan for 8 does.
#pragma once

#include <cstdint>
#include <vector>

#include "zerosim/diagnostic.h"
#include "zerosim/model_desc.h"
#include "zerosim/units.h"

namespace zerosim {

/// Part of param p owned by partition `rank`: elements [offset, offset + length) of p.
struct OwnerSlice {
  std::uint32_t rank = 0;
  Elements offset = 0;  ///< offset inside the param where this owner's slice begins
  Elements length = 0;
  bool operator==(const OwnerSlice&) const = default;
};

/// Stage 1/2 layout of one param group.
struct FlatGroup {
  std::vector<std::uint32_t> params;       ///< model param ids, original group order (trainable only)
  std::vector<std::uint32_t> flat_order;   ///< params in flat-buffer order (round robin applied)
  std::vector<Elements> flat_offset;       ///< start of flat_order[i] in the flat buffer
  Elements numel = 0;                      ///< P_g
  Elements padding = 0;                    ///< pad_g = (2W - P_g mod 2W) mod 2W
  Elements aligned = 0;                    ///< Pal_g = P_g + pad_g
  Elements partition = 0;                  ///< S_g = Pal_g / W
};

/// What partition `rank` of a group holds (deepspeed_zero.md §2.1 steps 7–10).
struct RankPartition {
  std::uint32_t rank = 0;
  std::vector<std::uint32_t> params_in;    ///< model param ids touching the rank's range, flat order
  Elements first_offset = 0;               ///< offset inside params_in[0] where the range begins
  Elements padding = 0;                    ///< padding elements inside the range
  Elements grads_in_partition = 0;         ///< Σ full numel of params_in (straddlers counted whole)
};

/// Stage 3 partitioning of one param (§2.2).
struct Stage3Param {
  Elements numel = 0;       ///< n
  Elements partition = 0;   ///< c = ceil(n / W)
  Elements padding = 0;     ///< W*c - n
  bool persistent = false;  ///< stays gathered (persistence thresholds, §2.2)
};

/// Stage 3 sub-group of a param group (stage3.py:1160): consecutive params, closed once Σc >= sub_group_size.
struct SubGroup {
  std::vector<std::uint32_t> params;  ///< model param ids
  Elements partition_numel = 0;       ///< Σ c_i
};

struct PartitionPlan {
  int stage = 0;
  std::uint32_t world = 1;  ///< W
  bool round_robin = false;

  // Stage 1/2 (also filled for stage 0 and BF16_Optimizer, where it is the flat layout).
  std::vector<FlatGroup> groups;

  // Stage 3.
  std::vector<Stage3Param> s3;        ///< indexed by model param id
  std::vector<SubGroup> sub_groups;   ///< in order
  Elements s3_partition_numel = 0;    ///< Σ_all c_i (lp_param_buffer / grad partitions per rank)
  Elements s3_persistent_numel = 0;   ///< Σ n over persistent params
  Elements s3_persistent_gathered = 0;  ///< Σ W*c over persistent params (resident gathered copies)

  /// Stage 1/2: the view of partition `rank` of group g. O(log params + params touched).
  RankPartition rank_partition(std::size_t g, std::uint32_t rank) const;
  /// Stage 1/2: owners of a param (model id) in offset order, slices as in §2.1 step 8.
  std::vector<OwnerSlice> owners(std::size_t g, std::uint32_t param_id) const;
  /// Stage 1/2: Σ over groups of grads_in_partition(rank) — the one shared T3 buffer.
  Elements grads_in_partition(std::uint32_t rank) const;
  /// Stage 1/2: the largest grads_in_partition over all ranks (evaluated without visiting every rank
  /// when W is large: only ranks whose range starts inside a param boundary class differ).
  Elements max_grads_in_partition() const;
  /// Stage 1/2: Σ_g S_g (elements each rank owns, padding included).
  Elements partition_numel() const;
  /// Stage 1/2: Σ_g Pal_g.
  Elements aligned_numel() const;
};

/// Partitions a model. `groups` lists param ids per optimizer param group (empty = one group of all
/// trainable params in declaration order). Fails on W == 0, an unknown param id or duplicates.
/// persistence thresholds and sub_group_size only matter for stage 3.
struct PartitionOptions {
  int stage = 0;
  std::uint32_t world = 1;
  bool round_robin = false;
  std::uint64_t sub_group_size = 1000000000;
  std::uint64_t param_persistence_threshold = 100000;
  std::uint64_t model_persistence_threshold = 9223372036854775807ULL;
  std::vector<std::vector<std::uint32_t>> groups;
};
Result<PartitionPlan> plan_partition(const ModelDesc& model, const PartitionOptions& opts);

}  // namespace zerosim
