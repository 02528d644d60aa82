// What the CUDA backend plans without a GPU (cuda_plan.h, cuda_grad_key.h): single-GPU mode's
// stand-in for every collective kind, the GEMMs of a compute op, and that the kernels' gradient
// and weight formulas are the host backend's.
#include "zerosim/cuda_plan.h"

#include <gtest/gtest.h>

#include "host_data.h"
#include "training_math.h"
#include "zerosim/cuda_grad_key.h"

namespace zerosim::cuda {
namespace {

TEST(CudaSingleGpu, AllReduceTouchesInPlaceAndCopiesOutOfPlace) {
  StandIn s = single_gpu_stand_in(CollectiveKind::AllReduce, 1000, 1000, 4, 2, -1, true);
  EXPECT_EQ(s.form, StandInForm::Touch);
  EXPECT_EQ(s.read, 1000u);
  EXPECT_EQ(s.written, 1000u);
  s = single_gpu_stand_in(CollectiveKind::AllReduce, 1000, 1000, 4, 2, -1, false);
  EXPECT_EQ(s.form, StandInForm::Copy);
  EXPECT_EQ(s.written, 1000u);
}

TEST(CudaSingleGpu, AllGatherWritesTheWholeGatheredOutput) {
  // 3 ranks x 7 elements: rank 1 reads its 7 and fills all 21 (its own slot at 7).
  const StandIn s = single_gpu_stand_in(CollectiveKind::AllGather, 7, 21, 3, 1, -1, false);
  EXPECT_EQ(s.form, StandInForm::Replicate);
  EXPECT_EQ(s.read, 7u);
  EXPECT_EQ(s.written, 21u);
  EXPECT_EQ(s.dst_offset, 7u);
}

TEST(CudaSingleGpu, ReduceScatterReadsTheWholeInput) {
  const StandIn s = single_gpu_stand_in(CollectiveKind::ReduceScatter, 40, 10, 4, 3, -1, false);
  EXPECT_EQ(s.form, StandInForm::LocalSum);
  EXPECT_EQ(s.read, 40u);
  EXPECT_EQ(s.written, 10u);
}

TEST(CudaSingleGpu, ReduceWritesOnlyOnTheRoot) {
  const StandIn root = single_gpu_stand_in(CollectiveKind::Reduce, 5, 5, 4, 2, 2, false);
  EXPECT_EQ(root.form, StandInForm::Copy);
  EXPECT_EQ(root.written, 5u);
  const StandIn other = single_gpu_stand_in(CollectiveKind::Reduce, 5, 5, 4, 1, 2, false);
  EXPECT_EQ(other.form, StandInForm::Nothing);
  EXPECT_EQ(other.written, 0u);
  // A broadcast writes on every rank (the source keeps its data).
  EXPECT_EQ(single_gpu_stand_in(CollectiveKind::Broadcast, 5, 5, 4, 1, 0, true).form,
            StandInForm::Touch);
  EXPECT_EQ(stand_in_form_name(StandInForm::LocalSum), "local_sum");
}

TEST(CudaGemmPlan, FlopsAddUpAtTheModelsShape) {
  // GPT-2 small-like: hidden 768, 4096 tokens; an op of 12 x (2 x 4096 x 768 x 768) FLOPs is
  // 9216 columns: 3 GEMMs of width 3072.
  const double one_column = 2.0 * 4096 * 768;
  const auto plan = plan_gemms(one_column * 9216, 768, 4096);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].m, 4096u);
  EXPECT_EQ(plan[0].k, 768u);
  EXPECT_EQ(plan[0].n, 3072u);
  EXPECT_EQ(plan[0].count, 3u);
  // A remainder becomes one narrower GEMM; the total is within one column.
  const double flops = one_column * 5000.4;
  const auto p2 = plan_gemms(flops, 768, 4096);
  ASSERT_EQ(p2.size(), 2u);
  double total = 0;
  for (const Gemm& g : p2) total += g.flops();
  EXPECT_NEAR(total, flops, one_column);
  EXPECT_EQ(p2[1].n, 5000u - 3072u);
  // Workspace: the largest A, B and C in 16-bit elements.
  EXPECT_EQ(gemm_workspace_bytes(p2), 2u * (4096u * 768u + 768u * 3072u + 4096u * 3072u));
}

TEST(CudaGemmPlan, NoShapeOrTinyOpsUseTheBusyKernel) {
  EXPECT_TRUE(plan_gemms(1e12, 0, 4096).empty());
  EXPECT_TRUE(plan_gemms(1e12, 768, 0).empty());
  EXPECT_TRUE(plan_gemms(100, 768, 4096).empty());
  EXPECT_TRUE(plan_gemms(0, 768, 4096).empty());
}

TEST(CudaGradKey, KernelFormulasAreTheHostBackends) {
  for (std::uint64_t seed : {1ull, 42ull})
    for (std::uint32_t rank : {0u, 3u})
      for (Elements i : {0ull, 1ull, 12345ull, 1ull << 33}) {
        EXPECT_EQ(grad_at(grad_key(seed, rank, 2, 1, 17), i),
                  exec::synthetic_grad(seed, rank, 2, 1, 17, i));
        EXPECT_EQ(0.25f * grad_at(weight_key(seed, rank, 5), i),
                  exec::initial_weight(seed, rank, 5, i));
      }
}

}  // namespace
}  // namespace zerosim::cuda
