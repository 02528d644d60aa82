// plan_partition on bad input: every rule gives one exact diagnostic (source "partition"), all
// problems of a request are reported together, and sizes that would wrap 64 bits are refused while
// the largest legitimate inputs (1e15 elements, W = 2^24) plan without overflow.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "zerosim/model_desc.h"
#include "zerosim/partition_plan.h"

namespace zerosim {
namespace {

ModelDesc make_model(const std::vector<Elements>& sizes) {
  ModelDesc m;
  for (std::size_t i = 0; i < sizes.size(); ++i)
    m.params.push_back({"p" + std::to_string(i), {sizes[i]}, sizes[i], true});
  return m;
}

std::string errors(const ModelDesc& m, const PartitionOptions& o) {
  auto r = plan_partition(m, o);
  EXPECT_FALSE(r.ok());
  return r.diagnostics().to_string();
}

PartitionOptions opts(int stage, std::uint32_t world) {
  PartitionOptions o;
  o.stage = stage;
  o.world = world;
  return o;
}

constexpr Elements kHalf = 9223372036854775808ULL;  // 2^63
constexpr Elements kMax = 18446744073709551615ULL;  // 2^64 - 1

TEST(PartitionPlanBadInput, WorldZero) {
  EXPECT_EQ(errors(make_model({5}), opts(2, 0)),
            "partition: /world: expected a data-parallel world size of at least 1, got 0\n");
}

TEST(PartitionPlanBadInput, WorldAbove2Pow24) {
  EXPECT_EQ(errors(make_model({5}), opts(3, kMaxPartitionWorld + 1)),
            "partition: /world: expected a data-parallel world size of at most 16777216, got "
            "16777217\n");
}

TEST(PartitionPlanBadInput, StageOutOfRange) {
  EXPECT_EQ(errors(make_model({5}), opts(4, 2)),
            "partition: /stage: expected a ZeRO stage 0..3, got 4\n");
}

TEST(PartitionPlanBadInput, UnknownParamId) {
  auto o = opts(2, 2);
  o.groups = {{0, 7}};
  EXPECT_EQ(
      errors(make_model({5, 3, 7}), o),
      "partition: /groups/0/1: expected a param id below 3 (the model has 3 params), got 7\n");
}

TEST(PartitionPlanBadInput, DuplicateParamAcrossGroups) {
  auto o = opts(3, 2);
  o.groups = {{0, 1}, {1}};
  EXPECT_EQ(
      errors(make_model({5, 3, 7}), o),
      "partition: /groups/1/0: expected each param in at most one group, got param 1 (\"p1\") "
      "again (first at /groups/0/1)\n");
}

TEST(PartitionPlanBadInput, DuplicateParamInsideOneGroup) {
  auto o = opts(1, 2);
  o.groups = {{2, 0, 2}};
  EXPECT_EQ(
      errors(make_model({5, 3, 7}), o),
      "partition: /groups/0/2: expected each param in at most one group, got param 2 (\"p2\") "
      "again (first at /groups/0/0)\n");
}

TEST(PartitionPlanBadInput, AllProblemsReportedTogether) {
  auto o = opts(-1, 0);
  o.groups = {{3}, {0, 0}};
  EXPECT_EQ(
      errors(make_model({5, 3}), o),
      "partition: /stage: expected a ZeRO stage 0..3, got -1\n"
      "partition: /world: expected a data-parallel world size of at least 1, got 0\n"
      "partition: /groups/0/0: expected a param id below 2 (the model has 2 params), got 3\n"
      "partition: /groups/1/1: expected each param in at most one group, got param 0 (\"p0\") "
      "again (first at /groups/1/0)\n");
}

TEST(PartitionPlanBadInput, OverflowOfGroupElementCount) {
  EXPECT_EQ(errors(make_model({kHalf, kHalf}), opts(2, 4)),
            "partition: /groups/0: expected the group's element count to fit in 64 bits, got an "
            "overflow adding param 1 (\"p1\") of 9223372036854775808 elements to "
            "9223372036854775808\n");
}

TEST(PartitionPlanBadInput, OverflowOfAlignedSize) {
  EXPECT_EQ(
      errors(make_model({kMax}), opts(2, 1)),
      "partition: /groups/0: expected the group's aligned size (18446744073709551615 elements "
      "rounded up to a multiple of 2W = 2) to fit in 64 bits, got an overflow\n");
}

TEST(PartitionPlanBadInput, OverflowOfAlignedSizeOverGroups) {
  auto o = opts(1, 1);
  o.groups = {{0}, {1}};
  EXPECT_EQ(errors(make_model({kHalf, kHalf}), o),
            "partition: /groups: expected the aligned size summed over all groups to fit in 64 "
            "bits, got an overflow at group 1\n");
}

TEST(PartitionPlanBadInput, OverflowOfStage3GatheredSize) {
  EXPECT_EQ(errors(make_model({kMax}), opts(3, 2)),
            "partition: /params/0: expected W*ceil(n/W) of param 0 (\"p0\") to fit in 64 bits, got "
            "an overflow (n = 18446744073709551615)\n");
}

TEST(PartitionPlanBadInput, OverflowOfStage3GroupPartition) {
  EXPECT_EQ(errors(make_model({kHalf, kHalf}), opts(3, 1)),
            "partition: /groups/0: expected the group's partition size to fit in 64 bits, got an "
            "overflow\n");
}

TEST(PartitionPlanBadInput, LargestLegitimateInputsDoNotOverflow) {
  // 1000 params of 1e12 (1e15 elements) over 2^24 ranks.
  const auto m = make_model(std::vector<Elements>(1000, 1000000000000ULL));
  auto s2 = plan_partition(m, opts(2, kMaxPartitionWorld));
  ASSERT_TRUE(s2.ok()) << s2.diagnostics().to_string();
  EXPECT_EQ(s2->groups[0].numel, 1000000000000000ULL);
  EXPECT_EQ(s2->groups[0].aligned, 1000000020545536ULL);
  EXPECT_EQ(s2->groups[0].partition, 59604646u);
  EXPECT_EQ(s2->max_grads_in_partition(), 2000000000000ULL);  // two straddled params at most
  auto s3 = plan_partition(m, opts(3, kMaxPartitionWorld));
  ASSERT_TRUE(s3.ok()) << s3.diagnostics().to_string();
  EXPECT_EQ(s3->s3[0].partition, 59605u);
  EXPECT_EQ(s3->s3_partition_numel, 59605000u);
  EXPECT_EQ(s3->s3_persistent_numel, 0u);
}

}  // namespace
}  // namespace zerosim
