// Stage 3 prefetch and release on G18's abstract trace (deepspeed_zero.md §9 G18): four layers
// L1..L4 with one non-persistent 1e6-element param each, W = 4, prefetch_bucket_size 1.5e6. Step 0
// is the recording iteration, step 1 runs on the COMPLETE trace (variants A, B, C). Also the trace
// broadcasts around the recording iteration at both DeepSpeed versions, and the v0.14.4 variant C
// whose first layer (an embedding: its post-backward hook never fires) leaves n_available negative.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "schedule_stage3_test_util.h"

namespace zerosim {
namespace {

using namespace s3test;  // NOLINT

constexpr auto kF = Phase::Forward;
constexpr auto kB = Phase::Backward;
constexpr auto kI64 = DType::Int64;  // trace-check broadcasts
constexpr Elements kN = 1000000;

ModelDesc g18_model(LayerKind first = LayerKind::Other) {
  return layer_model({{kN}, {kN}, {kN}, {kN}}, {first});
}

DsConfig g18_config(std::uint64_t max_live, std::uint64_t reuse) {
  DsConfig ds = stage3_config();
  ds.zero.param_persistence_threshold = 0;
  ds.zero.prefetch_bucket_size = 1500000;
  ds.zero.max_live_parameters = max_live;
  ds.zero.max_reuse_distance = reuse;
  return ds;
}

std::vector<Coll> gathers(const Schedule& s, std::uint32_t step) {
  return colls(s, kind_in_step(CollectiveKind::AllGather, step));
}

const Coll kOne = ag(250000, kN, kF, 1);      // one param: AG(in 2.5e5, out 1e6)
const Coll kTwo = ag(500000, 2 * kN, kF, 1);  // two params coalesced: AG(in 5e5, out 2e6)
const Coll kOneBwd = ag(250000, kN, kB, 1);

TEST(ScheduleStage3Prefetch, G18RecordingIterationGathersEachUseAlone) {
  const Schedule s = build(g18_model(), g18_config(1000000000, 1000000000), 4, 2);
  std::vector<Coll> expected(4, ag(250000, kN, kF, 0));
  expected.insert(expected.end(), 4, ag(250000, kN, kB, 0));
  EXPECT_EQ(gathers(s, 0), expected);
  // Everything is released right after each use: 8 frees of gathered params inside fwd/bwd.
  const auto rec = freed(s, BufferCategory::GatheredParam, [](const Op& o) {
    return o.step == 0 && (o.phase == kF || o.phase == kB);
  });
  EXPECT_EQ(rec.size(), 8u);
}

// Variant A (defaults for max_live and reuse): w1; prefetch {w2, w3}; prefetch w4; nothing released
// in forward; backward frees each param; peak resident = the whole model.
TEST(ScheduleStage3Prefetch, G18VariantA) {
  const Schedule s = build(g18_model(), g18_config(1000000000, 1000000000), 4, 2);
  EXPECT_EQ(gathers(s, 1), (std::vector<Coll>{kOne, kTwo, kOne}));
  const auto step1 = [](Phase ph) {
    return [ph](const Op& o) { return o.step == 1 && o.phase == ph; };
  };
  EXPECT_TRUE(freed(s, BufferCategory::GatheredParam, step1(kF)).empty());
  EXPECT_EQ(freed(s, BufferCategory::GatheredParam, step1(kB)),
            (std::vector<std::string>{"gathered (W*c):w4_0", "gathered:w3_0", "gathered:w2_0",
                                      "gathered (W*c):w1_0"}));
  const auto first = find_label(s, "reset_step", find_label(s, "reset_step") + 1);
  EXPECT_EQ(peak_elements(s, first, s.ops.size(), BufferCategory::GatheredParam), 4 * kN);
}

// Variant B (max_reuse_distance 0): step 1's scan prefetches {w1, w4} together; w2 and w3 survive
// their forward release (their next uses were consumed by the scan); w4 is re-gathered in backward.
TEST(ScheduleStage3Prefetch, G18VariantB) {
  const Schedule s = build(g18_model(), g18_config(1000000000, 0), 4, 2);
  EXPECT_EQ(gathers(s, 1), (std::vector<Coll>{kOne, kTwo, kTwo, kOneBwd}));
  const auto in = [](Phase ph) {
    return [ph](const Op& o) { return o.step == 1 && o.phase == ph; };
  };
  EXPECT_EQ(freed(s, BufferCategory::GatheredParam, in(kF)),
            (std::vector<std::string>{"gathered (W*c):w1_0", "gathered:w4_0"}));
  EXPECT_EQ(freed(s, BufferCategory::GatheredParam, in(kB)),
            (std::vector<std::string>{"gathered (W*c):w4_0", "gathered:w3_0", "gathered:w2_0",
                                      "gathered:w1_0"}));
}

// Variant C (max_live 2.5e6, reuse 0): the budget shrinks to 0.5e6 and then below zero.
TEST(ScheduleStage3Prefetch, G18VariantC) {
  const Schedule s = build(g18_model(), g18_config(2500000, 0), 4, 2);
  EXPECT_EQ(gathers(s, 1), (std::vector<Coll>{kOne, kTwo, kOne, kOne, kOneBwd, kOneBwd}));
}

// The budget test is strict <: with prefetch_bucket_size 2e6 the scan stops once w2 + w3 reach
// exactly 2e6, so w4 waits for the next fetch.
TEST(ScheduleStage3Prefetch, BudgetComparisonIsStrict) {
  DsConfig ds = g18_config(1000000000, 1000000000);
  ds.zero.prefetch_bucket_size = 2000000;
  EXPECT_EQ(gathers(build(g18_model(), ds, 4, 2), 1), (std::vector<Coll>{kOne, kTwo, kOne}));
  ds.zero.prefetch_bucket_size = 2000001;  // one more element: w4 joins the first prefetch
  EXPECT_EQ(gathers(build(g18_model(), ds, 4, 2), 1),
            (std::vector<Coll>{kOne, ag(750000, 3 * kN, kF, 1)}));
}

// Trace checks: at edaa722 the reset in the forward pre-hook broadcasts the (empty) module list
// before recording and the three lists after it, each preceded by a 1-element length broadcast.
TEST(ScheduleStage3Trace, BroadcastsAroundTheRecordingIterationEdaa722) {
  const Schedule s = build(g18_model(), g18_config(1000000000, 1000000000), 4, 2);
  const auto bcasts = colls(s, [](const Op& o) {
    return o.collective == CollectiveKind::Broadcast && o.phase != Phase::Init;
  });
  EXPECT_EQ(bcasts, (std::vector<Coll>{bc(1, kI64, kF, 0), bc(0, kI64, kF, 0), bc(1, kI64, kF, 1),
                                       bc(8, kI64, kF, 1), bc(1, kI64, kF, 1), bc(8, kI64, kF, 1),
                                       bc(1, kI64, kF, 1), bc(8, kI64, kF, 1)}));
}

// v0.14.4: the trace starts in RECORD and resets after backward: the three lists only, once.
TEST(ScheduleStage3Trace, BroadcastsAfterTheFirstBackwardV0144) {
  const Schedule s =
      build(g18_model(), g18_config(1000000000, 1000000000), 4, 2, DeepSpeedVersion::V0_14_4);
  const auto bcasts = colls(s, [](const Op& o) {
    return o.collective == CollectiveKind::Broadcast && o.phase != Phase::Init;
  });
  EXPECT_EQ(bcasts,
            (std::vector<Coll>{bc(8, kI64, kB, 0), bc(8, kI64, kB, 0), bc(8, kI64, kB, 0)}));
  // With every post-backward hook firing, nothing is gathered at the reset: same gathers as
  // edaa722.
  EXPECT_EQ(gathers(s, 1), (std::vector<Coll>{kOne, kTwo, kOne}));
}

// L1 is an embedding: its post-backward RELEASE never fires. edaa722's epilogue sweep releases w1
// before the next reset, so variant C is unchanged. v0.14.4 resets first (n_available = 0) and
// step()'s release-all then frees w1, so step 1 starts at n_available = -1e6: the budget at L2 is
// 1.5e6 instead of 0.5e6 and {w1, w4} are prefetched together (4 all-gathers instead of 6).
TEST(ScheduleStage3Trace, G18VariantCWithEmbeddingFirstLayerByVersion) {
  const Schedule at_commit = build(g18_model(LayerKind::Embedding), g18_config(2500000, 0), 4, 2);
  EXPECT_EQ(gathers(at_commit, 1), (std::vector<Coll>{kOne, kTwo, kOne, kOne, kOneBwd, kOneBwd}));
  const auto sweep = [](const Op& o) { return o.step == 0 && o.phase == Phase::Epilogue; };
  EXPECT_EQ(freed(at_commit, BufferCategory::GatheredParam, sweep),
            (std::vector<std::string>{"gathered (W*c):w1_0"}));

  const Schedule v0144 = build(g18_model(LayerKind::Embedding), g18_config(2500000, 0), 4, 2,
                               DeepSpeedVersion::V0_14_4);
  EXPECT_EQ(gathers(v0144, 1), (std::vector<Coll>{kOne, kTwo, kTwo, kOneBwd}));
  const auto release_all = [](const Op& o) { return o.step == 0 && o.phase == Phase::Step; };
  EXPECT_EQ(freed(v0144, BufferCategory::GatheredParam, release_all),
            (std::vector<std::string>{"gathered (W*c):w1_0"}));
}

}  // namespace
}  // namespace zerosim
