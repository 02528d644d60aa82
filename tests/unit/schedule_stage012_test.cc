// Worked examples G2–G8 of deepspeed_zero.md §9 as schedules: exact collective sequences (kind,
// element counts, dtype, reduce op, destination, phase), IPG buffer indices, flush numbering and
// the per-rank grads_in_partition sizes carried by the rank roles.
#include <gtest/gtest.h>

#include "schedule_stage012_testlib.h"

namespace zerosim {
namespace {

using namespace testlib;  // NOLINT: test-local helpers

const std::vector<Elements> kG1 = {5, 3, 7};

std::vector<Coll> backward_colls(const Schedule& s, std::uint32_t step = 0) {
  return collectives(s, [step](const Op& op) {
    return op.step == step && (op.phase == Phase::Backward || op.phase == Phase::BoundaryReduce ||
                               op.phase == Phase::Epilogue);
  });
}

bool is_gip(const Buffer& b) { return b.spec_id == "T3" && b.name.find("#2") == std::string::npos; }

struct BucketCopy {
  std::uint32_t param, ipg, flush;
  bool operator==(const BucketCopy&) const = default;
};

std::vector<BucketCopy> bucket_copies(const Schedule& s) {
  std::vector<BucketCopy> out;
  for (const Op& op : s.ops)
    if (op.kind == OpKind::CopyToBucket) {
      const std::string& name = s.buffers[op.dst.buffer].name;
      out.push_back({op.param, name == "ipg[1]" ? 1u : 0u, op.bucket});
    }
  return out;
}

TEST(ScheduleStage012Golden, G2Stage2OverlapTwoBuffers) {
  auto b = build(make_model(kG1, {2, 1, 0}), zero_config(2, 8, true), 4);
  ASSERT_TRUE(b.schedule.ok());
  const Schedule& s = b.s();
  EXPECT_EQ(backward_colls(s), (std::vector<Coll>{AR(7, Phase::Backward), AR(8, Phase::Epilogue)}));
  // p2 into buf0; flush #0 swaps to buf1 where p1 and p0 land; the epilogue flushes buf1.
  EXPECT_EQ(bucket_copies(s), (std::vector<BucketCopy>{{2, 0, 0}, {1, 1, 1}, {0, 1, 1}}));
  std::size_t ipg_buffers = 0;
  for (const Buffer& buf : s.buffers)
    if (buf.spec_id == "T2") {
      ++ipg_buffers;
      EXPECT_EQ(buf.numel, 8u);
      EXPECT_EQ(buf.dtype, DType::Float16);
    }
  EXPECT_EQ(ipg_buffers, 2u);
  // The flushes' collectives run on the reduction stream.
  for (const Op& op : s.ops)
    if (op.kind == OpKind::Collective && op.phase != Phase::Init && op.phase != Phase::Step &&
        op.phase != Phase::PostStep) {
      EXPECT_EQ(op.stream, Stream::Reduce);
    }
  // grads_in_partition: 5/8/7/7; padding zeros only on rank 3; T6 copies where the list has 2
  // tensors.
  const std::vector<Elements> gip = {5, 8, 7, 7}, pad = {0, 0, 0, 1}, t6 = {0, 4, 0, 4};
  for (std::uint32_t r = 0; r < 4; ++r) {
    EXPECT_EQ(buffers_for_rank(s, r, is_gip), gip[r]) << "rank " << r;
    EXPECT_EQ(buffers_for_rank(s, r, [](const Buffer& x) { return x.spec_id == "T4"; }), pad[r])
        << "rank " << r;
    EXPECT_EQ(buffers_for_rank(s, r, [](const Buffer& x) { return x.spec_id == "T6"; }), t6[r])
        << "rank " << r;
  }
  EXPECT_EQ(step_collectives(s), (std::vector<Coll>{AR(7, Phase::Backward), AR(8, Phase::Epilogue),
                                                    OVERFLOW_AR(), NORM_AR(), AG(16, 4)}));
}

TEST(ScheduleStage012Golden, G2WithoutOverlapUsesOneBufferOnTheComputeStream) {
  auto b = build(make_model(kG1, {2, 1, 0}), zero_config(2, 8, false), 4);
  ASSERT_TRUE(b.schedule.ok());
  const Schedule& s = b.s();
  EXPECT_EQ(backward_colls(s), (std::vector<Coll>{AR(7, Phase::Backward), AR(8, Phase::Epilogue)}));
  EXPECT_EQ(bucket_copies(s), (std::vector<BucketCopy>{{2, 0, 0}, {1, 0, 1}, {0, 0, 1}}));
  std::size_t ipg_buffers = 0, syncs = 0;
  for (const Buffer& buf : s.buffers) ipg_buffers += buf.spec_id == "T2";
  for (const Op& op : s.ops) {
    syncs += op.kind == OpKind::Sync;
    if (op.kind == OpKind::Collective) {
      EXPECT_EQ(op.stream, Stream::Compute);
    }
  }
  EXPECT_EQ(ipg_buffers, 1u);
  EXPECT_EQ(syncs, 0u);
}

TEST(ScheduleStage012Golden, G2OverlapMakesComputeWaitForThePreviousFlush) {
  auto b = build(make_model(kG1, {2, 1, 0}), zero_config(2, 8, true), 4);
  ASSERT_TRUE(b.schedule.ok());
  const Schedule& s = b.s();
  // At the second flush the compute stream waits on the reduce stream, whose last op belongs to
  // flush #0; the epilogue ends with a device synchronize.
  std::vector<std::uint32_t> flush0_reduce_ops;
  bool waited = false, synced = false;
  for (std::uint32_t i = 0; i < s.ops.size(); ++i) {
    const Op& op = s.ops[i];
    if (op.stream == Stream::Reduce && op.bucket == 0) flush0_reduce_ops.push_back(i);
    if (op.kind == OpKind::Marker && op.stream == Stream::Compute && op.phase == Phase::Epilogue &&
        op.deps.size() == 1 && s.ops[op.deps[0]].stream == Stream::Reduce)
      waited = true;
    if (op.kind == OpKind::Sync && op.phase == Phase::Epilogue) synced = true;
  }
  EXPECT_FALSE(flush0_reduce_ops.empty());
  EXPECT_TRUE(waited);
  EXPECT_TRUE(synced);
}

TEST(ScheduleStage012Golden, G3Variants) {
  {
    auto ds = zero_config(2, 8, true);
    ds.zero.use_multi_rank_bucket_allreduce = false;
    auto b = build(make_model(kG1, {2, 1, 0}), ds, 4);
    ASSERT_TRUE(b.schedule.ok());
    EXPECT_EQ(backward_colls(b.s()),
              (std::vector<Coll>{RD(2, 4, Phase::Backward), RD(3, 3, Phase::Backward),
                                 RD(1, 4, Phase::Epilogue), RD(0, 4, Phase::Epilogue)}));
    std::size_t syncs = 0;  // overlap: a device sync before every reduce, plus the epilogue's
    for (const Op& op : b.s().ops) syncs += op.kind == OpKind::Sync;
    EXPECT_EQ(syncs, 5u);
  }
  {
    auto ds = zero_config(2, 8, true);
    ds.zero.reduce_scatter = false;
    auto b = build(make_model(kG1, {2, 1, 0}), ds, 4);
    ASSERT_TRUE(b.schedule.ok());
    EXPECT_EQ(backward_colls(b.s()),
              (std::vector<Coll>{AR(7, Phase::Backward), AR(8, Phase::Epilogue)}));
    // In place on the IPG buffers: buf0 then buf1.
    std::vector<std::string> srcs;
    for (const Op& op : b.s().ops)
      if (op.kind == OpKind::Collective &&
          (op.phase == Phase::Backward || op.phase == Phase::Epilogue))
        srcs.push_back(b.s().buffers[op.src.buffer].name);
    EXPECT_EQ(srcs, (std::vector<std::string>{"ipg[0]", "ipg[1]"}));
  }
  {
    auto ds = zero_config(2, 8, true);
    ds.zero.contiguous_gradients = false;
    auto b = build(make_model(kG1, {2, 1, 0}), ds, 4);
    ASSERT_TRUE(b.schedule.ok());
    EXPECT_EQ(backward_colls(b.s()),
              (std::vector<Coll>{AR(7, Phase::Backward), AR(8, Phase::Epilogue)}));
    for (const Buffer& buf : b.s().buffers) {
      EXPECT_NE(buf.spec_id, "T2");
      EXPECT_NE(buf.spec_id, "T3");
    }
    EXPECT_TRUE(bucket_copies(b.s()).empty());
    // Owned params keep their full autograd grads: rank 1 keeps p1 and p0 (8), rank 3 keeps p2 (7).
    auto kept = [](const Buffer& x) {
      return x.name.find("kept autograd grads") != std::string::npos;
    };
    EXPECT_EQ(buffers_for_rank(b.s(), 1, kept), 8u);
    EXPECT_EQ(buffers_for_rank(b.s(), 3, kept), 7u);
    // Flush #0 reduces p2.grad directly, flush #1 a flattened copy of [p1, p0].
    std::vector<std::uint32_t> temps;
    for (const Op& op : b.s().ops)
      if (op.kind == OpKind::Collective && op.phase != Phase::Init && op.phase != Phase::Step &&
          op.phase != Phase::PostStep)
        temps.push_back(b.s().buffers[op.src.buffer].name.rfind("reduction temp", 0) == 0 ? 1u
                                                                                          : 0u);
    EXPECT_EQ(temps, (std::vector<std::uint32_t>{0, 1}));
  }
}

TEST(ScheduleStage012Golden, G4Stage1GradAccumReducesOnceInGroupOrder) {
  auto ds = zero_config(1, 8, false);
  ds.grad_accum_steps = 2;
  auto b = build(make_model(kG1, {2, 1, 0}), ds, 4);
  ASSERT_TRUE(b.schedule.ok());
  const Schedule& s = b.s();
  EXPECT_EQ(
      collectives(s, [](const Op& op) { return op.micro_step == 0 && op.phase != Phase::Init; })
          .size(),
      0u);
  EXPECT_EQ(backward_colls(s),
            (std::vector<Coll>{AR(8, Phase::BoundaryReduce), AR(7, Phase::Epilogue)}));
  // The parameter-order pass: p0, p1 into the bucket, p2 after the flush.
  EXPECT_EQ(bucket_copies(s), (std::vector<BucketCopy>{{0, 0, 0}, {1, 0, 0}, {2, 0, 1}}));
  // One IPG buffer, allocated at the first hook of micro-step 0 and kept until the boundary
  // epilogue.
  std::vector<std::pair<OpKind, std::uint32_t>> ipg_events;
  for (const Op& op : s.ops)
    if ((op.kind == OpKind::Alloc || op.kind == OpKind::Free) &&
        s.buffers[op.buffer].spec_id == "T2")
      ipg_events.emplace_back(op.kind, op.micro_step);
  EXPECT_EQ(ipg_events,
            (std::vector<std::pair<OpKind, std::uint32_t>>{{OpKind::Alloc, 0}, {OpKind::Free, 1}}));
  // The full LP gradient (15 elements) is resident after micro-step 0's backward.
  const auto live = live_bytes(s, 0, [](const Buffer& x) { return x.spec_id == "T1"; });
  std::size_t first_micro1 = 0;
  while (s.ops[first_micro1].micro_step == 0 || s.ops[first_micro1].phase == Phase::Init)
    ++first_micro1;
  EXPECT_EQ(live[first_micro1 - 1], 15u * 2);
}

TEST(ScheduleStage012Golden, G4WithOverlapBucketsInBackwardOrder) {
  auto ds = zero_config(1, 8, true);
  ds.grad_accum_steps = 2;
  auto b = build(make_model(kG1, {2, 1, 0}), ds, 4);
  ASSERT_TRUE(b.schedule.ok());
  EXPECT_EQ(backward_colls(b.s()),
            (std::vector<Coll>{AR(7, Phase::Backward), AR(8, Phase::Epilogue)}));
  for (const Op& op : b.s().ops)
    if (op.kind == OpKind::Collective && op.phase == Phase::Backward) {
      EXPECT_EQ(op.micro_step, 1u);
    }
  std::size_t ipg_buffers = 0;
  for (const Buffer& buf : b.s().buffers) ipg_buffers += buf.spec_id == "T2";
  EXPECT_EQ(ipg_buffers, 2u);
}

TEST(ScheduleStage012Golden, G5Stage2GradAccumReducesEveryMicroStep) {
  auto ds = zero_config(2, 8, true);
  ds.grad_accum_steps = 2;
  auto b = build(make_model(kG1, {2, 1, 0}), ds, 4);
  ASSERT_TRUE(b.schedule.ok());
  const Schedule& s = b.s();
  auto in_micro = [&](std::uint32_t m) {
    return collectives(s, [m](const Op& op) {
      return op.micro_step == m && op.phase != Phase::Init && op.phase != Phase::Step &&
             op.phase != Phase::PostStep;
    });
  };
  EXPECT_EQ(in_micro(0), (std::vector<Coll>{AR(7, Phase::Backward), AR(8, Phase::Epilogue)}));
  EXPECT_EQ(in_micro(1), (std::vector<Coll>{AR(7, Phase::Backward), AR(8, Phase::Epilogue)}));
  // Peak on rank 1 inside micro-step 1: T3 #1 (8) + T3 #2 (8) + two IPG buffers (16), fp16.
  const std::uint32_t role1 = s.role_of(1);
  auto micro1 = [](const Op& op) {
    return op.micro_step == 1 && op.phase != Phase::Step && op.phase != Phase::PostStep;
  };
  auto t2t3 = [](const Buffer& x) { return x.spec_id == "T2" || x.spec_id == "T3"; };
  EXPECT_EQ(peak_bytes(s, role1, micro1, t2t3), (8u + 8u + 16u) * 2);
  // The second grads_in_partition is gone after micro-step 1's epilogue; the first lives to step().
  auto second = [](const Buffer& x) {
    return x.spec_id == "T3" && x.name.find("#2") != std::string::npos;
  };
  const auto live2 = live_bytes(s, role1, second);
  const auto live1 = live_bytes(s, role1, is_gip);
  for (std::size_t i = 0; i < s.ops.size(); ++i)
    if (s.ops[i].phase == Phase::Step && s.ops[i].kind == OpKind::Marker &&
        s.ops[i].label == "step") {
      EXPECT_EQ(live2[i], 0u);
      EXPECT_EQ(live1[i], 8u * 2);
    }
}

TEST(ScheduleStage012Golden, G6ExtraLargeParamAfterAnEmptyFlush) {
  auto b = build(make_model({10}), zero_config(2, 4, true), 2);
  ASSERT_TRUE(b.schedule.ok());
  const Schedule& s = b.s();
  EXPECT_EQ(backward_colls(s), (std::vector<Coll>{AR(6, Phase::Epilogue), AR(4, Phase::Epilogue)}));
  EXPECT_TRUE(bucket_copies(s).empty());  // extra-large: reduced from its own storage
  for (const Op& op : s.ops)
    if (op.kind == OpKind::Collective && op.phase == Phase::Epilogue) {
      EXPECT_EQ(op.bucket, 1u);  // flush #0 was empty
    }
  EXPECT_EQ(buffers_for_rank(s, 0, is_gip), 10u);
  EXPECT_EQ(buffers_for_rank(s, 1, is_gip), 10u);
  EXPECT_EQ(step_collectives(s).back(), AG(12, 6));
  {
    auto ds = zero_config(2, 4, true);
    ds.zero.use_multi_rank_bucket_allreduce = false;
    auto v = build(make_model({10}), ds, 2);
    ASSERT_TRUE(v.schedule.ok());
    EXPECT_EQ(backward_colls(v.s()),
              (std::vector<Coll>{RD(0, 6, Phase::Epilogue), RD(1, 4, Phase::Epilogue)}));
  }
  {
    auto ds = zero_config(2, 4, true);
    ds.zero.reduce_scatter = false;
    auto v = build(make_model({10}), ds, 2);
    ASSERT_TRUE(v.schedule.ok());
    EXPECT_EQ(backward_colls(v.s()), (std::vector<Coll>{AR(10, Phase::Epilogue)}));
  }
}

TEST(ScheduleStage012Golden, G7ExtraLargeParamInTheMiddle) {
  auto b = build(make_model({3, 10, 2}, {2, 1, 0}), zero_config(2, 4, true), 2);
  ASSERT_TRUE(b.schedule.ok());
  EXPECT_EQ(backward_colls(b.s()),
            (std::vector<Coll>{AR(2, Phase::Backward), AR(5, Phase::Backward),
                               AR(5, Phase::Backward), AR(3, Phase::Epilogue)}));
  // p2 in buf0, p1 extra-large (not copied), p0 back in buf0 after the second swap.
  EXPECT_EQ(bucket_copies(b.s()), (std::vector<BucketCopy>{{2, 0, 0}, {0, 0, 2}}));
  EXPECT_EQ(buffers_for_rank(b.s(), 0, is_gip), 13u);
  EXPECT_EQ(buffers_for_rank(b.s(), 1, is_gip), 12u);
}

TEST(ScheduleStage012Golden, G8OneParamOverThreePartitions) {
  auto b = build(make_model({10}), zero_config(2, 500000000, false), 4);
  ASSERT_TRUE(b.schedule.ok());
  EXPECT_EQ(backward_colls(b.s()), (std::vector<Coll>{AR(10, Phase::Epilogue)}));
  const std::vector<Elements> gip = {10, 10, 10, 0}, pad = {0, 0, 2, 4};
  for (std::uint32_t r = 0; r < 4; ++r) {
    EXPECT_EQ(buffers_for_rank(b.s(), r, is_gip), gip[r]) << "rank " << r;
    EXPECT_EQ(buffers_for_rank(b.s(), r, [](const Buffer& x) { return x.spec_id == "T4"; }),
              pad[r]);
  }
  auto small = build(make_model({10}), zero_config(2, 3, false), 4);
  ASSERT_TRUE(small.schedule.ok());
  EXPECT_EQ(
      backward_colls(small.s()),
      (std::vector<Coll>{AR(4, Phase::Epilogue), AR(4, Phase::Epilogue), AR(2, Phase::Epilogue)}));
  // Every collective is issued by the one shared program, so rank 3 joins all of them.
  EXPECT_EQ(small.s().roles.size(),
            3u);  // ranks 0-1 (full owners), rank 2 (2 + padding), rank 3 (padding)
}

}  // namespace
}  // namespace zerosim
