// ScheduleGraph (schedule_graph.h): the one lowering every consumer runs. Lanes, the dependency
// CSR, Sync gates, communicator order and memory ops of a hand-built schedule; the timing role; and
// that every shipped builder's schedule lowers to a graph consistent with its ops.
#include "zerosim/schedule_graph.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "simulator_testlib.h"

namespace zerosim {
namespace {

using namespace simtest;  // NOLINT: test-local helpers

// compute F0 | reduce AR(world) dep F0 | gather AG(world) | Sync | compute F4 | gather AG(pairs) |
// reduce AR(world) | alloc/free.
Schedule graph_schedule() {
  Schedule s = tiny_schedule(4);
  s.comms.push_back({0, 2, 1});  // communicator 1: the pairs {0, 1}, {2, 3}
  s.buffers = {buffer("b", BufferCategory::Temp, 8)};
  Op sync = make_op(OpKind::Sync);
  s.ops = {compute(OpKind::Forward, 1e9),
           with_deps(collective(CollectiveKind::AllReduce, 8, 8, 0, Stream::Reduce), {0}),
           collective(CollectiveKind::AllGather, 2, 8, 0, Stream::Gather),
           sync,
           compute(OpKind::Backward, 1e9),
           collective(CollectiveKind::AllGather, 2, 4, 1, Stream::Gather),
           with_deps(collective(CollectiveKind::AllReduce, 8, 8, 0, Stream::Reduce), {4, 2}),
           alloc(0),
           free_op(0)};
  return s;
}

TEST(ScheduleGraph, LanesDepsGatesAndCommunicatorOrder) {
  const Schedule s = graph_schedule();
  auto g = lower_schedule(s);
  ASSERT_TRUE(g.ok()) << g.diagnostics().to_string();
  const ScheduleGraph& graph = g.value();
  EXPECT_EQ(graph.op_count, 9u);
  using V = std::vector<std::uint32_t>;
  EXPECT_EQ(graph.lanes[static_cast<std::size_t>(Stream::Compute)], (V{0, 3, 4, 7, 8}));
  EXPECT_EQ(graph.lanes[static_cast<std::size_t>(Stream::Reduce)], (V{1, 6}));
  EXPECT_EQ(graph.lanes[static_cast<std::size_t>(Stream::Gather)], (V{2, 5}));
  EXPECT_TRUE(graph.lanes[static_cast<std::size_t>(Stream::Host)].empty());
  ASSERT_EQ(graph.dep_offsets.size(), 10u);
  EXPECT_EQ(V(graph.deps_of(1).begin(), graph.deps_of(1).end()), (V{0}));
  EXPECT_EQ(V(graph.deps_of(6).begin(), graph.deps_of(6).end()), (V{4, 2}));
  EXPECT_TRUE(graph.deps_of(5).empty());
  // The latest Sync before each op (the Sync itself waits on the one before it: none).
  EXPECT_EQ(graph.gate, (V{kNone, kNone, kNone, kNone, 3, 3, 3, 3, 3}));
  // Per communicator: 1 -> 2 -> 6 on the world, 5 alone on the pairs.
  EXPECT_EQ(graph.prev_call, (V{kNone, kNone, 1, kNone, kNone, kNone, 2, kNone, kNone}));
  EXPECT_EQ(graph.collectives, (V{1, 2, 5, 6}));
  EXPECT_EQ(graph.memory_ops, (V{7, 8}));
  EXPECT_GT(graph.footprint_bytes(), sizeof(ScheduleGraph));
}

TEST(ScheduleGraph, TimingRoleIsTheMaximumPerSlot) {
  Schedule s = two_role_schedule();
  auto g = lower_schedule(s);
  ASSERT_TRUE(g.ok()) << g.diagnostics().to_string();
  ASSERT_EQ(g.value().max_slots.size(), s.meta.slot_names.size());
  for (std::size_t k = 0; k < s.meta.slot_names.size(); ++k) {
    Elements expect = 0;
    for (const RankRole& r : s.roles) expect = std::max(expect, r.slots[k]);
    EXPECT_EQ(g.value().max_slots[k], expect) << "slot " << k;
  }
}

TEST(ScheduleGraph, EveryProblemIsReportedOnceWithItsPointer) {
  Schedule s = graph_schedule();
  s.ops[1].deps = {5};  // a dep that is not earlier
  s.ops[2].root = 1;    // a root for an all-gather
  s.ops[4].step = 3;    // beyond meta.steps
  s.ops[7].buffer = 4;  // no such buffer: later lifetimes are not echoed
  s.ops[6].comm = 9;    // no such communicator
  s.ops[6].reduce_op = ReduceOp::None;
  auto g = lower_schedule(s, "f.json");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.diagnostics().to_string(),
            "f.json: /ops/1/deps/0: expected an earlier op index 0..0, got 5\n"
            "f.json: /ops/2/root: expected no root for all_gather_into_tensor, got 1\n"
            "f.json: /ops/4/step: expected a step below 1, got 3\n"
            "f.json: /ops/6/comm: expected a communicator index 0..1, got 9\n"
            "f.json: /ops/6: expected \"reduce_op\" (\"sum\" or \"max\") for all_reduce, got none\n"
            "f.json: /ops/7/buffer: expected a buffer index 0..0, got 4\n");
}

TEST(ScheduleGraph, MetaProblemsStopTheLowering) {
  Schedule s = graph_schedule();
  s.meta.world = 0;
  auto g = lower_schedule(s, "f.json");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.diagnostics().to_string(),
            "f.json: /meta/world: expected a world size of at least 1, got 0\n");
}

TEST(ScheduleGraph, RanksOutsideTheWorldAreRefused) {
  Schedule s = tiny_schedule(4);
  s.roles[0].ranks = {{0, 4}};
  auto g = lower_schedule(s, "f.json");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.diagnostics().to_string(),
            "f.json: /roles: expected ranks below the world size 4, got ranks up to 4\n");
}

}  // namespace
}  // namespace zerosim
