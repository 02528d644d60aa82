// Operand regions of built schedules (schedule.h Region, resolve): for every rank the constant and
// affine operands land where DeepSpeed puts the data, checked over all ranks, so a wrong stride or
// offset shows up as a gap or an overlap.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "schedule_stage012_testlib.h"
#include "schedule_stage3_test_util.h"

namespace zerosim {
namespace {

// The spans of `r` over ranks 0..world-1 tile [0, total) of one buffer exactly once.
void expect_tiles(const Schedule& s, const Op& op, const Region& r, bool is_src, Elements total) {
  ASSERT_FALSE(r.empty()) << op.label;
  std::vector<std::pair<Elements, Elements>> spans;
  for (std::uint32_t rank = 0; rank < s.meta.world; ++rank) {
    const OperandSpan sp = resolve(s, op, r, rank, is_src);
    EXPECT_EQ(sp.buffer, r.buffer);
    spans.emplace_back(sp.offset, sp.length);
  }
  std::sort(spans.begin(), spans.end());
  Elements at = 0;
  for (const auto& [offset, length] : spans) {
    EXPECT_EQ(offset, at) << op.label;
    at = offset + length;
  }
  EXPECT_EQ(at, total) << op.label;
}

TEST(ScheduleOperands, Stage12WriteBackAndGatherTileTheFlatBuffer) {
  for (const std::uint32_t world : {2u, 4u, 8u}) {
    SCOPED_TRACE("world " + std::to_string(world));
    auto ds = testlib::zero_config(2, 16, false);
    const auto b = testlib::build(testlib::make_model({10, 7, 2, 13}), ds, world,
                                  testlib::with_groups({{0, 2}, {1, 3}}));
    ASSERT_TRUE(b.schedule.ok());
    const Schedule& s = b.s();
    std::size_t write_backs = 0, gathers = 0;
    for (const Op& op : s.ops) {
      if (op.kind == OpKind::WriteBack) {
        const auto g = static_cast<std::size_t>(write_backs++);
        expect_tiles(s, op, op.dst, false, b.plan.groups[g].aligned);
        EXPECT_EQ(s.buffers[op.dst.buffer].numel, b.plan.groups[g].aligned);
      }
      if (op.kind == OpKind::Collective && op.collective == CollectiveKind::AllGather) {
        const auto g = static_cast<std::size_t>(gathers++);
        expect_tiles(s, op, op.src, true, b.plan.groups[g].aligned);
        EXPECT_EQ(resolve(s, op, op.dst, 1, false),
                  (OperandSpan{op.src.buffer, 0, b.plan.groups[g].aligned}));
      }
    }
    EXPECT_EQ(write_backs, 2u);
    EXPECT_EQ(gathers, 2u);
  }
}

TEST(ScheduleOperands, Stage12BucketCopiesFillTheBucketInInsertionOrder) {
  auto ds = testlib::zero_config(2, 20, false);
  ds.zero.reduce_scatter = false;  // each bucket is all-reduced in place
  const auto b = testlib::build(testlib::make_model({10, 7, 2, 13}), ds, 4);
  ASSERT_TRUE(b.schedule.ok());
  const Schedule& s = b.s();
  std::map<std::uint32_t, Elements> filled;  // per flush: elements copied so far
  for (const Op& op : s.ops) {
    if (op.kind != OpKind::CopyToBucket) continue;
    EXPECT_EQ(op.src.buffer, s.tensors[op.param].grad);
    EXPECT_EQ(op.dst.offset, filled[op.bucket]) << op.label;
    EXPECT_EQ(resolve(s, op, op.dst, 3, false).length, s.tensors[op.param].numel);
    filled[op.bucket] += s.tensors[op.param].numel;
  }
  EXPECT_FALSE(filled.empty());
  // Each bucket's all-reduce runs in place on what its copies filled.
  for (const Op& op : s.ops) {
    if (op.kind == OpKind::Collective && op.bucket != kNone && filled.count(op.bucket) &&
        op.numel == filled[op.bucket]) {
      EXPECT_EQ(s.buffers[op.src.buffer].spec_id, "T2") << op.label;
    }
  }
}

TEST(ScheduleOperands, Stage3GathersReadEachPartitionOnce) {
  DsConfig ds = s3test::stage3_config();
  ds.zero.param_persistence_threshold = 0;
  const ModelDesc m = s3test::param_model({10, 7, 2, 5}, {3, 2, 1, 0});
  const Schedule s = s3test::build(m, ds, 4);
  // The hook-registration gathers (one per trainable param, init) read disjoint chunks covering
  // lp_param_buffer.
  std::vector<std::pair<Elements, Elements>> chunks;
  std::uint32_t lp = kNone;
  for (const Op& op : s.ops) {
    if (op.phase != Phase::Init || op.kind != OpKind::Collective ||
        op.collective != CollectiveKind::AllGather)
      continue;
    lp = op.src.buffer;
    const OperandSpan in = resolve(s, op, op.src, 2, true);
    chunks.emplace_back(in.offset, in.length);
    const OperandSpan out = resolve(s, op, op.dst, 2, false);
    EXPECT_EQ(out.length, 4 * in.length);
    EXPECT_EQ(s.buffers[out.buffer].numel, out.length);
  }
  ASSERT_EQ(chunks.size(), 4u);
  std::sort(chunks.begin(), chunks.end());
  Elements at = 0;
  for (const auto& [offset, length] : chunks) {
    EXPECT_EQ(offset, at);
    at += length;
  }
  EXPECT_EQ(at, s.buffers[lp].numel);
  // The write-back of each sub-group lands on its own range of the same buffer.
  for (const Op& op : s.ops) {
    if (op.kind == OpKind::WriteBack) {
      EXPECT_EQ(op.dst.buffer, lp);
    }
  }
}

// The post-flush copy reads, for every rank, exactly the flush's grads touching its partition:
// their total is the rank's Touching slot (the SlotTable sweep and the layout agree), and each
// lies where the flush reduces it.
TEST(ScheduleOperands, Stage12PostFlushCopiesReadTheTouchingGradsOfEveryRank) {
  for (const bool overlap : {false, true}) {
    auto ds = testlib::zero_config(2, 20, overlap);
    const auto b =
        testlib::build(testlib::make_model({10, 7, 2, 13, 30, 1}), ds, 8, testlib::with_steps(2));
    ASSERT_TRUE(b.schedule.ok());
    const Schedule& s = b.s();
    std::size_t copies = 0;
    for (const Op& op : s.ops) {
      if (op.kind != OpKind::Copy || op.src.flush_grads == kNone) continue;
      ++copies;
      for (std::uint32_t rank = 0; rank < 8; ++rank) {
        Elements total = 0;
        for (const OperandSpan& sp : resolve_pieces(s, op, op.src, rank, true)) {
          ASSERT_LT(sp.buffer, s.buffers.size());
          const std::string& spec = s.buffers[sp.buffer].spec_id;
          EXPECT_TRUE(spec == "T1" || spec == "T2") << spec;
          EXPECT_LE(sp.offset + sp.length, s.buffers[sp.buffer].numel);
          total += sp.length;
        }
        EXPECT_EQ(total, s.op_elements(op, s.role_of(rank))) << op.label << " rank " << rank;
      }
    }
    EXPECT_GT(copies, 2u);
    EXPECT_LE(s.flush_plans.size(), 4u);  // one per planned flush, shared by both steps
  }
}

TEST(ScheduleOperands, UpdatesNameMasterGradStatesOutputAndScratch) {
  auto ds = testlib::zero_config(2, 16, false);  // fp16: the overflow flag is checked
  const auto b = testlib::build(testlib::make_model({10, 7, 2, 13}), ds, 4,
                                testlib::with_groups({{0, 2}, {1, 3}}));
  ASSERT_TRUE(b.schedule.ok());
  const Schedule& s = b.s();
  std::vector<std::uint32_t> seen;
  for (const Op& op : s.ops) {
    if (op.kind == OpKind::Collective && op.dtype == DType::UInt8) {
      ASSERT_FALSE(op.src.empty());
      EXPECT_TRUE(s.buffers[op.src.buffer].executor_owned);
    }
    if (op.kind != OpKind::OptimizerStep) continue;
    ASSERT_NE(op.update, kNone);
    const UpdateCall& u = s.updates[op.update];
    const auto g = seen.size();
    seen.push_back(op.update);
    const Elements part = b.plan.groups[g].partition;
    EXPECT_EQ(s.buffers[u.master.buffer].spec_id, "B2");
    EXPECT_EQ(s.buffers[u.grad.buffer].spec_id, "T7");  // fp16 grads cast to fp32
    EXPECT_EQ(u.exp_avg.buffer, u.exp_avg_sq.buffer);
    EXPECT_EQ(resolve(s, op, u.exp_avg_sq, 0, false), (OperandSpan{u.exp_avg.buffer, part, part}));
    EXPECT_EQ(resolve(s, op, u.lp_out, 3, false), (OperandSpan{u.lp_out.buffer, 3 * part, part}));
    EXPECT_EQ(s.buffers[u.lp_out.buffer].spec_id, "B1");
    EXPECT_TRUE(s.buffers[u.norms.buffer].executor_owned);
    EXPECT_EQ(u.norms.length, 2u);
    EXPECT_TRUE(s.buffers[u.overflow.buffer].executor_owned);
  }
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_NE(seen[0], seen[1]);
  EXPECT_EQ(s.updates.size(), 2u);  // O(groups): a second step would reuse them
}

}  // namespace
}  // namespace zerosim
