// Stage 3 schedule of a real zoo model (GPT-2 small: tied wte used by the embedding and the head,
// an embedding whose post-backward hook never fires, persistent biases and norms) built through
// build_schedule, W = 8, two steps: the schedule validates, the second iteration gathers every
// non-persistent param exactly once (default reuse distance keeps them from forward to backward),
// every gradient is reduce-scattered once, and the post-step gathers cover the persistent params.
#include <gtest/gtest.h>

#include "schedule_stage3_test_util.h"
#include "zerosim/model_loader.h"
#include "zerosim/schedule_builder.h"

namespace zerosim {
namespace {

using namespace s3test;  // NOLINT

TEST(ScheduleStage3Zoo, Gpt2SmallTwoSteps) {
  auto loaded = load_zoo_model("gpt2-small");
  ASSERT_TRUE(loaded.ok()) << loaded.diagnostics().to_string();
  const ModelDesc& m = loaded.value();
  const DsConfig ds = stage3_config();
  const std::uint32_t w = 8;
  const PartitionPlan plan = stage3_plan(m, ds, w);
  ScheduleInput in;
  in.model = &m;
  in.plan = &plan;
  in.ds = &ds;
  in.cluster.nodes = 1;
  in.cluster.gpus_per_node = w;
  in.training.seq_len = 1024;
  in.steps = 2;
  auto r = build_schedule(in);
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  const Schedule& s = r.value();

  Elements c_all = 0, c_nonpersistent = 0, c_persistent = 0;
  std::size_t persistent = 0;
  for (std::uint32_t p = 0; p < m.params.size(); ++p) {
    c_all += plan.s3[p].partition;
    if (plan.s3[p].persistent) {
      c_persistent += plan.s3[p].partition;
      ++persistent;
    } else {
      c_nonpersistent += plan.s3[p].partition;
    }
  }
  ASSERT_GT(persistent, 0u);
  Elements gathered_step1 = 0, rs_in = 0, post_in = 0;
  std::size_t post = 0, grads = 0;
  for (const Op& o : s.ops) {
    if (o.kind == OpKind::GradReady) ++grads;
    if (o.kind != OpKind::Collective) continue;
    if (o.collective == CollectiveKind::AllGather && o.step == 1 &&
        (o.phase == Phase::Forward || o.phase == Phase::Backward))
      gathered_step1 += o.numel;
    if (o.collective == CollectiveKind::ReduceScatter) rs_in += o.numel;
    if (o.collective == CollectiveKind::AllGather && o.phase == Phase::PostStep && o.step == 1) {
      post_in += o.numel;
      ++post;
    }
  }
  EXPECT_EQ(gathered_step1, c_nonpersistent);
  EXPECT_EQ(rs_in, 2 * w * c_all);
  EXPECT_EQ(grads, 2 * m.params.size());
  EXPECT_EQ(post, persistent);
  EXPECT_EQ(post_in, c_persistent);
}

}  // namespace
}  // namespace zerosim
