// ScheduleGraph (schedule_graph.h): the one lowering every consumer runs. Lanes, the dependency
// CSR, Sync gates, communicator order and memory ops of a hand-built schedule; the timing role; and
// that every shipped builder's schedule lowers to a graph consistent with its ops.
#include "zerosim/schedule_graph.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
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

// The op loop tests each op with one message-free expression and only then asks check_op what is
// wrong: each broken field must be refused (the fast test accepts no broken op) and named at its op
// (check_op reports what the fast test refused; the lowering's guard would say "internal error").
TEST(ScheduleGraph, FastCheckAndCheckOpAgreeOnEveryOpRule) {
  struct Case {
    const char* what;
    void (*mutate)(Schedule&);
  };
  const Case cases[] = {
      {"buffer on a compute op", [](Schedule& s) { s.ops[0].buffer = 0; }},
      {"alloc without a buffer", [](Schedule& s) { s.ops[7].buffer = kNone; }},
      {"alloc of an unknown buffer", [](Schedule& s) { s.ops[7].buffer = 3; }},
      {"executor-owned buffer", [](Schedule& s) { s.buffers[0].executor_owned = true; }},
      {"slot out of range", [](Schedule& s) { s.ops[0].slot = 5; }},
      {"stream out of range", [](Schedule& s) { s.ops[0].stream = static_cast<Stream>(200); }},
      {"step beyond meta", [](Schedule& s) { s.ops[4].step = 3; }},
      {"micro-step beyond meta", [](Schedule& s) { s.ops[4].micro_step = 9; }},
      {"update on a compute op", [](Schedule& s) { s.ops[0].update = 0; }},
      {"dep not earlier", [](Schedule& s) { s.ops[1].deps = {1}; }},
      {"unknown communicator", [](Schedule& s) { s.ops[1].comm = 9; }},
      {"reducing kind without reduce_op", [](Schedule& s) { s.ops[1].reduce_op = ReduceOp::None; }},
      {"reduce_op on an all-gather", [](Schedule& s) { s.ops[2].reduce_op = ReduceOp::Sum; }},
      {"root on an all-gather", [](Schedule& s) { s.ops[2].root = 0; }},
      {"add on a compute op", [](Schedule& s) { s.ops[0].copy_mode = CopyMode::Add; }},
      {"copy mode out of range",
       [](Schedule& s) { s.ops[0].copy_mode = static_cast<CopyMode>(200); }},
      {"scale on a compute op", [](Schedule& s) { s.ops[0].scale = 2.0; }},
      {"negative scale on a sum", [](Schedule& s) { s.ops[1].scale = -1.0; }},
      {"zero fill on a compute op", [](Schedule& s) { s.ops[0].zero_fill = true; }},
  };
  for (const Case& c : cases) {
    Schedule s = graph_schedule();
    c.mutate(s);
    auto g = lower_schedule(s, "f.json");
    ASSERT_FALSE(g.ok()) << c.what << ": the fast check accepted it";
    const std::string text = g.diagnostics().to_string();
    EXPECT_EQ(text.find("internal error"), std::string::npos) << c.what << ": " << text;
    for (const Diagnostic& d : g.diagnostics().items())
      EXPECT_EQ(d.pointer.rfind("/ops/", 0), 0u) << c.what << ": " << text;
  }
}

// simulate()'s workspace lowers every schedule into one graph whose per-op arrays keep their
// storage (and their old values) from call to call: each lowering writes all of them.
TEST(ScheduleGraph, ReusedGraphEqualsAFreshLowering) {
  Schedule big = graph_schedule();
  Schedule small = graph_schedule();
  small.ops.resize(4);  // compute, two collectives, the Sync
  ScheduleGraph reused;
  for (const Schedule* s : {&big, &small, &big}) {
    ASSERT_FALSE(lower_schedule_into(*s, reused).has_errors());
    auto fresh = lower_schedule(*s);
    ASSERT_TRUE(fresh.ok()) << fresh.diagnostics().to_string();
    EXPECT_EQ(reused.op_count, fresh.value().op_count);
    EXPECT_EQ(reused.dep_offsets, fresh.value().dep_offsets);
    EXPECT_EQ(reused.deps, fresh.value().deps);
    EXPECT_EQ(reused.gate, fresh.value().gate);
    EXPECT_EQ(reused.prev_call, fresh.value().prev_call);
    EXPECT_EQ(reused.lanes, fresh.value().lanes);
    EXPECT_EQ(reused.memory_ops, fresh.value().memory_ops);
    EXPECT_EQ(reused.collectives, fresh.value().collectives);
  }
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
