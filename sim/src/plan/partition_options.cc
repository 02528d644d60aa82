// partition_options (partition_plan.h): the one translation from a DsConfig to PartitionOptions.
#include "zerosim/ds_config.h"
#include "zerosim/partition_plan.h"

namespace zerosim {

PartitionOptions partition_options(const DsConfig& ds, std::uint32_t world) {
  PartitionOptions o;
  o.stage = ds.zero.stage;
  o.world = world;
  // round_robin_gradients is a DeepSpeedZeroOptimizer option; BF16_Optimizer has no round robin.
  o.round_robin =
      ds.zero.round_robin_gradients && ds.optimizer_path() == OptimizerPath::ZeroStage1And2;
  o.sub_group_size = ds.zero.sub_group_size;
  o.param_persistence_threshold = ds.zero.param_persistence_threshold;
  o.model_persistence_threshold = ds.zero.model_persistence_threshold;
  return o;
}

}  // namespace zerosim
