// Operand regions of built schedules (schedule.h Region, resolve): for every rank the constant and
// affine operands land where DeepSpeed puts the data, checked over all ranks, so a wrong stride or
// offset shows up as a gap or an overlap.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "schedule_stage012_testlib.h"
#include "schedule_stage3_test_util.h"
#include "zerosim/schedule_io.h"

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
    // One per planned flush and one for its copy-back from the reduction temporary (X4), shared
    // by both steps.
    EXPECT_LE(s.flush_plans.size(), 8u);
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

// deepspeed_zero.md G2: sizes [5,3,7], W = 4, R = 8, overlap_comm, backward p2, p1, p0. Flush #1
// reduces {p2} from buf0, flush #2 {p1, p0} from buf1; grads_in_partition is 5/8/7/7 on ranks
// 0..3, packed in reduction order, and averaged_gradients carves each rank's S = 4 from it.
TEST(ScheduleOperands, G2GradsInPartitionAndAveragedGradients) {
  const auto b = testlib::build(testlib::make_model({5, 3, 7}, {2, 1, 0}),
                                testlib::zero_config(2, 8, true), 4);
  ASSERT_TRUE(b.schedule.ok());
  const Schedule& s = b.s();
  std::vector<const Op*> post, flatten_avg, flush_ar, copy_back;
  for (const Op& op : s.ops) {
    if (op.kind == OpKind::Copy && op.src.flush_grads != kNone) post.push_back(&op);
    if (op.label == "flatten averaged_gradients") flatten_avg.push_back(&op);
    if (op.label.ends_with(": copy back")) copy_back.push_back(&op);
    if (op.kind == OpKind::Collective && op.collective == CollectiveKind::AllReduce &&
        op.dtype == DType::Float16)
      flush_ar.push_back(&op);
  }
  ASSERT_EQ(post.size(), 2u);
  ASSERT_EQ(flatten_avg.size(), 1u);
  ASSERT_EQ(flush_ar.size(), 2u);  // AR(7), AR(8)
  const auto spans = [&](const Op& op, const Region& r, std::uint32_t rank) {
    return resolve_pieces(s, op, r, rank, false);
  };
  // Flush #1's post-flush copy lands p2 (7) at the start of ranks 2 and 3's grads_in_partition,
  // the T3 piece flush #1 allocates; flush #2's lands p1 then p0 on rank 1 (8), p0 on rank 0.
  const std::uint32_t t3_f1 = spans(*post[0], post[0]->dst, 2).front().buffer;
  const std::uint32_t t3_f2 = spans(*post[1], post[1]->dst, 1).front().buffer;
  EXPECT_NE(t3_f1, t3_f2);
  EXPECT_EQ(s.buffers[t3_f1].spec_id, "T3");
  for (const std::uint32_t rank : {2u, 3u})
    EXPECT_EQ(spans(*post[0], post[0]->dst, rank), (std::vector<OperandSpan>{{t3_f1, 0, 7}}));
  EXPECT_TRUE(spans(*post[0], post[0]->dst, 0).empty());
  EXPECT_EQ(spans(*post[1], post[1]->dst, 1), (std::vector<OperandSpan>{{t3_f2, 0, 8}}));
  EXPECT_EQ(spans(*post[1], post[1]->dst, 0), (std::vector<OperandSpan>{{t3_f2, 0, 5}}));
  EXPECT_EQ(s.buffer_numel(t3_f2, s.role_of(1)), 8u);
  EXPECT_EQ(s.buffer_numel(t3_f2, s.role_of(0)), 5u);
  // averaged_gradients: rank 0 [p0[0:4]]; rank 1 [p0[4:5], p1[0:3]] (p1 sits first in its T3,
  // p0 after it); rank 2 [p2[0:4]]; rank 3 [p2[4:7], zeros(1)].
  const Op& fl = *flatten_avg[0];
  EXPECT_EQ(resolve_pieces(s, fl, fl.src, 0, true), (std::vector<OperandSpan>{{t3_f2, 0, 4}}));
  EXPECT_EQ(resolve_pieces(s, fl, fl.src, 1, true),
            (std::vector<OperandSpan>{{t3_f2, 3 + 4, 1}, {t3_f2, 0, 3}}));
  EXPECT_EQ(resolve_pieces(s, fl, fl.src, 2, true), (std::vector<OperandSpan>{{t3_f1, 0, 4}}));
  EXPECT_EQ(resolve_pieces(s, fl, fl.src, 3, true),
            (std::vector<OperandSpan>{{t3_f1, 4, 3}, {kNone, 0, 1}}));
  // A single tensor is not flattened (FlatCopy 0 on rank 0), two are (S = 4 on rank 1).
  EXPECT_EQ(s.op_elements(fl, s.role_of(0)), 0u);
  EXPECT_EQ(s.op_elements(fl, s.role_of(1)), 4u);
  // Flush #1 (2 owner slices) is flattened: AR(7) of the temp in place, averaged by 1/W, then
  // each rank copies its owned slices back into buf0 (X4: allreduce_and_copy_with_multiple_ranks):
  // rank 2 p2[0:4], rank 3 p2[4:7], ranks 0 and 1 nothing; flush #2 likewise into buf1.
  EXPECT_EQ(flush_ar[0]->numel, 7u);
  EXPECT_EQ(flush_ar[0]->scale, 0.25);
  EXPECT_EQ(s.buffers[flush_ar[0]->src.buffer].spec_id, "T5");
  EXPECT_TRUE(flush_ar[0]->dst.empty());
  ASSERT_EQ(copy_back.size(), 2u);
  const Op& cb = *copy_back[0];
  const std::uint32_t tmp = flush_ar[0]->src.buffer, buf0 = post[0]->src.flush_grads;
  ASSERT_LT(buf0, s.flush_plans.size());
  const std::uint32_t ipg0 = s.flush_plans[buf0].entries.front().buffer;
  EXPECT_EQ(s.buffers[ipg0].name, "ipg[0]");
  EXPECT_EQ(cb.stream, flush_ar[0]->stream);  // the reduction stream (overlap_comm)
  EXPECT_EQ(resolve_pieces(s, cb, cb.src, 3, true), (std::vector<OperandSpan>{{tmp, 4, 3}}));
  EXPECT_EQ(resolve_pieces(s, cb, cb.dst, 3, false), (std::vector<OperandSpan>{{ipg0, 4, 3}}));
  EXPECT_EQ(resolve_pieces(s, cb, cb.dst, 2, false), (std::vector<OperandSpan>{{ipg0, 0, 4}}));
  EXPECT_TRUE(resolve_pieces(s, cb, cb.dst, 0, false).empty());
  EXPECT_EQ(s.op_elements(cb, s.role_of(3)), 3u);
  EXPECT_EQ(s.op_elements(cb, s.role_of(0)), 0u);
  EXPECT_TRUE(flush_ar[1]->dst.empty());
}

// G3, use_multi_rank_bucket_allreduce=false: flush #2 reduces owner 1's slices p1 (3) and p0's
// last element, flattened from buf1 [0:3] and [7:8], to rank 1 in the temporary; then rank 1 alone
// copies the result back into those slices (X4: allreduce_and_copy's `rank ==
// dist.get_rank()` copy, stage_1_and_2.py:1903-1906 at edaa722), a costed copy op.
TEST(ScheduleOperands, G3ReduceToOwnerReadsAndWritesItsSlices) {
  auto ds = testlib::zero_config(2, 8, true);
  ds.zero.use_multi_rank_bucket_allreduce = false;
  const auto b = testlib::build(testlib::make_model({5, 3, 7}, {2, 1, 0}), ds, 4);
  ASSERT_TRUE(b.schedule.ok());
  const Schedule& s = b.s();
  const Op *rd1 = nullptr, *back = nullptr;
  for (const Op& op : s.ops) {
    if (op.kind == OpKind::Collective && op.collective == CollectiveKind::Reduce && op.root == 1)
      rd1 = &op;
    if (rd1 != nullptr && back == nullptr && op.kind == OpKind::Copy &&
        op.label.ends_with(": copy back"))
      back = &op;
  }
  ASSERT_NE(rd1, nullptr);
  EXPECT_EQ(rd1->numel, 4u);
  EXPECT_EQ(rd1->scale, 0.25);
  // The flatten copy gathers the slices into the temporary; the reduce runs in place on it.
  const Op& flatten = s.ops[static_cast<std::size_t>(rd1 - s.ops.data()) - 1];
  ASSERT_EQ(flatten.kind, OpKind::Copy);
  ASSERT_NE(flatten.src.list, kNone);
  const auto& pieces = s.lists[flatten.src.list];
  ASSERT_EQ(pieces.size(), 2u);
  const std::uint32_t ipg1 = pieces[0].buffer;
  EXPECT_EQ(s.buffers[ipg1].name, "ipg[1]");
  EXPECT_EQ(pieces[0].offset, 0u);
  EXPECT_EQ(pieces[0].length, 3u);
  EXPECT_EQ(pieces[1].offset, 7u);
  EXPECT_EQ(pieces[1].length, 1u);
  const std::uint32_t tmp = flatten.dst.buffer;
  ASSERT_NE(tmp, kNone);
  EXPECT_EQ(rd1->src.buffer, tmp);
  EXPECT_EQ(s.buffers[tmp].spec_id, "T5");
  EXPECT_TRUE(rd1->dst.empty());
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(back->stream, rd1->stream);
  EXPECT_EQ(s.op_elements(*back, s.role_of(1)), 4u);
  for (const std::uint32_t rank : {0u, 2u, 3u}) {
    EXPECT_EQ(s.op_elements(*back, s.role_of(rank)), 0u) << rank;
    EXPECT_TRUE(resolve_pieces(s, *back, back->dst, rank, false).empty()) << rank;
  }
  EXPECT_EQ(resolve_pieces(s, *back, back->src, 1, true),
            (std::vector<OperandSpan>{{tmp, 0, 3}, {tmp, 3, 1}}));
  EXPECT_EQ(resolve_pieces(s, *back, back->dst, 1, false),
            (std::vector<OperandSpan>{{ipg1, 0, 3}, {ipg1, 7, 1}}));
}

// CHUNK_GT cuts an extra-large param's owner slices into several all-reduces (allreduce_and_scatter
// with numel_per_bucket = reduce_bucket_size, stage_1_and_2.py:1314-1348 at edaa722): a 12-element
// param at W = 4 (aligned to 16: S = 4, slices 4/4/4 on ranks 0-2) with R = 5 is reduced as
// chunk [0, 8) (two slices, flattened) and chunk [8, 12) (one slice, in place). After the first,
// ranks 0 and 1 each copy back their own slice (X4), ranks 2 and 3 nothing.
TEST(ScheduleOperands, ChunkedAllReduceCopiesBackEachRanksSliceOfTheChunk) {
  const auto b =
      testlib::build(testlib::make_model({12}, {0}), testlib::zero_config(2, 5, false), 4);
  ASSERT_TRUE(b.schedule.ok());
  const Schedule& s = b.s();
  ASSERT_EQ(s.layout.groups.front().partition, 4u);
  std::vector<const Op*> ar, back;
  for (const Op& op : s.ops) {
    if (op.kind == OpKind::Collective && op.collective == CollectiveKind::AllReduce &&
        op.phase != Phase::Step && op.dtype == DType::Float16)
      ar.push_back(&op);
    if (op.kind == OpKind::Copy && op.label.ends_with(": copy back")) back.push_back(&op);
  }
  ASSERT_EQ(ar.size(), 2u);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(ar[0]->numel, 8u);
  EXPECT_EQ(ar[1]->numel, 4u);
  const std::uint32_t tmp = ar[0]->src.buffer;
  EXPECT_EQ(s.buffers[tmp].spec_id, "T5");
  EXPECT_TRUE(ar[0]->dst.empty());
  const std::uint32_t grad = ar[1]->src.buffer;  // the param's own gradient, in place
  EXPECT_EQ(ar[1]->src.offset, 8u);
  EXPECT_GT(back[0], ar[0]);
  EXPECT_LT(back[0], ar[1]);
  EXPECT_EQ(back[0]->stream, ar[0]->stream);
  for (const std::uint32_t rank : {0u, 1u}) {
    EXPECT_EQ(s.op_elements(*back[0], s.role_of(rank)), 4u) << rank;
    EXPECT_EQ(resolve_pieces(s, *back[0], back[0]->src, rank, true),
              (std::vector<OperandSpan>{{tmp, 4 * rank, 4}}));
    EXPECT_EQ(resolve_pieces(s, *back[0], back[0]->dst, rank, false),
              (std::vector<OperandSpan>{{grad, 4 * rank, 4}}));
  }
  for (const std::uint32_t rank : {2u, 3u}) {
    EXPECT_EQ(s.op_elements(*back[0], s.role_of(rank)), 0u) << rank;
    EXPECT_TRUE(resolve_pieces(s, *back[0], back[0]->dst, rank, false).empty()) << rank;
  }
}

// The chunk copy-backs' derived operands (window, rank, into, packed) survive the JSON round trip,
// and a bad value of each is refused with its pointer.
TEST(ScheduleOperands, ChunkCopyBackOperandsRoundTripAndBadValuesAreRefused) {
  auto ds = testlib::zero_config(2, 5, false);
  ds.zero.use_multi_rank_bucket_allreduce = false;
  ds.communication_data_type = DType::Float32;  // every reduce flattened (cast), copied back
  const auto b = testlib::build(testlib::make_model({12, 3}, {1, 0}), ds, 4);
  ASSERT_TRUE(b.schedule.ok());
  const Schedule& s = b.s();
  std::size_t k = s.derived.size();
  for (std::size_t i = 0; i < s.derived.size() && k == s.derived.size(); ++i)
    if (s.derived[i].rank != kNone && s.derived[i].packed) k = i;
  ASSERT_LT(k, s.derived.size()) << "no root-only packed copy-back operand";
  std::ostringstream out;
  write_schedule_json(s, out);
  const std::string text = out.str();
  auto back = read_schedule_json(text, "chunks.json");
  ASSERT_TRUE(back.ok()) << back.diagnostics().to_string();
  EXPECT_EQ(back->derived, s.derived);
  std::ostringstream again;
  write_schedule_json(back.value(), again);
  EXPECT_EQ(again.str(), text);
  const DerivedOperand& d = s.derived[k];
  const std::string ptr = "chunks.json: /derived/" + std::to_string(k);
  const std::string key = "\"rank\":" + std::to_string(d.rank) +
                          ",\"into\":" + std::to_string(d.into) + ",\"packed\":true";
  ASSERT_NE(text.find(key), std::string::npos) << key;
  const auto errors_with = [&](const std::string& replacement) {
    std::string bad = text;
    bad.replace(bad.find(key), key.size(), replacement);
    auto r = read_schedule_json(bad, "chunks.json");
    EXPECT_FALSE(r.ok()) << replacement;
    return r.ok() ? std::string() : r.diagnostics().to_string();
  };
  EXPECT_NE(errors_with("\"rank\":9,\"into\":" + std::to_string(d.into) + ",\"packed\":true")
                .find(ptr + "/rank: expected a rank below the world size (4), got 9"),
            std::string::npos);
  EXPECT_NE(errors_with("\"rank\":" + std::to_string(d.rank) + ",\"into\":99999,\"packed\":true")
                .find(ptr + "/into: expected a buffer index"),
            std::string::npos);
  EXPECT_NE(errors_with("\"rank\":" + std::to_string(d.rank) + ",\"packed\":true")
                .find(ptr + "/packed: expected \"into\" with packed, got none"),
            std::string::npos);
  EXPECT_NE(errors_with("\"rank\":" + std::to_string(d.rank) +
                        ",\"into\":" + std::to_string(d.into) + ",\"packed\":3")
                .find(ptr + "/packed"),
            std::string::npos);
  EXPECT_NE(errors_with("\"rank\":\"one\",\"into\":" + std::to_string(d.into) + ",\"packed\":true")
                .find(ptr + "/rank"),
            std::string::npos);
}

}  // namespace
}  // namespace zerosim
