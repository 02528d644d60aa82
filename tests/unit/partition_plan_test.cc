// PartitionPlan against the layout worked examples of deepspeed_zero.md §9 (G1, G6–G11, G13, G14,
// G19), plus the zero-size-param, frozen-param and sub-group edge rules of §2.1, §2.2 and §7.1.
#include "zerosim/partition_plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "zerosim/ds_config.h"
#include "zerosim/model_desc.h"

namespace zerosim {
namespace {

ModelDesc make_model(const std::vector<Elements>& sizes) {
  ModelDesc m;
  m.name = "test";
  for (std::size_t i = 0; i < sizes.size(); ++i)
    m.params.push_back({"p" + std::to_string(i), {sizes[i]}, sizes[i], true});
  return m;
}

PartitionPlan plan_ok(const ModelDesc& m, const PartitionOptions& o) {
  auto r = plan_partition(m, o);
  EXPECT_TRUE(r.ok()) << r.diagnostics().to_string();
  return r.ok() ? r.value() : PartitionPlan{};
}

PartitionOptions opts(int stage, std::uint32_t world) {
  PartitionOptions o;
  o.stage = stage;
  o.world = world;
  return o;
}

using Ids = std::vector<std::uint32_t>;
using Owners = std::vector<OwnerSlice>;

void expect_rank(const PartitionPlan& p, std::size_t g, std::uint32_t rank, const Ids& params_in,
                 Elements first_offset, Elements padding, Elements gip) {
  SCOPED_TRACE("group " + std::to_string(g) + " rank " + std::to_string(rank));
  const RankPartition rp = p.rank_partition(g, rank);
  EXPECT_EQ(rp.rank, rank);
  EXPECT_EQ(rp.params_in, params_in);
  EXPECT_EQ(rp.first_offset, first_offset);
  EXPECT_EQ(rp.padding, padding);
  EXPECT_EQ(rp.grads_in_partition, gip);
}

TEST(PartitionPlan, G1LayoutSizes5_3_7World4) {
  const auto p = plan_ok(make_model({5, 3, 7}), opts(2, 4));
  ASSERT_EQ(p.groups.size(), 1u);
  const FlatGroup& g = p.groups[0];
  EXPECT_EQ(g.numel, 15u);
  EXPECT_EQ(g.padding, 1u);
  EXPECT_EQ(g.aligned, 16u);
  EXPECT_EQ(g.partition, 4u);
  EXPECT_EQ(g.flat_order, (Ids{0, 1, 2}));
  EXPECT_EQ(g.flat_offset, (std::vector<Elements>{0, 5, 8}));
  expect_rank(p, 0, 0, {0}, 0, 0, 5);
  expect_rank(p, 0, 1, {0, 1}, 4, 0, 8);
  expect_rank(p, 0, 2, {2}, 0, 0, 7);
  expect_rank(p, 0, 3, {2}, 4, 1, 7);
  EXPECT_EQ(p.owners(0, 0), (Owners{{0, 0, 4}, {1, 4, 1}}));
  EXPECT_EQ(p.owners(0, 1), (Owners{{1, 0, 3}}));
  EXPECT_EQ(p.owners(0, 2), (Owners{{2, 0, 4}, {3, 4, 3}}));
  EXPECT_EQ(p.grads_in_partition(0), 5u);
  EXPECT_EQ(p.grads_in_partition(1), 8u);
  EXPECT_EQ(p.grads_in_partition(2), 7u);
  EXPECT_EQ(p.grads_in_partition(3), 7u);
  EXPECT_EQ(p.grads_in_partition_runs(), (std::vector<RankRun>{{0, 5}, {1, 8}, {2, 7}}));
  EXPECT_EQ(p.max_grads_in_partition(), 8u);
  EXPECT_EQ(p.partition_numel(), 4u);
  EXPECT_EQ(p.aligned_numel(), 16u);
  EXPECT_TRUE(p.s3.empty());
}

TEST(PartitionPlan, G6ExtraLargeSingleParam) {
  const auto p = plan_ok(make_model({10}), opts(2, 2));
  EXPECT_EQ(p.groups[0].padding, 2u);
  EXPECT_EQ(p.groups[0].aligned, 12u);
  EXPECT_EQ(p.groups[0].partition, 6u);
  expect_rank(p, 0, 0, {0}, 0, 0, 10);
  expect_rank(p, 0, 1, {0}, 6, 2, 10);
  EXPECT_EQ(p.owners(0, 0), (Owners{{0, 0, 6}, {1, 6, 4}}));
  EXPECT_EQ(p.max_grads_in_partition(), 10u);
}

TEST(PartitionPlan, G7ExtraLargeParamInTheMiddle) {
  const auto p = plan_ok(make_model({3, 10, 2}), opts(2, 2));
  EXPECT_EQ(p.groups[0].aligned, 16u);
  EXPECT_EQ(p.groups[0].partition, 8u);
  EXPECT_EQ(p.groups[0].flat_offset, (std::vector<Elements>{0, 3, 13}));
  expect_rank(p, 0, 0, {0, 1}, 0, 0, 13);
  expect_rank(p, 0, 1, {1, 2}, 5, 1, 12);
  EXPECT_EQ(p.owners(0, 0), (Owners{{0, 0, 3}}));
  EXPECT_EQ(p.owners(0, 1), (Owners{{0, 0, 5}, {1, 5, 5}}));
  EXPECT_EQ(p.owners(0, 2), (Owners{{1, 0, 2}}));
  EXPECT_EQ(p.max_grads_in_partition(), 13u);
}

TEST(PartitionPlan, G8OneParamSpanningThreePartitionsRank3AllPadding) {
  const auto p = plan_ok(make_model({10}), opts(2, 4));
  EXPECT_EQ(p.groups[0].aligned, 16u);
  EXPECT_EQ(p.groups[0].partition, 4u);
  expect_rank(p, 0, 0, {0}, 0, 0, 10);
  expect_rank(p, 0, 1, {0}, 4, 0, 10);
  expect_rank(p, 0, 2, {0}, 8, 2, 10);
  expect_rank(p, 0, 3, {}, 0, 4, 0);
  EXPECT_EQ(p.owners(0, 0), (Owners{{0, 0, 4}, {1, 4, 4}, {2, 8, 2}}));
  EXPECT_EQ(p.grads_in_partition_runs(), (std::vector<RankRun>{{0, 10}, {3, 0}}));
  EXPECT_EQ(p.max_grads_in_partition(), 10u);
}

TEST(PartitionPlan, G9TinyModel) {
  const auto p = plan_ok(make_model({1}), opts(2, 4));
  EXPECT_EQ(p.groups[0].aligned, 8u);
  EXPECT_EQ(p.groups[0].partition, 2u);
  expect_rank(p, 0, 0, {0}, 0, 1, 1);
  for (std::uint32_t r = 1; r < 4; ++r) expect_rank(p, 0, r, {}, 0, 2, 0);
  EXPECT_EQ(p.owners(0, 0), (Owners{{0, 0, 1}}));
}

TEST(PartitionPlan, G10RoundRobin) {
  auto o = opts(2, 2);
  o.round_robin = true;
  const auto p = plan_ok(make_model({4, 4, 4, 4, 4}), o);
  EXPECT_TRUE(p.round_robin);
  const FlatGroup& g = p.groups[0];
  EXPECT_EQ(g.params, (Ids{0, 1, 2, 3, 4}));
  EXPECT_EQ(g.flat_order, (Ids{0, 2, 4, 1, 3}));
  EXPECT_EQ(g.flat_offset, (std::vector<Elements>{0, 4, 8, 12, 16}));
  EXPECT_EQ(g.padding, 0u);
  EXPECT_EQ(g.aligned, 20u);
  EXPECT_EQ(g.partition, 10u);
  expect_rank(p, 0, 0, {0, 2, 4}, 0, 0, 12);
  expect_rank(p, 0, 1, {4, 1, 3}, 2, 0, 12);
  EXPECT_EQ(p.owners(0, 4), (Owners{{0, 0, 2}, {1, 2, 2}}));
  EXPECT_EQ(p.owners(0, 1), (Owners{{1, 0, 4}}));
}

TEST(PartitionPlan, G10WithoutRoundRobin) {
  const auto p = plan_ok(make_model({4, 4, 4, 4, 4}), opts(2, 2));
  EXPECT_FALSE(p.round_robin);
  EXPECT_EQ(p.groups[0].flat_order, (Ids{0, 1, 2, 3, 4}));
  expect_rank(p, 0, 0, {0, 1, 2}, 0, 0, 12);
  expect_rank(p, 0, 1, {2, 3, 4}, 2, 0, 12);
}

TEST(PartitionPlan, RoundRobinOnlyForStages1And2) {
  auto o = opts(1, 2);
  o.round_robin = true;
  EXPECT_EQ(plan_ok(make_model({4, 4, 4}), o).groups[0].flat_order, (Ids{0, 2, 1}));
  o.stage = 0;
  const auto p0 = plan_ok(make_model({4, 4, 4}), o);
  EXPECT_FALSE(p0.round_robin);
  EXPECT_EQ(p0.groups[0].flat_order, (Ids{0, 1, 2}));
}

// partition_options: the one DsConfig -> PartitionOptions translation. Every partition field comes
// from zero_optimization; round robin only where DeepSpeedZeroOptimizer runs (BF16_Optimizer,
// stage 0 and stage 3 have none).
TEST(PartitionPlan, OptionsFromDsConfig) {
  DsConfig ds = default_ds_config(2, DType::Float16);
  ds.zero.round_robin_gradients = true;
  ds.zero.sub_group_size = 1234;
  ds.zero.param_persistence_threshold = 56;
  ds.zero.model_persistence_threshold = 789;
  PartitionOptions o = partition_options(ds, 16);
  EXPECT_EQ(o.stage, 2);
  EXPECT_EQ(o.world, 16u);
  EXPECT_TRUE(o.round_robin);
  EXPECT_EQ(o.sub_group_size, 1234u);
  EXPECT_EQ(o.param_persistence_threshold, 56u);
  EXPECT_EQ(o.model_persistence_threshold, 789u);
  EXPECT_TRUE(o.groups.empty());

  ds.zero.stage = 1;  // fp16 stage 1: DeepSpeedZeroOptimizer, round robin applies
  EXPECT_TRUE(partition_options(ds, 2).round_robin);
  ds.bf16 = true;  // bf16 + stage 1 + fp32 grad accumulation: BF16_Optimizer, no round robin
  ds.fp16 = false;
  ds.grad_accum_dtype = DType::Float32;
  ASSERT_EQ(ds.optimizer_path(), OptimizerPath::Bf16Optimizer);
  EXPECT_FALSE(partition_options(ds, 2).round_robin);
  ds.zero.offload_optimizer.device = OffloadDevice::Cpu;  // CPU offload: back to the ZeRO optimizer
  EXPECT_TRUE(partition_options(ds, 2).round_robin);
  for (int stage : {0, 3}) {
    ds.zero.stage = stage;
    EXPECT_FALSE(partition_options(ds, 2).round_robin) << "stage " << stage;
    EXPECT_EQ(partition_options(ds, 2).stage, stage);
  }
  // Defaults agree with PartitionOptions' own.
  const PartitionOptions d = partition_options(default_ds_config(3, DType::BFloat16), 1);
  const PartitionOptions plain;
  EXPECT_EQ(d.sub_group_size, plain.sub_group_size);
  EXPECT_EQ(d.param_persistence_threshold, plain.param_persistence_threshold);
  EXPECT_EQ(d.model_persistence_threshold, plain.model_persistence_threshold);
}

TEST(PartitionPlan, G11TwoGroupsShareGradsInPartition) {
  ModelDesc m = make_model({6, 3, 3});  // a0, b0, b1
  auto o = opts(2, 2);
  o.groups = {{0}, {1, 2}};
  const auto p = plan_ok(m, o);
  ASSERT_EQ(p.groups.size(), 2u);
  EXPECT_EQ(p.groups[0].aligned, 8u);
  EXPECT_EQ(p.groups[0].partition, 4u);
  EXPECT_EQ(p.groups[1].aligned, 8u);
  EXPECT_EQ(p.groups[1].partition, 4u);
  expect_rank(p, 0, 0, {0}, 0, 0, 6);
  expect_rank(p, 0, 1, {0}, 4, 2, 6);
  expect_rank(p, 1, 0, {1, 2}, 0, 0, 6);
  expect_rank(p, 1, 1, {2}, 1, 2, 3);
  EXPECT_EQ(p.grads_in_partition(0), 12u);
  EXPECT_EQ(p.grads_in_partition(1), 9u);
  EXPECT_EQ(p.max_grads_in_partition(), 12u);
  EXPECT_EQ(p.partition_numel(), 8u);
  EXPECT_EQ(p.aligned_numel(), 16u);
  EXPECT_EQ(p.param_group, (Ids{0, 1, 1}));
  EXPECT_EQ(p.owners(1, 2), (Owners{{0, 0, 1}, {1, 1, 2}}));
  EXPECT_TRUE(p.owners(0, 2).empty());  // b1 is not in group A
}

TEST(PartitionPlan, G13RealisticStage2Sizing) {
  const auto p = plan_ok(make_model(std::vector<Elements>(1000, 1000000)), opts(2, 8));
  EXPECT_EQ(p.groups[0].numel, 1000000000u);
  EXPECT_EQ(p.groups[0].padding, 0u);
  EXPECT_EQ(p.groups[0].aligned, 1000000000u);
  EXPECT_EQ(p.groups[0].partition, 125000000u);
  for (std::uint32_t r = 0; r < 8; ++r) {
    Ids expected;
    for (std::uint32_t i = 125 * r; i < 125 * r + 125; ++i) expected.push_back(i);
    expect_rank(p, 0, r, expected, 0, 0, 125000000);
  }
  EXPECT_EQ(p.grads_in_partition_runs(), (std::vector<RankRun>{{0, 125000000}}));
  EXPECT_EQ(p.owners(0, 999), (Owners{{7, 0, 1000000}}));
}

TEST(PartitionPlan, G14Stage3Partitioning) {
  auto o = opts(3, 4);
  o.sub_group_size = 5;
  const auto p = plan_ok(make_model({10, 7, 2}), o);
  EXPECT_TRUE(p.groups.empty());
  ASSERT_EQ(p.s3.size(), 3u);
  const std::vector<Elements> n{10, 7, 2}, c{3, 2, 1}, pad{2, 1, 2};
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(p.s3[i].numel, n[i]);
    EXPECT_EQ(p.s3[i].partition, c[i]);
    EXPECT_EQ(p.s3[i].padding, pad[i]);
  }
  const std::vector<std::vector<Elements>> real{{3, 3, 3, 1}, {2, 2, 2, 1}, {1, 1, 0, 0}};
  for (std::uint32_t i = 0; i < 3; ++i)
    for (std::uint32_t r = 0; r < 4; ++r) EXPECT_EQ(p.s3_real_numel(i, r), real[i][r]) << i << r;
  EXPECT_EQ(p.s3_partition_numel, 6u);
  ASSERT_EQ(p.sub_groups.size(), 2u);
  EXPECT_EQ(p.sub_groups[0].params, (Ids{0, 1}));
  EXPECT_EQ(p.sub_groups[0].partition_numel, 5u);
  EXPECT_EQ(p.sub_groups[1].params, (Ids{2}));
  EXPECT_EQ(p.sub_groups[1].partition_numel, 1u);
  // Default persistence threshold 1e5: all three persistent; gathered copies are W*c each.
  for (const auto& s : p.s3) EXPECT_TRUE(s.persistent);
  EXPECT_EQ(p.s3_persistent_numel, 19u);
  EXPECT_EQ(p.s3_persistent_gathered, 24u);
  // Default sub_group_size (1e9): one sub-group.
  const auto d = plan_ok(make_model({10, 7, 2}), opts(3, 4));
  ASSERT_EQ(d.sub_groups.size(), 1u);
  EXPECT_EQ(d.sub_groups[0].params, (Ids{0, 1, 2}));
  EXPECT_EQ(d.sub_groups[0].partition_numel, 6u);
}

TEST(PartitionPlan, G19PersistenceDefaults) {
  const auto p = plan_ok(make_model({100000, 100001, 50}), opts(3, 4));
  EXPECT_TRUE(p.s3[0].persistent);
  EXPECT_FALSE(p.s3[1].persistent);
  EXPECT_TRUE(p.s3[2].persistent);
  EXPECT_EQ(p.s3_persistent_numel, 100050u);
  EXPECT_EQ(p.s3_persistent_gathered, 100000u + 52u);  // 4*25000 + 4*13
}

TEST(PartitionPlan, G19PersistenceModelThresholdContinuesNotStops) {
  auto o = opts(3, 4);
  o.model_persistence_threshold = 100020;
  const auto p = plan_ok(make_model({100000, 100001, 50}), o);
  EXPECT_TRUE(p.s3[0].persistent);
  EXPECT_FALSE(p.s3[1].persistent);
  EXPECT_FALSE(p.s3[2].persistent);  // 100050 > 100020
  EXPECT_EQ(p.s3_persistent_numel, 100000u);
  // "continue, not stop": a later param that still fits under the cap is marked.
  const auto q = plan_ok(make_model({100000, 100001, 20}), o);
  EXPECT_TRUE(q.s3[2].persistent);
  EXPECT_EQ(q.s3_persistent_numel, 100020u);
}

TEST(PartitionPlan, ZeroSizeParamsAreMembersWhereTheyStart) {
  // Flat: p0 [0,4), z1 @4, p2 [4,8), z3 @8, p4 [8,12), pad 4; W = 4 → U = 8, Pal 16, S = 4.
  const auto p = plan_ok(make_model({4, 0, 4, 0, 4}), opts(2, 4));
  EXPECT_EQ(p.groups[0].aligned, 16u);
  expect_rank(p, 0, 0, {0}, 0, 0, 4);
  expect_rank(p, 0, 1, {1, 2}, 0, 0, 4);
  expect_rank(p, 0, 2, {3, 4}, 0, 0, 4);
  expect_rank(p, 0, 3, {}, 0, 4, 0);
  EXPECT_EQ(p.owners(0, 1), (Owners{{1, 0, 0}}));
  EXPECT_EQ(p.owners(0, 3), (Owners{{2, 0, 0}}));
  // A zero-size param that starts at Pal lies in no partition.
  const auto q = plan_ok(make_model({8, 0}), opts(2, 4));
  EXPECT_TRUE(q.owners(0, 1).empty());
  expect_rank(q, 0, 3, {0}, 6, 0, 8);
}

TEST(PartitionPlan, FrozenParamsAreDroppedFromGroups) {
  ModelDesc m = make_model({5, 3, 7});
  m.params[1].trainable = false;
  const auto p = plan_ok(m, opts(2, 2));
  EXPECT_EQ(p.groups[0].params, (Ids{0, 2}));
  EXPECT_EQ(p.groups[0].numel, 12u);
  EXPECT_EQ(p.param_group[1], PartitionPlan::kNoGroup);
  EXPECT_TRUE(p.owners(0, 1).empty());
  // Stage 3 still partitions the frozen param, outside every sub-group.
  const auto s = plan_ok(m, opts(3, 2));
  EXPECT_EQ(s.s3[1].partition, 2u);
  EXPECT_EQ(s.s3_partition_numel, 3u + 4u);
  EXPECT_EQ(s.s3_unoptimized_partition_numel, 2u);
  ASSERT_EQ(s.sub_groups.size(), 1u);
  EXPECT_EQ(s.sub_groups[0].params, (Ids{0, 2}));
}

TEST(PartitionPlan, EmptyGroupKeptAtStage12SkippedAtStage3) {
  ModelDesc m = make_model({6, 2});
  m.params[1].trainable = false;
  auto o = opts(2, 2);
  o.groups = {{1}, {0}};
  const auto p = plan_ok(m, o);
  ASSERT_EQ(p.groups.size(), 2u);
  EXPECT_EQ(p.groups[0].aligned, 0u);
  EXPECT_EQ(p.groups[0].partition, 0u);
  expect_rank(p, 0, 1, {}, 0, 0, 0);
  EXPECT_EQ(p.grads_in_partition(1), 6u);
  o.stage = 3;
  const auto s = plan_ok(m, o);
  ASSERT_EQ(s.sub_groups.size(), 1u);
  EXPECT_EQ(s.sub_groups[0].group, 1u);
  EXPECT_EQ(s.sub_groups[0].params, (Ids{0}));
}

TEST(PartitionPlan, SubGroupSizeRules) {
  // Σc == sub_group_size: one sub-group even with a trailing zero-size param (stage3.py's early
  // return uses >=); Σc > sub_group_size: cut after each param reaching it, last one closes.
  auto o = opts(3, 1);
  o.sub_group_size = 5;
  const auto one = plan_ok(make_model({5, 0}), o);
  ASSERT_EQ(one.sub_groups.size(), 1u);
  EXPECT_EQ(one.sub_groups[0].params, (Ids{0, 1}));
  const auto many = plan_ok(make_model({2, 3, 6, 1, 1}), o);
  ASSERT_EQ(many.sub_groups.size(), 3u);
  EXPECT_EQ(many.sub_groups[0].params, (Ids{0, 1}));
  EXPECT_EQ(many.sub_groups[1].params, (Ids{2}));
  EXPECT_EQ(many.sub_groups[2].params, (Ids{3, 4}));
  EXPECT_EQ(many.sub_groups[2].partition_numel, 2u);
  o.sub_group_size = 0;  // every param closes its own sub-group
  EXPECT_EQ(plan_ok(make_model({2, 3, 6}), o).sub_groups.size(), 3u);
}

TEST(PartitionPlan, LargeWorldUsesArithmeticNotRanks) {
  // A 1e12-element param and a 5-element one over 2^24 ranks: Pal = ceil(P / 2^25) * 2^25 =
  // 1000022736896, S = 59606; both end on rank 16776834 (whose range starts 999999967404 elements
  // into p0) and the 381 ranks after it hold only padding. Runs come from two events per param,
  // not from visiting 2^24 ranks.
  const std::uint32_t w = kMaxPartitionWorld;
  const Elements n = 1000000000000ULL;
  const auto p = plan_ok(make_model({n, 5}), opts(2, w));
  EXPECT_EQ(p.groups[0].aligned, 1000022736896ULL);
  EXPECT_EQ(p.groups[0].partition, 59606u);
  EXPECT_EQ(p.grads_in_partition_runs(),
            (std::vector<RankRun>{{0, n}, {16776834, n + 5}, {16776835, 0}}));
  EXPECT_EQ(p.max_grads_in_partition(), n + 5);
  expect_rank(p, 0, 16776833, {0}, 999999907798ULL, 0, n);
  expect_rank(p, 0, 16776834, {0, 1}, 999999967404ULL, 27005, n + 5);
  expect_rank(p, 0, 16776835, {}, 0, 59606, 0);
  expect_rank(p, 0, w - 1, {}, 0, 59606, 0);
  EXPECT_EQ(p.owners(0, 1), (Owners{{16776834, 0, 5}}));
  EXPECT_EQ(p.grads_in_partition(w - 1), 0u);
}

TEST(PartitionPlan, QueriesNearTwoPow64DoNotWrap) {
  // Pal = 2^64 - 2^25 (already a multiple of 2W for W = 2^24), S = 2^40 - 2: the last partition
  // ends at Pal, so (rank + 1) * S and friends stay below 2^64 only if computed with care.
  const std::uint32_t w = kMaxPartitionWorld;
  const Elements pal = 18446744073675997184ULL, s = 1099511627774ULL, n0 = pal - 5;
  const auto p = plan_ok(make_model({n0, 5}), opts(2, w));
  EXPECT_EQ(p.groups[0].aligned, pal);
  EXPECT_EQ(p.groups[0].partition, s);
  EXPECT_EQ(p.grads_in_partition_runs(), (std::vector<RankRun>{{0, n0}, {w - 1, pal}}));
  expect_rank(p, 0, w - 1, {0, 1}, (w - 1) * s, 0, pal);
  EXPECT_EQ(p.owners(0, 1), (Owners{{w - 1, 0, 5}}));
}

}  // namespace
}  // namespace zerosim
