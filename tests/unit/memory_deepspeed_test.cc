// DeepSpeed accounting for stage 0, 1, 2 and BF16_Optimizer (deepspeed_zero.md §3): worked examples
// G1, G9, G13, offload variants (§3.3), BF16_Optimizer's full fp32 gradient buffer (§3.4), stage 0
// (§3.5), and the consistency rules of a MemoryReport.
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

const TrainingSettings kTraining{};

MemoryReport deepspeed(const ModelDesc& m, const DsConfig& ds, std::uint32_t w,
                       const OverheadParams& o = kNoOverhead) {
  return estimate_memory(m, plan_for(m, ds.zero.stage, w), ds, cluster_of(w), kTraining,
                         Accounting::DeepSpeed, o);
}

// G13: 1000 params x 1e6 elements.
ModelDesc g13_model() { return sized_model(std::vector<Elements>(1000, 1000000)); }

TEST(MemoryDeepSpeed, G1PersistentBuffers) {
  const ModelDesc m = sized_model({5, 3, 7});
  for (int stage : {1, 2}) {
    auto r = deepspeed(m, default_ds_config(stage, DType::Float16), 4);
    EXPECT_EQ(item(r, "flat LP params (B1)"), 32u) << stage;         // Pal 16 x 2 B
    EXPECT_EQ(item(r, "fp32 master partition (B2)"), 16u) << stage;  // S 4 x 4 B
    EXPECT_EQ(item(r, "optimizer states (B3)"), 32u) << stage;       // 2S x 4 B
    EXPECT_EQ(item(r, "grads_in_partition (T3)", "step"), 16u);      // worst rank 1: 5 + 3 elements
  }
}

TEST(MemoryDeepSpeed, G9IpgBucketsIndependentOfModelSize) {
  const ModelDesc m = sized_model({1});
  DsConfig ds = default_ds_config(2, DType::Float16);
  EXPECT_EQ(item(deepspeed(m, ds, 4), "IPG buckets (T2)"), 1000000000u);
  ds.zero.overlap_comm = true;
  auto r = deepspeed(m, ds, 4);
  EXPECT_EQ(item(r, "IPG buckets (T2)"), 2000000000u);
  EXPECT_EQ(r.peak_phase, "backward");
  ds.zero.contiguous_gradients = false;
  EXPECT_FALSE(has_item(deepspeed(m, ds, 4), "IPG buckets"));
}

TEST(MemoryDeepSpeed, G13PersistentAndStepPeak) {
  const ModelDesc m = g13_model();
  auto r = deepspeed(m, default_ds_config(2, DType::Float16), 8);
  // Persistent per rank: B1 2.0e9 + B2 0.5e9 + B3 1.0e9 = 3.5e9 B.
  EXPECT_EQ(item(r, "flat LP params (B1)"), 2000000000u);
  EXPECT_EQ(item(r, "fp32 master partition (B2)"), 500000000u);
  EXPECT_EQ(item(r, "optimizer states (B3)"), 1000000000u);
  EXPECT_EQ(
      memtest::persistent_layer(r, "params") + memtest::persistent_layer(r, "optimizer_states"),
      3500000000u);
  // step: T3 0.25e9 + T6 0.25e9 + T7 0.5e9 on top: 4.5e9 B.
  EXPECT_EQ(item(r, "flat gradient partition (T6)"), 250000000u);
  EXPECT_EQ(item(r, "MW gradient of the master partition (T7)"), 500000000u);
  EXPECT_EQ(phase_total(r, "step"), 4500000000u);
  // backward: IPG 1.0e9 + T3 0.25e9 + largest autograd grad 2e6 + reduction temporary (T5) 1.0e9.
  EXPECT_EQ(item(r, "IPG buckets (T2)"), 1000000000u);
  EXPECT_EQ(item(r, "grads_in_partition (T3)", "backward"), 250000000u);
  EXPECT_EQ(item(r, "autograd gradient of the largest param (T1)"), 2000000u);
  EXPECT_EQ(item(r, "reduction temporary (T5)"), 1000000000u);
  EXPECT_EQ(phase_total(r, "backward"), 5752000000u);
  EXPECT_EQ(r.peak_phase, "backward");
  EXPECT_EQ(r.total(), 5752000000u);
}

TEST(MemoryDeepSpeed, ItemsAtThePeakAddUpToTheTotal) {
  auto r = deepspeed(g13_model(), default_ds_config(2, DType::Float16), 8, default_overheads());
  Bytes gpu = 0;
  for (const auto& it : r.items)
    if (it.layer != "host") gpu += it.bytes;
  EXPECT_EQ(gpu, r.total());
  EXPECT_EQ(r.overhead, (1ULL << 30) + 308281344u + 5752000000u / 20);  // 5 % fragmentation
  for (const auto& it : r.off_peak_items) EXPECT_EQ(it.phase, "step");
}

TEST(MemoryDeepSpeed, Stage2GradAccumulationDoublesGradsInPartition) {
  DsConfig ds = default_ds_config(2, DType::Float16);
  ds.grad_accum_steps = 4;
  auto r = deepspeed(g13_model(), ds, 8);
  EXPECT_EQ(item(r, "second grads_in_partition (T3, GA > 1"), 250000000u);
  EXPECT_EQ(phase_total(r, "backward"), 5752000000u + 250000000u);
}

TEST(MemoryDeepSpeed, Stage1KeepsTheFullGradient) {
  auto r = deepspeed(g13_model(), default_ds_config(1, DType::Float16), 8);
  EXPECT_EQ(item(r, "full LP gradients p.grad (T1"), 2000000000u);  // P x 2 B, like DDP
  EXPECT_EQ(item(r, "grads_in_partition (T3)", "step"), 250000000u);
  EXPECT_EQ(phase_total(r, "step"), 4500000000u);
  // backward: 3.5e9 + full gradient 2e9 + IPG 1e9 + T5 1e9.
  EXPECT_EQ(phase_total(r, "backward"), 7500000000u);
}

TEST(MemoryDeepSpeed, OptimizerOffloadMovesB2B3ToHost) {
  DsConfig ds = default_ds_config(2, DType::Float16);
  ds.zero.offload_optimizer.device = OffloadDevice::Cpu;
  auto r = deepspeed(g13_model(), ds, 8);
  EXPECT_EQ(r.optimizer_states, 0u);
  EXPECT_EQ(item(r, "fp32 master partition (B2)"), 500000000u);
  EXPECT_EQ(item(r, "optimizer states (B3)"), 1000000000u);
  EXPECT_EQ(item(r, "fp32 gradient partition (B4)"), 500000000u);
  EXPECT_EQ(item(r, "LP staging for the copy back (B5)"), 250000000u);
  EXPECT_EQ(item(r, "pinned gradient staging (B7)"), 2000000u);
  EXPECT_FALSE(has_item(r, "CPU gradient accumulators (B8)"));  // GA = 1
  EXPECT_EQ(r.host_bytes, 500000000u + 1000000000u + 500000000u + 250000000u + 2000000u);
  EXPECT_EQ(item(r, "GPU gradient staging (B6)"), 2000000u);
  EXPECT_FALSE(has_item(r, "grads_in_partition"));  // no T3 on the GPU (§3.3)
  for (const auto& it : r.items)
    if (it.name.rfind("fp32 master", 0) == 0) {
      EXPECT_EQ(it.layer, "host");
    }
  ds.grad_accum_steps = 2;
  EXPECT_EQ(item(deepspeed(g13_model(), ds, 8), "CPU gradient accumulators (B8)"), 250000000u);
}

TEST(MemoryDeepSpeed, Bf16OptimizerKeepsAFullFp32GradientBuffer) {
  DsConfig ds = default_ds_config(1, DType::BFloat16);
  ds.grad_accum_dtype = DType::Float32;
  ASSERT_EQ(ds.optimizer_path(), OptimizerPath::Bf16Optimizer);
  const ModelDesc m = sized_model({5, 3, 7});
  auto r = deepspeed(m, ds, 4);
  EXPECT_EQ(item(r, "flat bf16 params (BF16_Optimizer"), 32u);
  EXPECT_EQ(item(r, "fp32 master partition (BF16_Optimizer)"), 16u);
  EXPECT_EQ(item(r, "optimizer states (BF16_Optimizer)"), 32u);
  EXPECT_EQ(item(r, "fp32 gradient buffer, full and not partitioned"), 64u);  // Pal 16 x 4 B
  EXPECT_EQ(item(r, "bf16 autograd gradients", "step"), 30u);
  EXPECT_FALSE(has_item(r, "IPG buckets"));  // no hooks, no buckets
  // all-reduce: the fp32 buffer goes through a bf16 copy (CD = bf16).
  EXPECT_EQ(item(r, "engine all-reduce CD copy"), 32u);
  EXPECT_EQ(r.grads, 64u + 30u);
}

TEST(MemoryDeepSpeed, Stage0Fp16OptimizerAndFp32) {
  const ModelDesc m = sized_model({5, 3, 7});
  auto r = deepspeed(m, default_ds_config(0, DType::Float16), 4);
  EXPECT_EQ(item(r, "flat LP params (stage 0"), 30u);  // P, no 2W padding
  EXPECT_EQ(item(r, "fp32 master params (stage 0)"), 60u);
  EXPECT_EQ(item(r, "optimizer states (stage 0"), 120u);  // 2P fp32, allocated at init
  EXPECT_EQ(item(r, "flat fp32 gradient copy at step"), 60u);
  EXPECT_EQ(phase_total(r, "step"), 30u + 60u + 120u + 30u + 60u);
  EXPECT_EQ(phase_total(r, "allreduce"), 30u + 60u + 120u + 30u + 30u);
  EXPECT_EQ(r.peak_phase, "step");
  EXPECT_EQ(r.total(), 300u);
  ASSERT_EQ(r.phases.size(), 3u);  // in time order
  EXPECT_EQ(r.phases[0].name, "backward");
  EXPECT_EQ(r.phases[0].bytes, 240u);
  EXPECT_EQ(r.phases[1].name, "allreduce");
  EXPECT_EQ(r.phases[2].name, "step");
  auto f = deepspeed(m, default_ds_config(0, DType::Float32), 4);
  EXPECT_EQ(item(f, "params (fp32, stage 0)"), 60u);
  EXPECT_EQ(item(f, "optimizer states (stage 0)"), 120u);
  EXPECT_EQ(f.total(), 60u + 120u + 60u + 60u);  // + grads + all-reduce flatten copy
}

TEST(MemoryDeepSpeed, MismatchedPlanIsReplanned) {
  const ModelDesc m = sized_model({5, 3, 7});
  const PartitionPlan wrong = plan_for(m, 3, 2);
  auto r = estimate_memory(m, wrong, default_ds_config(2, DType::Float16), cluster_of(4), kTraining,
                           Accounting::DeepSpeed, kNoOverhead);
  EXPECT_EQ(item(r, "flat LP params (B1)"), 32u);
  bool noted = false;
  for (const auto& n : r.notes)
    noted = noted || n == "the partition plan passed in was for stage 3, world 2; re-planned for "
                          "stage 2, world 4";
  EXPECT_TRUE(noted);
}

TEST(MemoryDeepSpeed, OffloadNamesAndDefaults) {
  EXPECT_EQ(offload_name(OffloadVariant::None), "none");
  EXPECT_EQ(offload_name(OffloadVariant::OptimizerCpu), "optimizer");
  EXPECT_EQ(offload_name(OffloadVariant::OptimizerAndParamsCpu), "optimizer+params");
  OverheadParams o = default_overheads();
  EXPECT_EQ(o.cuda_context, 1073741824u);
  EXPECT_EQ(o.nccl_buffers, 2u * 16u * 9633792u);
  EXPECT_EQ(o.fragmentation, 0.05);
}

}  // namespace
}  // namespace zerosim
