// The tensor table and the partition layout a built schedule carries (schedule.h TensorInfo,
// Layout): plan_of() gives back the builder's own plan, so owner slices and rank partitions come
// from the same PartitionPlan queries; the table is O(tensors + groups), never per rank.
#include <gtest/gtest.h>

#include "schedule_stage012_testlib.h"
#include "schedule_stage3_test_util.h"
#include "zerosim/schedule_graph.h"

namespace zerosim {
namespace {

TEST(ScheduleTensorTable, Stage12LayoutGivesTheBuildersOwnerSlices) {
  DsConfig ds = testlib::zero_config(2, 40, false);
  ds.zero.round_robin_gradients = true;
  testlib::BuildOptions o = testlib::with_groups({{0, 2, 4}, {1, 3}});
  const auto b = testlib::build(testlib::make_model({10, 7, 2, 13, 5}), ds, 4, o);
  ASSERT_TRUE(b.schedule.ok());
  const Schedule& s = b.s();
  ASSERT_EQ(s.tensors.size(), 5u);
  for (std::uint32_t p = 0; p < 5; ++p) {
    const TensorInfo& t = s.tensors[p];
    EXPECT_EQ(t.name, "p" + std::to_string(p));
    EXPECT_EQ(t.numel, b.model.params[p].numel);
    ASSERT_NE(t.grad, kNone);
    EXPECT_EQ(s.buffers[t.grad].name, "grad:p" + std::to_string(p));
    EXPECT_EQ(t.group, b.plan.param_group[p]);
  }
  EXPECT_TRUE(s.layout.round_robin);
  auto plan = plan_of(s);
  ASSERT_TRUE(plan.ok()) << plan.diagnostics().to_string();
  const PartitionPlan& p = plan.value();
  ASSERT_EQ(p.groups.size(), b.plan.groups.size());
  for (std::size_t g = 0; g < p.groups.size(); ++g) {
    EXPECT_EQ(p.groups[g].flat_order, b.plan.groups[g].flat_order);
    EXPECT_EQ(p.groups[g].flat_offset, b.plan.groups[g].flat_offset);
    for (std::uint32_t q : b.plan.groups[g].params) EXPECT_EQ(p.owners(g, q), b.plan.owners(g, q));
    for (std::uint32_t r = 0; r < 4; ++r) {
      EXPECT_EQ(p.rank_partition(g, r).params_in, b.plan.rank_partition(g, r).params_in);
      EXPECT_EQ(p.rank_partition(g, r).first_offset, b.plan.rank_partition(g, r).first_offset);
    }
  }
  EXPECT_EQ(p.grads_in_partition_runs(), b.plan.grads_in_partition_runs());
}

TEST(ScheduleTensorTable, Stage3LayoutGivesTheSubGroupsAndPersistence) {
  DsConfig ds = s3test::stage3_config();
  ds.zero.sub_group_size = 5;
  ds.zero.param_persistence_threshold = 3;
  const ModelDesc m = s3test::param_model({10, 7, 2}, {2, 1, 0});
  const Schedule s = s3test::build(m, ds, 4);
  const PartitionPlan expected = s3test::stage3_plan(m, ds, 4);
  ASSERT_EQ(s.layout.sub_groups.size(), expected.sub_groups.size());
  for (std::size_t i = 0; i < expected.sub_groups.size(); ++i) {
    EXPECT_EQ(s.layout.sub_groups[i].params, expected.sub_groups[i].params);
    EXPECT_EQ(s.layout.sub_groups[i].partition_numel, expected.sub_groups[i].partition_numel);
    for (std::uint32_t q : expected.sub_groups[i].params) EXPECT_EQ(s.tensors[q].sub_group, i);
  }
  for (std::uint32_t q = 0; q < 3; ++q) {
    EXPECT_EQ(s.tensors[q].persistent, expected.s3[q].persistent) << q;
    ASSERT_NE(s.tensors[q].grad, kNone);
  }
  EXPECT_TRUE(s.tensors[2].persistent);
  auto plan = plan_of(s);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan.value().s3_partition_numel, expected.s3_partition_numel);
}

TEST(ScheduleTensorTable, GrowsWithTensorsNotRanks) {
  const auto small =
      testlib::build(testlib::make_model({100, 70, 20}), testlib::zero_config(2, 64, false), 4);
  const auto large =
      testlib::build(testlib::make_model({100, 70, 20}), testlib::zero_config(2, 64, false), 1024);
  ASSERT_TRUE(small.schedule.ok() && large.schedule.ok());
  EXPECT_EQ(small.s().tensors.size(), 3u);
  EXPECT_EQ(large.s().tensors.size(), 3u);
  EXPECT_EQ(large.s().layout.groups.size(), small.s().layout.groups.size());
  EXPECT_EQ(large.s().comms.size(), 1u);
  EXPECT_EQ(large.s().comms[0], (CommGroup{0, 1024, 1}));
}

TEST(ScheduleTensorTable, LoweringChecksTheLayoutAgainstThePlan) {
  const auto b =
      testlib::build(testlib::make_model({10, 7, 2}), testlib::zero_config(2, 40, false), 4);
  ASSERT_TRUE(b.schedule.ok());
  Schedule s = b.s();
  const Elements pad = b.plan.groups[0].padding;  // 19 elements, to a multiple of 8: 5
  s.layout.groups[0].padding = pad + 2;
  EXPECT_EQ(lower_schedule(s, "t.json").diagnostics().to_string(),
            "t.json: /layout/groups/0/padding: expected " + std::to_string(pad) +
                " (plan_partition of the tensor table and the layout options), got " +
                std::to_string(pad + 2) + "\n");
  s = b.s();
  s.tensors[1].flat_offset = 3;
  EXPECT_EQ(lower_schedule(s, "t.json").diagnostics().to_string(),
            "t.json: /tensors/1/flat: expected 10 (plan_partition of the tensor table and the "
            "layout options), got 3\n");
  s = b.s();
  s.layout.world = 8;
  EXPECT_EQ(lower_schedule(s, "t.json").diagnostics().to_string(),
            "t.json: /layout/world: expected the world size 4 (meta), got 8\n");
}

}  // namespace
}  // namespace zerosim
