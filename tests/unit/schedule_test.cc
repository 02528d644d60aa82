// Schedule IR basics (schedule.h): enum names, DeepSpeed version parsing, role and slot lookups,
// lower_schedule's consistency rules and build_schedule's input checks.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "schedule_stage012_testlib.h"
#include "zerosim/schedule_graph.h"

namespace zerosim {
namespace {

using namespace testlib;  // NOLINT: test-local helpers

TEST(ScheduleIr, EnumNames) {
  EXPECT_EQ(stream_name(Stream::Compute), "compute");
  EXPECT_EQ(stream_name(Stream::Reduce), "reduce");
  EXPECT_EQ(stream_name(Stream::Gather), "gather");
  EXPECT_EQ(stream_name(Stream::H2D), "h2d");
  EXPECT_EQ(stream_name(Stream::D2H), "d2h");
  EXPECT_EQ(stream_name(Stream::Host), "host");
  EXPECT_EQ(op_kind_name(OpKind::CopyToBucket), "copy_to_bucket");
  EXPECT_EQ(op_kind_name(OpKind::OptimizerStep), "optimizer_step");
  EXPECT_EQ(op_kind_name(OpKind::Sync), "sync");
  EXPECT_EQ(phase_name(Phase::Init), "init");
  EXPECT_EQ(phase_name(Phase::BoundaryReduce), "boundary_reduce");
  EXPECT_EQ(phase_name(Phase::PostStep), "post_step");
  EXPECT_EQ(reduce_op_name(ReduceOp::None), "");
  EXPECT_EQ(reduce_op_name(ReduceOp::Sum), "sum");
  EXPECT_EQ(reduce_op_name(ReduceOp::Max), "max");
  EXPECT_EQ(category_name(BufferCategory::CommBucket), "comm_bucket");
  EXPECT_EQ(category_name(BufferCategory::GatheredParam), "gathered_param");
  EXPECT_EQ(deepspeed_version_name(DeepSpeedVersion::Edaa722), "edaa722");
  EXPECT_EQ(deepspeed_version_name(DeepSpeedVersion::V0_14_4), "0.14.4");
}

// kDerivedKindCount (schedule.h) derives from DerivedKind's last value like the counts of
// ir_types.h (ir_types_test.cc): every value below it has its own name, the value at it none.
TEST(ScheduleIr, DerivedKindCountDerivesFromTheEnum) {
  std::set<std::string> seen;
  for (std::size_t v = 0; v < kDerivedKindCount; ++v) {
    const std::string n(derived_kind_name(static_cast<DerivedKind>(v)));
    EXPECT_NE(n, "unknown") << "value " << v;
    EXPECT_TRUE(seen.insert(n).second) << "value " << v << " repeats " << n;
  }
  EXPECT_EQ(derived_kind_name(static_cast<DerivedKind>(kDerivedKindCount)), "unknown");
}

TEST(ScheduleIr, ParseDeepSpeedVersion) {
  EXPECT_EQ(parse_deepspeed_version("edaa722"), DeepSpeedVersion::Edaa722);
  EXPECT_EQ(parse_deepspeed_version("edaa7221267243c7be7fb49c5d5f5c4fb97b4641"),
            DeepSpeedVersion::Edaa722);
  EXPECT_EQ(parse_deepspeed_version("0.14.4"), DeepSpeedVersion::V0_14_4);
  EXPECT_EQ(parse_deepspeed_version("v0.14.4"), DeepSpeedVersion::V0_14_4);
  EXPECT_FALSE(parse_deepspeed_version("0.14.5").has_value());
  EXPECT_FALSE(parse_deepspeed_version("").has_value());
}

// Three roles over 8 ranks, one slot; a buffer and an op sized by the slot.
Schedule three_roles() {
  Schedule s;
  s.meta.world = 8;
  s.comms = {{0, 8, 1}};
  s.meta.slot_names = {"x"};
  s.roles.resize(3);
  s.roles[0].ranks = {{0, 1}, {4, 5}};
  s.roles[0].slots = {10};
  s.roles[1].ranks = {{2, 3}};
  s.roles[1].representative = 2;
  s.roles[1].slots = {20};
  s.roles[2].ranks = {{6, 7}};
  s.roles[2].representative = 6;
  s.roles[2].slots = {0};
  Buffer fixed;
  fixed.name = "fixed";
  fixed.numel = 7;
  fixed.persistent = true;
  Buffer slotted = fixed;
  slotted.name = "slotted";
  slotted.slot = 0;
  s.buffers = {fixed, slotted};
  return s;
}

TEST(ScheduleIr, RolesAndSlots) {
  const Schedule s = three_roles();
  EXPECT_EQ(s.roles[0].rank_count(), 4u);
  EXPECT_EQ(s.roles[1].rank_count(), 2u);
  const std::vector<std::uint32_t> expect = {0, 0, 1, 1, 0, 0, 2, 2};
  for (std::uint32_t r = 0; r < 8; ++r) EXPECT_EQ(s.role_of(r), expect[r]) << "rank " << r;
  EXPECT_EQ(s.role_of(8), kNone);
  EXPECT_EQ(s.buffer_numel(0, 1), 7u);
  EXPECT_EQ(s.buffer_numel(1, 0), 10u);
  EXPECT_EQ(s.buffer_numel(1, 1), 20u);
  EXPECT_EQ(s.buffer_numel(5, 0), 0u);  // unknown buffer
  Op op;
  op.elements = 3;
  EXPECT_EQ(s.op_elements(op, 1), 3u);
  op.slot = 0;
  EXPECT_EQ(s.op_elements(op, 1), 20u);
  EXPECT_EQ(s.op_elements(op, 2), 0u);
  EXPECT_FALSE(lower_schedule(s, "t").diagnostics().has_errors())
      << lower_schedule(s, "t").diagnostics().to_string();
}

std::string first_error(const Schedule& s) {
  const Diagnostics d = lower_schedule(s, "t.json").diagnostics();
  return d.items().empty() ? "" : d.items().front().to_string();
}

TEST(ScheduleIr, ValidateFindsBrokenReferencesAndLifetimes) {
  Schedule s = three_roles();
  Op alloc;
  alloc.kind = OpKind::Alloc;
  alloc.buffer = 1;
  s.ops = {alloc};
  s.buffers[1].persistent = false;
  EXPECT_EQ(first_error(s),
            "t.json: /buffers/1: expected buffer \"slotted\" (allocated at op 0) to be freed or "
            "marked persistent, got it live at the end");
  Op free = alloc;
  free.kind = OpKind::Free;
  s.ops = {free};
  EXPECT_EQ(first_error(s),
            "t.json: /ops/0: expected buffer \"slotted\" to be live before its Free, got it free");
  s.ops = {alloc, alloc, free};
  EXPECT_EQ(first_error(s),
            "t.json: /ops/1: expected buffer \"slotted\" to be free before its Alloc, got it live "
            "since op 0");
  Op dep;
  dep.deps = {0};
  s.ops = {dep};
  EXPECT_EQ(first_error(s),
            "t.json: /ops/0/deps/0: expected no deps (op 0 is the first op), got 0");
  Op bad_buf;
  bad_buf.kind = OpKind::Copy;
  bad_buf.buffer = 1;  // v1's target buffer: operands are regions now
  s.ops = {bad_buf};
  EXPECT_EQ(first_error(s),
            "t.json: /ops/0/buffer: expected no buffer on a copy op (only alloc and free name one; "
            "operands are src and dst), got 1");
  bad_buf.buffer = kNone;
  bad_buf.dst = {9, 0, 0, 0};
  s.ops = {bad_buf};
  EXPECT_EQ(first_error(s), "t.json: /ops/0/dst/buffer: expected a buffer index 0..1, got 9");
  Op reduce;
  reduce.kind = OpKind::Collective;
  reduce.collective = CollectiveKind::Reduce;
  reduce.root = 8;
  reduce.reduce_op = ReduceOp::Sum;
  s.ops = {reduce};
  EXPECT_EQ(
      first_error(s),
      "t.json: /ops/0/root: expected a root index 0..7 (communicator 0 has groups of 8 ranks) "
      "for reduce, got 8");
  reduce.reduce_op = ReduceOp::None;
  reduce.root = 0;
  s.ops = {reduce};
  EXPECT_EQ(first_error(s),
            "t.json: /ops/0: expected \"reduce_op\" (\"sum\" or \"max\") for reduce, got none");
  Op late;
  late.step = 1;
  s.ops = {late};
  EXPECT_EQ(first_error(s), "t.json: /ops/0/step: expected a step below 1, got 1");
}

TEST(ScheduleIr, ValidateChecksRoleCoverage) {
  Schedule s = three_roles();
  s.roles[2].ranks = {{7, 7}};
  s.roles[2].representative = 7;
  EXPECT_EQ(first_error(s),
            "t.json: /roles: expected every rank 0..7 in exactly one role, got rank 6 in no role");
  s = three_roles();
  s.roles[1].ranks = {{1, 3}};
  s.roles[1].representative = 1;
  EXPECT_EQ(first_error(s),
            "t.json: /roles: expected every rank in exactly one role, got rank 1 in roles 0 and 1");
  s = three_roles();
  s.roles[1].slots = {};
  EXPECT_EQ(
      first_error(s),
      "t.json: /roles/1/slots: expected 1 slot values (one per meta slot_names entry), got 0");
  s = three_roles();
  s.roles[1].representative = 3;
  EXPECT_EQ(first_error(s),
            "t.json: /roles/1/representative: expected the role's first rank 2, got 3");
}

TEST(ScheduleIr, BuildScheduleRejectsInconsistentInputs) {
  ScheduleInput in;
  auto r = build_schedule(in);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(
      r.diagnostics().items().front().to_string(),
      "schedule: expected a model, a partition plan and a DeepSpeed config, got a missing input");

  ModelDesc m = make_model({5, 3, 7}, {2, 2, 9});
  DsConfig ds = zero_config(2, 8, false);
  PartitionOptions po;
  po.stage = 2;
  po.world = 4;
  auto plan = plan_partition(m, po);
  ASSERT_TRUE(plan.ok());
  in.model = &m;
  in.plan = &plan.value();
  in.ds = &ds;
  in.cluster.nodes = 1;
  in.cluster.gpus_per_node = 8;
  in.steps = 0;
  r = build_schedule(in);
  ASSERT_FALSE(r.ok());
  std::vector<std::string> msgs;
  for (const auto& d : r.diagnostics().items()) msgs.push_back(d.to_string());
  EXPECT_EQ(msgs, (std::vector<std::string>{
                      "schedule: /steps: expected at least 1 optimizer step, got 0",
                      "schedule: /plan/world: expected the plan's world size to equal the "
                      "cluster's 8 ranks, got 4",
                      "schedule: /grad_order/1: expected each param once in the gradient order, "
                      "got \"p2\" again",
                      "schedule: /grad_order/2: expected a param id below 3, got 9",
                  }));
  ds.zero.stage = 3;  // a stage-3 config with a stage-2 plan
  in.steps = 1;
  in.cluster.gpus_per_node = 4;
  m.grad_order = {2, 1, 0};
  r = build_schedule(in);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(
      r.diagnostics().items().front().to_string(),
      "schedule: /plan/stage: expected a partition plan for stage 3's layout, got one for stage 2");
}

TEST(ScheduleIr, BuiltSchedulesPassValidationAndCarryMeta) {
  auto ds = zero_config(2, 8, true);
  ds.grad_accum_steps = 3;
  auto b = build(make_model({5, 3, 7}, {2, 1, 0}), ds, 4, with_steps(2));
  ASSERT_TRUE(b.schedule.ok());
  const Schedule& s = b.s();
  EXPECT_FALSE(lower_schedule(s, "built").diagnostics().has_errors());
  EXPECT_EQ(s.meta.mode, "deepspeed");
  EXPECT_EQ(s.meta.optimizer, "DeepSpeedZeroOptimizer");
  EXPECT_EQ(s.meta.stage, 2);
  EXPECT_EQ(s.meta.world, 4u);
  EXPECT_EQ(s.meta.steps, 2u);
  EXPECT_EQ(s.meta.grad_accum, 3u);
  EXPECT_EQ(s.meta.lp, DType::Float16);
  EXPECT_EQ(s.meta.master, DType::Float32);
  EXPECT_EQ(s.meta.slot_names.size(), s.roles.front().slots.size());
  // Adam states appear once, at the first step, and persist.
  std::size_t adam_allocs = 0;
  for (const Op& op : s.ops)
    if (op.kind == OpKind::Alloc && s.buffers[op.buffer].spec_id == "B3") {
      ++adam_allocs;
      EXPECT_EQ(op.step, 0u);
      EXPECT_EQ(op.phase, Phase::Step);
    }
  EXPECT_EQ(adam_allocs, 1u);
}

}  // namespace
}  // namespace zerosim
