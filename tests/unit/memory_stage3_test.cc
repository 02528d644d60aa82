// DeepSpeed accounting for stage 3 (deepspeed_zero.md §7.1, §7.8): G14 sizes, persistent gathered
// params, sub-group step temporaries, optimizer offload (with ratio) and parameter offload.
#include <gtest/gtest.h>

#include "memory_test_util.h"
#include "zerosim/memory_model.h"

namespace zerosim {
namespace {

using memtest::cluster_of;
using memtest::has_item;
using memtest::item;
using memtest::kNoOverhead;
using memtest::phase_total;
using memtest::plan_for;
using memtest::sized_model;

MemoryReport stage3(const ModelDesc& m, const DsConfig& ds, std::uint32_t w) {
  return estimate_memory(m, plan_for(m, 3, w, ds.zero.sub_group_size), ds, cluster_of(w),
                         TrainingSettings{}, Accounting::DeepSpeed, kNoOverhead);
}

DsConfig g14_config() {
  DsConfig ds = default_ds_config(3, DType::Float16);
  ds.zero.sub_group_size = 5;
  return ds;
}

TEST(MemoryStage3, G14Sizes) {
  // params [10, 7, 2], W = 4: c = 3, 2, 1, Σc = 6 per rank.
  auto r = stage3(sized_model({10, 7, 2}), g14_config(), 4);
  EXPECT_EQ(item(r, "LP partitions (lp_param_buffer)"), 12u);                // 6 x 2 B
  EXPECT_EQ(item(r, "fp32 master (sub-groups on GPU)"), 24u);                // 6 x 4 B
  EXPECT_EQ(item(r, "optimizer states (sub-groups on GPU)"), 48u);           // 12 x 4 B
  EXPECT_EQ(item(r, "grad partitions (grad_partitions_flat_buffer)"), 12u);  // 6 x GA (fp16)
  EXPECT_EQ(item(r, "IPG buffer (stage 3"), 1000000000u);                    // R x CD, from init
  // All three params are persistent (n <= 1e5): gathered copies of W·c = 12 + 8 + 4 elements.
  EXPECT_EQ(item(r, "persistent params, gathered"), 48u);
  EXPECT_FALSE(has_item(r, "gathered params (approx."));  // nothing non-persistent to gather
  // Sub-groups {p10, p7} (Σc 5) and {p2}: step temporaries for the larger one, GA then MW.
  EXPECT_EQ(item(r, "step: flat gradient of the largest GPU sub-group"), 10u);
  EXPECT_EQ(item(r, "step: MW gradient of the largest GPU sub-group"), 20u);
  EXPECT_EQ(item(r, "autograd gradient of the largest param"), 20u);
  EXPECT_EQ(item(r, "reduce-scatter staging"), 48u);  // min(R, W·Σc = 24) x 2 B
  const Bytes persistent = 12 + 24 + 48 + 12 + 1000000000u;
  EXPECT_EQ(phase_total(r, "step"), persistent + 30);
  EXPECT_EQ(phase_total(r, "backward"), persistent + 48 + 20 + 48);
  EXPECT_EQ(r.peak_phase, "backward");
}

TEST(MemoryStage3, GatheredParamsFollowTheReuseWindow) {
  // 4 non-persistent params of 1e6 (G18's trace): the default reuse distance keeps them all.
  const ModelDesc m = sized_model({1000000, 1000000, 1000000, 1000000});
  DsConfig ds = default_ds_config(3, DType::Float16);
  auto r = stage3(m, ds, 4);
  EXPECT_EQ(item(r, "gathered params (approx."), 8000000u);     // min(4e6, 1e9 + 1e6) capped at 4e6
  EXPECT_EQ(item(r, "prefetch all-gather staging"), 8000000u);  // min(4e6, 5e7)
  ds.zero.max_reuse_distance = 0;
  ds.zero.prefetch_bucket_size = 1500000;
  auto small = stage3(m, ds, 4);
  EXPECT_EQ(item(small, "gathered params (approx."), 2000000u);     // largest module: 1e6 elements
  EXPECT_EQ(item(small, "prefetch all-gather staging"), 3000000u);  // 1.5e6 elements
}

TEST(MemoryStage3, OptimizerOffloadMovesMasterStatesAndGradsToHost) {
  DsConfig ds = g14_config();
  ds.zero.offload_optimizer.device = OffloadDevice::Cpu;
  auto r = stage3(sized_model({10, 7, 2}), ds, 4);
  EXPECT_EQ(r.optimizer_states, 0u);
  EXPECT_EQ(r.grads, 0u);
  EXPECT_EQ(item(r, "fp32 master (offloaded sub-groups)"), 24u);
  EXPECT_EQ(item(r, "optimizer states (offloaded sub-groups)"), 48u);
  EXPECT_EQ(item(r, "fp32 gradient buffers (offloaded sub-groups)"), 24u);
  EXPECT_EQ(item(r, "grad partitions"), 12u);
  EXPECT_EQ(r.host_bytes, 24u + 48u + 24u + 12u);
  EXPECT_EQ(item(r, "LP partitions"), 12u);  // parameters stay on the GPU
  EXPECT_EQ(r.params, 12u);
  EXPECT_FALSE(has_item(r, "step: flat gradient"));  // the step runs on the CPU
}

TEST(MemoryStage3, PartialOffloadRatioKeepsLeadingSubGroupsOnGpu) {
  DsConfig ds = g14_config();
  ds.zero.offload_optimizer.device = OffloadDevice::Cpu;
  ds.zero.offload_optimizer.ratio = 0.5;  // floor((1 - 0.5) x 2) = 1 sub-group stays on the GPU
  auto r = stage3(sized_model({10, 7, 2}), ds, 4);
  EXPECT_EQ(item(r, "fp32 master (sub-groups on GPU)"), 20u);    // Σc 5
  EXPECT_EQ(item(r, "fp32 master (offloaded sub-groups)"), 4u);  // Σc 1
  EXPECT_EQ(item(r, "step: flat gradient of the largest GPU sub-group"), 10u);
}

TEST(MemoryStage3, ParameterOffloadMovesLpPartitionsToHost) {
  DsConfig ds = g14_config();
  ds.zero.offload_optimizer.device = OffloadDevice::Cpu;
  ds.zero.offload_param.device = OffloadDevice::Cpu;
  auto r = stage3(sized_model({10, 7, 2}), ds, 4);
  EXPECT_EQ(r.params, 0u);
  EXPECT_EQ(item(r, "LP partitions"), 12u);
  EXPECT_EQ(r.host_bytes, 24u + 48u + 24u + 12u + 12u);
  for (const auto& it : r.items)
    if (it.name.rfind("LP partitions", 0) == 0) {
      EXPECT_EQ(it.layer, "host");
    }
}

TEST(MemoryStage3, FrozenParamsArePartitionedButNotOptimized) {
  ModelDesc m = sized_model({10, 7, 2});
  m.params[0].trainable = false;
  auto r = stage3(m, g14_config(), 4);
  EXPECT_EQ(item(r, "LP partitions (lp_param_buffer)"), 6u);  // c = 2 + 1
  EXPECT_EQ(item(r, "frozen params' partitions"), 6u);        // c = 3
  EXPECT_EQ(item(r, "fp32 master (sub-groups on GPU)"), 12u);
}

}  // namespace
}  // namespace zerosim
