// Paper mode (the ZeRO paper's textbook schedule): the collective sequences of DDP, ZeRO-1/2 and
// ZeRO-3, the traffic invariants (ZeRO-1/2 move exactly DDP's bytes per rank, ZeRO-3 1.5 times
// that) and the paper's per-stage model-state buffers.
#include <gtest/gtest.h>

#include <random>

#include "schedule_stage012_testlib.h"

namespace zerosim {
namespace {

using namespace testlib;  // NOLINT: test-local helpers

// Bytes one rank sends with ring algorithms, times W (keeps the arithmetic exact):
// all-reduce 2(W-1)/W of the buffer, reduce-scatter and all-gather (W-1)/W of the full buffer.
Bytes ring_traffic_times_w(const Schedule& s) {
  const Bytes w = s.meta.world;
  Bytes total = 0;
  for (const Op& op : s.ops) {
    if (op.kind != OpKind::Collective || op.phase == Phase::Init) continue;
    const Bytes sz = dtype_size(op.dtype);
    switch (op.collective) {
      case CollectiveKind::AllReduce:
        total += 2 * (w - 1) * op.numel * sz;
        break;
      case CollectiveKind::ReduceScatter:
        total += (w - 1) * op.numel * sz;
        break;
      case CollectiveKind::AllGather:
        total += (w - 1) * op.out_numel * sz;
        break;
      default:
        ADD_FAILURE() << "unexpected collective in paper mode";
        break;
    }
  }
  return total;
}

Built paper(int stage, std::vector<Elements> sizes, std::uint32_t w, Elements r,
            std::uint64_t gas = 1) {
  auto ds = zero_config(stage, r, false);
  ds.grad_accum_steps = gas;
  return build(make_model(sizes), ds, w, paper_mode());
}

Coll RS(Elements in, Elements out) {
  return {
      CollectiveKind::ReduceScatter, in, out, DType::Float16, ReduceOp::Sum, -1, Phase::Backward};
}
Coll AGp(Elements out, Elements in, Phase ph) {
  return {CollectiveKind::AllGather, in, out, DType::Float16, ReduceOp::None, -1, ph};
}

TEST(SchedulePaper, CollectiveSequencesPerStage) {
  const std::vector<Elements> sizes = {8, 8, 8, 8};
  auto ddp = paper(0, sizes, 4, 16);
  ASSERT_TRUE(ddp.schedule.ok());
  EXPECT_EQ(ddp.s().meta.mode, "paper");
  EXPECT_EQ(step_collectives(ddp.s()), (std::vector<Coll>{AR(32, Phase::BoundaryReduce)}));
  for (int stage : {1, 2}) {
    auto z = paper(stage, sizes, 4, 16);
    ASSERT_TRUE(z.schedule.ok());
    EXPECT_EQ(step_collectives(z.s()), (std::vector<Coll>{RS(16, 4), RS(16, 4), AG(32, 8)}))
        << "stage " << stage;
  }
  auto z3 = paper(3, sizes, 4, 16);
  ASSERT_TRUE(z3.schedule.ok());
  const Coll fwd = AGp(8, 2, Phase::Forward), bwd = AGp(8, 2, Phase::Backward);
  EXPECT_EQ(step_collectives(z3.s()),
            (std::vector<Coll>{fwd, fwd, fwd, fwd, bwd, bwd, RS(16, 4), bwd, bwd, RS(16, 4)}));
  EXPECT_EQ(z3.s().roles.size(), 1u);
  EXPECT_EQ(z3.s().roles[0].rank_count(), 4u);
}

TEST(SchedulePaper, TrafficOfZero12EqualsDdpAndZero3IsOneAndAHalfTimes) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 50; ++trial) {
    const std::uint32_t w = std::uniform_int_distribution<std::uint32_t>(2, 16)(rng);
    std::vector<Elements> sizes;
    const int n = std::uniform_int_distribution<int>(1, 8)(rng);
    for (int i = 0; i < n; ++i)
      sizes.push_back(w * std::uniform_int_distribution<Elements>(1, 50)(rng));
    const Elements r = w * std::uniform_int_distribution<Elements>(1, 40)(rng);
    SCOPED_TRACE("W " + std::to_string(w) + " R " + std::to_string(r));
    auto ddp = paper(0, sizes, w, r), z1 = paper(1, sizes, w, r), z2 = paper(2, sizes, w, r),
         z3 = paper(3, sizes, w, r);
    ASSERT_TRUE(ddp.schedule.ok() && z1.schedule.ok() && z2.schedule.ok() && z3.schedule.ok());
    const Bytes base = ring_traffic_times_w(ddp.s());
    EXPECT_GT(base, 0u);
    EXPECT_EQ(ring_traffic_times_w(z1.s()), base);
    EXPECT_EQ(ring_traffic_times_w(z2.s()), base);
    EXPECT_EQ(2 * ring_traffic_times_w(z3.s()), 3 * base);
  }
}

TEST(SchedulePaper, Stage1ReducesAtTheBoundaryStage2EveryMicroStep) {
  const std::vector<Elements> sizes = {8, 8};
  auto z1 = paper(1, sizes, 4, 100, 2);
  auto z2 = paper(2, sizes, 4, 100, 2);
  ASSERT_TRUE(z1.schedule.ok() && z2.schedule.ok());
  auto rs_micro = [](const Schedule& s) {
    std::vector<std::uint32_t> micro;
    for (const Op& op : s.ops)
      if (op.kind == OpKind::Collective && op.collective == CollectiveKind::ReduceScatter)
        micro.push_back(op.micro_step);
    return micro;
  };
  EXPECT_EQ(rs_micro(z1.s()), (std::vector<std::uint32_t>{1}));
  EXPECT_EQ(rs_micro(z2.s()), (std::vector<std::uint32_t>{0, 1}));
}

TEST(SchedulePaper, ModelStatesFollowThePaperPerStage) {
  // Ψ = 64, N = 4: params / grads / master / Adam elements per rank.
  struct Row {
    int stage;
    Elements p16, g16, master, adam;
  };
  for (const Row& row : {Row{0, 64, 64, 64, 128}, Row{1, 64, 64, 16, 32}, Row{2, 64, 16, 16, 32},
                         Row{3, 16, 16, 16, 32}}) {
    auto b = paper(row.stage, {32, 32}, 4, 1000);
    ASSERT_TRUE(b.schedule.ok());
    auto numel = [&](BufferCategory c) {
      Elements n = 0;
      for (const Buffer& buf : b.s().buffers)
        if (buf.category == c && buf.persistent) n += buf.numel;
      return n;
    };
    EXPECT_EQ(numel(BufferCategory::Param16), row.p16) << "stage " << row.stage;
    EXPECT_EQ(numel(BufferCategory::Grad), row.g16) << "stage " << row.stage;
    EXPECT_EQ(numel(BufferCategory::Param32), row.master) << "stage " << row.stage;
    EXPECT_EQ(numel(BufferCategory::OptimState), row.adam) << "stage " << row.stage;
  }
}

}  // namespace
}  // namespace zerosim
