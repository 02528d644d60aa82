// Collective log (schedule_io.h, spec in scenarios/README.md "Collective log"): the exact lines for
// a hand-built 2-rank schedule with two rank roles, the rank filter, and that ranks of different
// roles log the same collectives.
#include <gtest/gtest.h>

#include <sstream>

#include "zerosim/schedule_io.h"

namespace zerosim {
namespace {

Op coll(CollectiveKind k, Elements numel, Elements out, DType dt, ReduceOp r, Phase phase,
        std::uint32_t step, std::uint32_t micro) {
  Op o;
  o.kind = OpKind::Collective;
  o.collective = k;
  o.numel = numel;
  o.out_numel = out;
  o.dtype = dt;
  o.reduce_op = r;
  o.phase = phase;
  o.step = step;
  o.micro_step = micro;
  return o;
}

// Two ranks in two roles (different slot values); every collective kind once, interleaved with
// non-collective ops that must not be logged; two micro-steps.
Schedule two_rank_schedule() {
  Schedule s;
  s.meta.world = 2;
  s.meta.gpus_per_node = 2;
  s.meta.grad_accum = 2;
  s.meta.slot_names = {"owned"};
  s.comms = {{0, 2, 1}};
  s.buffers.push_back({"ipg[0]", "T2", BufferCategory::CommBucket, MemoryPool::Device,
                       DType::Float16, 8, kNone, false});
  s.roles = {{{{0, 0}}, 0, {5}}, {{{1, 1}}, 1, {3}}};
  Op bc = coll(CollectiveKind::Broadcast, 8, 8, DType::Float16, ReduceOp::None, Phase::Init, 0, 0);
  bc.root = 0;
  s.ops.push_back(bc);
  Op alloc;
  alloc.kind = OpKind::Alloc;
  alloc.buffer = 0;
  s.ops.push_back(alloc);
  Op ar =
      coll(CollectiveKind::AllReduce, 8, 8, DType::Float16, ReduceOp::Sum, Phase::Backward, 0, 0);
  ar.bucket = 0;
  s.ops.push_back(ar);
  Op rd = coll(CollectiveKind::Reduce, 4, 4, DType::BFloat16, ReduceOp::Sum, Phase::Backward, 0, 1);
  rd.root = 1;
  rd.bucket = 1;
  s.ops.push_back(rd);
  Op copy;
  copy.kind = OpKind::Copy;
  copy.slot = 0;
  s.ops.push_back(copy);
  s.ops.push_back(
      coll(CollectiveKind::AllReduce, 1, 1, DType::UInt8, ReduceOp::Max, Phase::Step, 0, 1));
  s.ops.push_back(coll(CollectiveKind::ReduceScatter, 16, 8, DType::Float32, ReduceOp::Sum,
                       Phase::Epilogue, 0, 1));
  s.ops.push_back(
      coll(CollectiveKind::AllGather, 4, 8, DType::Float16, ReduceOp::None, Phase::PostStep, 0, 1));
  Op free_op;
  free_op.kind = OpKind::Free;
  free_op.buffer = 0;
  s.ops.push_back(free_op);
  return s;
}

const char* const kRankTail[] = {
    R"("step":0,"micro_step":0,"phase":"init","op":"broadcast","numel":8,"out_numel":8,"dtype":"float16","group_size":2,"src":0})",
    R"("step":0,"micro_step":0,"phase":"backward","op":"all_reduce","numel":8,"out_numel":8,"dtype":"float16","group_size":2,"reduce_op":"sum","bucket":0})",
    R"("step":0,"micro_step":1,"phase":"backward","op":"reduce","numel":4,"out_numel":4,"dtype":"bfloat16","group_size":2,"reduce_op":"sum","dst":1,"bucket":1})",
    R"("step":0,"micro_step":1,"phase":"step","op":"all_reduce","numel":1,"out_numel":1,"dtype":"uint8","group_size":2,"reduce_op":"max"})",
    R"("step":0,"micro_step":1,"phase":"epilogue","op":"reduce_scatter_tensor","numel":16,"out_numel":8,"dtype":"float32","group_size":2,"reduce_op":"sum"})",
    R"("step":0,"micro_step":1,"phase":"post_step","op":"all_gather_into_tensor","numel":4,"out_numel":8,"dtype":"float16","group_size":2})",
};

std::string expected_for(std::uint32_t rank) {
  std::string out;
  for (const char* tail : kRankTail) out += "{\"rank\":" + std::to_string(rank) + "," + tail + "\n";
  return out;
}

TEST(CollectiveLog, ExactLinesForEveryRankInRankThenProgramOrder) {
  std::ostringstream os;
  auto r = write_collective_log(two_rank_schedule(), os);
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  EXPECT_EQ(r.value(), 12u);
  EXPECT_EQ(os.str(), expected_for(0) + expected_for(1));
}

TEST(CollectiveLog, RanksOfDifferentRolesLogTheSameCollectives) {
  const Schedule s = two_rank_schedule();
  ASSERT_NE(s.role_of(0), s.role_of(1));
  ASSERT_NE(s.op_elements(s.ops[4], 0), s.op_elements(s.ops[4], 1));
  std::ostringstream r0, r1;
  ASSERT_TRUE(write_collective_log(s, r0, {{0}}).ok());
  ASSERT_TRUE(write_collective_log(s, r1, {{1}}).ok());
  std::string a = r0.str(), b = r1.str();
  EXPECT_EQ(a, expected_for(0));
  // Identical once the rank field is dropped.
  for (auto* text : {&a, &b}) {
    std::string stripped;
    std::istringstream in(*text);
    for (std::string line; std::getline(in, line);) stripped += line.substr(line.find(',')) + "\n";
    *text = stripped;
  }
  EXPECT_EQ(a, b);
}

TEST(CollectiveLog, RankFilterIsSortedAndDeduplicated) {
  std::ostringstream os;
  auto r = write_collective_log(two_rank_schedule(), os, {{1, 0, 1}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value(), 12u);
  EXPECT_EQ(os.str(), expected_for(0) + expected_for(1));
}

TEST(CollectiveLog, RankOutsideTheWorldIsAnErrorAndWritesNothing) {
  std::ostringstream os;
  auto r = write_collective_log(two_rank_schedule(), os, {{0, 2}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.diagnostics().to_string(), "--ranks: expected ranks 0..1, got 2\n");
  EXPECT_EQ(os.str(), "");
}

TEST(CollectiveLog, ScheduleWithoutCollectivesWritesNothing) {
  Schedule s;
  s.meta.world = 4;
  s.ops.resize(3);
  std::ostringstream os;
  auto r = write_collective_log(s, os);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value(), 0u);
  EXPECT_EQ(os.str(), "");
}

TEST(CollectiveLog, LinesScaleWithWorldFromOneProgram) {
  Schedule s = two_rank_schedule();
  s.meta.world = 64;
  s.comms = {{0, 64, 1}};
  s.roles = {{{{0, 63}}, 0, {4}}};
  std::ostringstream os;
  auto r = write_collective_log(s, os);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value(), 64u * 6u);
  const std::string text = os.str();
  EXPECT_EQ(static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')), 64u * 6u);
  std::string last = expected_for(63);  // the same lines, on the 64-rank world communicator
  for (std::size_t at = last.find("\"group_size\":2"); at != std::string::npos;
       at = last.find("\"group_size\":2", at))
    last.replace(at, 14, "\"group_size\":64");
  EXPECT_EQ(text.substr(text.size() - last.size()), last);
}

TEST(CollectiveLog, RootIsARankOfTheCallersGroup) {
  Schedule s = two_rank_schedule();  // the reduce (op 3) to index 1, the broadcast from index 0
  s.meta.world = 4;
  s.comms = {{0, 4, 1}, {0, 2, 2}};  // communicator 1: {0, 2} and {1, 3}
  s.roles = {{{{0, 3}}, 0, {4}}};
  s.ops[0].comm = 1;
  s.ops[3].comm = 1;
  std::ostringstream os;
  CollectiveLogOptions only;
  only.ranks = {3};
  ASSERT_TRUE(write_collective_log(s, os, only).ok());
  const std::string text = os.str();
  EXPECT_NE(text.find("\"group_size\":2,\"src\":1}"), std::string::npos) << text;
  EXPECT_NE(text.find("\"group_size\":2,\"reduce_op\":\"sum\",\"dst\":3,"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace zerosim
