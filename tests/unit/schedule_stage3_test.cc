// Stage 3 schedule against the worked examples of deepspeed_zero.md §9: G14 (sizes, sub-groups and
// the whole collective sequence of one step), G15 (the coalesced reduce-scatter and its staging),
// G16 (IPG flushing with an oversize param; also with reduce_scatter=false), G17 (fetch shapes and
// resident sizes) and G19 (persistence marking through the partition plan, seen as post-step
// gathers), plus the init sequence of §7.1 with a frozen param.
#include <gtest/gtest.h>

#include <vector>

#include "schedule_stage3_test_util.h"

namespace zerosim {
namespace {

using namespace s3test;  // NOLINT

constexpr auto kF = Phase::Forward;
constexpr auto kB = Phase::Backward;
constexpr auto kE = Phase::Epilogue;
constexpr auto kS = Phase::Step;
constexpr auto kP = Phase::PostStep;
constexpr auto kI = Phase::Init;
constexpr auto kFp16 = DType::Float16;
constexpr auto kF64 = DType::Float64;
constexpr auto kI64 = DType::Int64;
constexpr auto kU8 = DType::UInt8;

const Buffer& buffer_named(const Schedule& s, const std::string& name) {
  const auto i = find_buffer(s, name);
  static const Buffer kMissing = [] {
    Buffer b;
    b.name = "<missing>";
    return b;
  }();
  EXPECT_LT(i, s.buffers.size()) << name;
  return i < s.buffers.size() ? s.buffers[i] : kMissing;
}

// G14 + G15: params [10, 7, 2], W = 4, sub_group_size 5, default persistence (all three
// persistent), gradients ready p2, p1, p0: one full step at edaa722, every collective in order.
TEST(ScheduleStage3, G14G15WholeStepCollectiveSequence) {
  DsConfig ds = stage3_config();
  ds.zero.sub_group_size = 5;
  const ModelDesc m = param_model({10, 7, 2}, {2, 1, 0});
  const Schedule s = build(m, ds, 4);
  const std::vector<Coll> expected = {
      // §7.1: engine broadcast, conversion broadcast, one hook-registration all-gather per param.
      bc(10, kFp16, kI), bc(7, kFp16, kI), bc(2, kFp16, kI), bc(10, kFp16, kI), bc(7, kFp16, kI),
      bc(2, kFp16, kI), ag(3, 12, kI), ag(2, 8, kI), ag(1, 4, kI),
      // RESET_STEP in the first forward pre-hook: INVALID -> RECORD checks an empty module list.
      bc(1, kI64, kF), bc(0, kI64, kF),
      // Recording iteration: every module gathers its param alone and releases it (persistent too).
      ag(3, 12, kF), ag(2, 8, kF), ag(1, 4, kF), ag(1, 4, kB), ag(2, 8, kB), ag(3, 12, kB),
      // G15: the epilogue flushes the one bucket [10, 7, 2] (ds_id order): RS(24, 6).
      rs(24, 6, kE),
      // §7.7: fp16 overflow check, one float64 norm per sub-group ({p10, p7}, {p2}).
      ar(1, kU8, kS), ar(1, kF64, kS), ar(1, kF64, kS),
      // POST_STEP: every persistent param gathered alone, ds_id order, output W*c.
      ag(3, 12, kP), ag(2, 8, kP), ag(1, 4, kP)};
  EXPECT_EQ(colls(s), expected);
  EXPECT_EQ(s.meta.optimizer, "DeepSpeedZeroOptimizer_Stage3");
  ASSERT_EQ(s.roles.size(), 1u);
  EXPECT_EQ(s.roles[0].ranks, (std::vector<std::pair<std::uint32_t, std::uint32_t>>{{0, 3}}));
  EXPECT_TRUE(s.meta.slot_names.empty());
}

TEST(ScheduleStage3, G14PersistentBufferSizes) {
  DsConfig ds = stage3_config();
  ds.zero.sub_group_size = 5;
  const Schedule s = build(param_model({10, 7, 2}, {2, 1, 0}), ds, 4);
  const Buffer& lp = buffer_named(s, "lp_param_buffer (LP partitions)");
  EXPECT_EQ(lp.numel, 6u);
  EXPECT_EQ(lp.dtype, kFp16);
  EXPECT_TRUE(lp.persistent);
  EXPECT_EQ(buffer_named(s, "fp32 master [sub-group 0]").numel, 5u);
  EXPECT_EQ(buffer_named(s, "fp32 master [sub-group 1]").numel, 1u);
  EXPECT_EQ(buffer_named(s, "fp32 master [sub-group 0]").dtype, DType::Float32);
  EXPECT_EQ(buffer_named(s, "Adam states [sub-group 0]").numel, 10u);
  EXPECT_EQ(buffer_named(s, "Adam states [sub-group 1]").numel, 2u);
  const Buffer& gp = buffer_named(s, "grad_partitions_flat_buffer");
  EXPECT_EQ(gp.numel, 6u);
  EXPECT_EQ(gp.dtype, kFp16);  // GA defaults to LP
  const Buffer& ipg = buffer_named(s, "IPG bucket");
  EXPECT_EQ(ipg.numel, 500000000u);
  EXPECT_EQ(ipg.category, BufferCategory::CommBucket);
  // Adam states appear at the first step, not at init.
  const auto adam0 = static_cast<std::uint32_t>(find_buffer(s, "Adam states [sub-group 0]"));
  for (const Op& o : s.ops)
    if (o.kind == OpKind::Alloc && o.buffer == adam0) {
      EXPECT_EQ(o.phase, kS);
    }
}

// G15: the staging tensor of the reduce-scatter is W * Σc = 24 elements in CD, output Σc = 6.
TEST(ScheduleStage3, G15ReduceScatterStaging) {
  DsConfig ds = stage3_config();
  ds.zero.param_persistence_threshold = 0;
  ds.communication_data_type = DType::Float32;
  const Schedule s = build(param_model({10, 7, 2}, {2, 1, 0}), ds, 4);
  const Buffer& staging = buffer_named(s, "reduce-scatter staging (24)");
  EXPECT_EQ(staging.dtype, DType::Float32);
  EXPECT_EQ(buffer_named(s, "reduce-scatter output (6)").numel, 6u);
  EXPECT_EQ(buffer_named(s, "IPG bucket").dtype, DType::Float32);  // the IPG buffer is in CD
  const auto rsc =
      colls(s, [](const Op& o) { return o.collective == CollectiveKind::ReduceScatter; });
  ASSERT_EQ(rsc.size(), 1u);
  EXPECT_EQ(rsc[0], (Coll{CollectiveKind::ReduceScatter, 24, 6, DType::Float32, kE, 0}));
  // Rank 3 holds 1, 1, 0 real elements of p10, p7, p2.
  const PartitionPlan plan = stage3_plan(param_model({10, 7, 2}, {2, 1, 0}), ds, 4);
  EXPECT_EQ(plan.s3_real_numel(0, 3), 1u);
  EXPECT_EQ(plan.s3_real_numel(1, 3), 1u);
  EXPECT_EQ(plan.s3_real_numel(2, 3), 0u);
}

std::vector<std::uint32_t> copied_params(const Schedule& s) {
  std::vector<std::uint32_t> out;
  for (const Op& o : s.ops)
    if (o.kind == OpKind::CopyToBucket) out.push_back(o.param);
  return out;
}

// G16: R = 8, W = 4, grads a(5), b(12), c(3): RS(8, 2) at b, RS(12, 3) at c (no staging), RS(4, 1)
// in the epilogue; b is never copied into the IPG buffer.
TEST(ScheduleStage3, G16OversizeParamFlushes) {
  DsConfig ds = stage3_config();
  ds.zero.reduce_bucket_size = 8;
  ds.zero.param_persistence_threshold = 0;
  const Schedule s = build(param_model({5, 12, 3}, {0, 1, 2}), ds, 4);
  const auto rsc =
      colls(s, [](const Op& o) { return o.collective == CollectiveKind::ReduceScatter; });
  EXPECT_EQ(rsc, (std::vector<Coll>{rs(8, 2, kB), rs(12, 3, kB), rs(4, 1, kE)}));
  EXPECT_EQ(copied_params(s), (std::vector<std::uint32_t>{0, 2}));
  // Staging per flush: 8 for {a}, none for the W-divisible {b}, 4 for {c}.
  std::vector<std::pair<std::uint32_t, Elements>> staging;
  for (const Op& o : s.ops)
    if (o.kind == OpKind::Alloc && s.buffers[o.buffer].name.rfind("reduce-scatter staging", 0) == 0)
      staging.emplace_back(o.bucket, s.buffers[o.buffer].numel);
  EXPECT_EQ(staging, (std::vector<std::pair<std::uint32_t, Elements>>{{0, 8}, {2, 4}}));
  // b's gradient keeps its own storage until its flush (bucket 1) drops it.
  const auto grad_b = static_cast<std::uint32_t>(find_buffer(s, "grad:p1"));
  std::vector<std::uint32_t> frees;
  for (const Op& o : s.ops)
    if (o.kind == OpKind::Free && o.buffer == grad_b) frees.push_back(o.bucket);
  EXPECT_EQ(frees, (std::vector<std::uint32_t>{1}));
}

// reduce_scatter = false: buckets within R are all-reduced (E elements); the oversize one still
// reduce-scatters.
TEST(ScheduleStage3, G16WithoutReduceScatter) {
  DsConfig ds = stage3_config();
  ds.zero.reduce_bucket_size = 8;
  ds.zero.reduce_scatter = false;
  ds.zero.param_persistence_threshold = 0;
  const Schedule s = build(param_model({5, 12, 3}, {0, 1, 2}), ds, 4);
  const auto red = colls(s, [](const Op& o) {
    return o.collective == CollectiveKind::ReduceScatter ||
           (o.collective == CollectiveKind::AllReduce && (o.phase == kB || o.phase == kE));
  });
  EXPECT_EQ(red, (std::vector<Coll>{ar(5, kFp16, kB), rs(12, 3, kB), ar(3, kFp16, kE)}));
}

// Non-contiguous gradients: no IPG buffer, every grad reduced from its own storage.
TEST(ScheduleStage3, G16NonContiguous) {
  DsConfig ds = stage3_config();
  ds.zero.reduce_bucket_size = 8;
  ds.zero.contiguous_gradients = false;
  ds.zero.param_persistence_threshold = 0;
  const Schedule s = build(param_model({5, 12, 3}, {0, 1, 2}), ds, 4);
  EXPECT_EQ(find_buffer(s, "IPG bucket"), s.buffers.size());
  EXPECT_TRUE(copied_params(s).empty());
  const auto rsc =
      colls(s, [](const Op& o) { return o.collective == CollectiveKind::ReduceScatter; });
  EXPECT_EQ(rsc, (std::vector<Coll>{rs(8, 2, kB), rs(12, 3, kB), rs(4, 1, kE)}));
}

// G17: a module with direct params [10, 7, 2] gathers AG(in 6, out 24) into a staging buffer, then
// holds fresh tensors of 10, 7, 2 (19 resident) with the staging gone; a single param [10] stays a
// view of its 12-element output.
TEST(ScheduleStage3, G17FetchShapes) {
  DsConfig ds = stage3_config();
  ds.zero.param_persistence_threshold = 0;
  const Schedule s = build(layer_model({{10, 7, 2}}), ds, 4);
  EXPECT_EQ(colls(s, kind_in_step(CollectiveKind::AllGather, 0)).front(), ag(6, 24, kF));
  const auto mark = find_label(s, "fetch fwd L1");
  ASSERT_LT(mark, s.ops.size());
  EXPECT_EQ(live_elements(s, mark, BufferCategory::GatheredParam), 19u);
  const auto staging = static_cast<std::uint32_t>(find_buffer(s, "all-gather staging (24)"));
  ASSERT_LT(staging, s.buffers.size());
  std::vector<OpKind> life;
  for (std::size_t i = 0; i < mark; ++i)
    if (s.ops[i].buffer == staging) life.push_back(s.ops[i].kind);
  EXPECT_EQ(life, (std::vector<OpKind>{OpKind::Alloc, OpKind::Copy, OpKind::Free}));

  const Schedule one = build(layer_model({{10}}), ds, 4);
  EXPECT_EQ(colls(one, kind_in_step(CollectiveKind::AllGather, 0)).front(), ag(3, 12, kF));
  EXPECT_EQ(live_elements(one, find_label(one, "fetch fwd L1"), BufferCategory::GatheredParam),
            12u);
}

// G19 seen through the schedule: the post-step gathers name exactly the persistent params.
TEST(ScheduleStage3, G19PersistenceThroughThePlan) {
  DsConfig ds = stage3_config();
  const ModelDesc m = param_model({100000, 100001, 50}, {2, 1, 0});
  const auto post = [](const Op& o) { return o.phase == kP; };
  EXPECT_EQ(colls(build(m, ds, 4), post),
            (std::vector<Coll>{ag(25000, 100000, kP), ag(13, 52, kP)}));
  ds.zero.model_persistence_threshold = 100020;
  EXPECT_EQ(colls(build(m, ds, 4), post), (std::vector<Coll>{ag(25000, 100000, kP)}));
}

// §7.1 with a frozen param: both broadcasts cover every param, hook gathers only trainable ones;
// the frozen partition keeps its own buffer.
TEST(ScheduleStage3, InitWithFrozenParam) {
  DsConfig ds = stage3_config();
  ModelDesc m = param_model({10, 7, 2}, {2, 0});
  m.params[1].trainable = false;
  const Schedule s = build(m, ds, 4);
  const auto init = colls(s, [](const Op& o) { return o.phase == kI; });
  EXPECT_EQ(init, (std::vector<Coll>{bc(10, kFp16, kI), bc(7, kFp16, kI), bc(2, kFp16, kI),
                                     bc(10, kFp16, kI), bc(7, kFp16, kI), bc(2, kFp16, kI),
                                     ag(3, 12, kI), ag(1, 4, kI)}));
  EXPECT_EQ(buffer_named(s, "LP partitions of params outside the optimizer").numel, 2u);
  EXPECT_EQ(buffer_named(s, "lp_param_buffer (LP partitions)").numel, 4u);
  EXPECT_EQ(find_buffer(s, "grad:p1"), s.buffers.size());
  int barriers = 0;
  for (const Op& o : s.ops)
    if (o.kind == OpKind::Marker && o.label.rfind("dist.barrier", 0) == 0) ++barriers;
  EXPECT_EQ(barriers, 3);
  for (const Op& o : s.ops)
    if (o.kind == OpKind::Collective && o.collective == CollectiveKind::Broadcast &&
        o.phase == kI) {
      EXPECT_EQ(o.root, 0u);
    }
}

// §7.1 under zero.Init: one broadcast per param as it is built (no engine broadcast), then the
// hook-registration gathers; only one whole param is alive at a time, so the init peak of LP
// params is the partitions plus the largest param, not the whole model.
TEST(ScheduleStage3, InitUnderZeroInit) {
  DsConfig ds = stage3_config();
  const ModelDesc m = param_model({10, 7, 2}, {2, 1, 0});
  TrainingSettings zero_init;
  zero_init.zero_init = true;
  const Schedule with = build(m, ds, 4, 1, DeepSpeedVersion::Edaa722, zero_init);
  const Schedule without = build(m, ds, 4);
  const auto in_init = [](const Op& o) { return o.phase == kI; };
  EXPECT_EQ(colls(with, in_init),
            (std::vector<Coll>{bc(10, kFp16, kI), bc(7, kFp16, kI), bc(2, kFp16, kI), ag(3, 12, kI),
                               ag(2, 8, kI), ag(1, 4, kI)}));
  const auto init_end = [](const Schedule& s) {
    std::size_t i = 0;
    while (i < s.ops.size() && s.ops[i].phase == kI) ++i;
    return i;
  };
  // Partitions: c = 3 + 2 + 1 = 6 elements, counted from the start.
  EXPECT_EQ(peak_elements(with, 0, init_end(with), BufferCategory::Param16), 6u + 10u);
  EXPECT_EQ(peak_elements(without, 0, init_end(without), BufferCategory::Param16), 19u + 6u);
  // The training step itself is the same.
  const auto after_init = [](const Op& o) { return o.phase != kI; };
  EXPECT_EQ(colls(with, after_init), colls(without, after_init));
  bool noted = false;
  for (const std::string& n : with.meta.notes) noted = noted || n.rfind("zero.Init on", 0) == 0;
  EXPECT_TRUE(noted);
}

// zero.Init belongs to stage 3: asking for it with stage 2 is an error naming the field.
TEST(ScheduleStage3, ZeroInitNeedsStage3) {
  DsConfig ds = stage3_config();
  ds.zero.stage = 2;
  const ModelDesc m = param_model({10, 7, 2}, {2, 1, 0});
  PartitionOptions o;
  o.stage = 2;
  o.world = 4;
  auto plan = plan_partition(m, o);
  ASSERT_TRUE(plan.ok());
  ScheduleInput in;
  in.model = &m;
  in.plan = &plan.value();
  in.ds = &ds;
  in.cluster.nodes = 1;
  in.cluster.gpus_per_node = 4;
  in.training.zero_init = true;
  auto r = build_schedule(in);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.diagnostics().to_string().find("/training/zero_init"), std::string::npos)
      << r.diagnostics().to_string();
  EXPECT_NE(r.diagnostics().to_string().find("got stage 2"), std::string::npos);
}

// §7.7 overflow (fp16): step() releases every gathered param, runs the check and returns: no norm,
// no update, no POST_STEP gather, so the next forward gathers the persistent params again.
TEST(ScheduleStage3, OverflowStepSkipsNormUpdateAndPersistentGather) {
  const DsConfig ds = stage3_config();
  const ModelDesc m = param_model({10, 7, 2}, {2, 1, 0});
  const Schedule plain = build(m, ds, 4, 2);
  const PartitionPlan plan = stage3_plan(m, ds, 4);
  ScheduleInput in;
  in.model = &m;
  in.plan = &plan;
  in.ds = &ds;
  in.cluster.nodes = 1;
  in.cluster.gpus_per_node = 4;
  in.steps = 2;
  in.overflow_steps = {0};
  auto r = build_schedule(in);
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  const Schedule& s = r.value();
  const auto step_phase = [](std::uint32_t step) {
    return [step](const Op& o) { return o.step == step && (o.phase == kS || o.phase == kP); };
  };
  EXPECT_EQ(colls(s, step_phase(0)), (std::vector<Coll>{ar(1, kU8, kS)}));
  EXPECT_EQ(colls(s, step_phase(1)), colls(plain, step_phase(1)));
  // Output elements of step 1's forward all-gathers (fetches and prefetches).
  const auto fwd_gathered = [](const Schedule& x) {
    Elements out = 0;
    for (const Coll& c : colls(x, [](const Op& o) {
           return o.step == 1 && o.phase == kF && o.collective == CollectiveKind::AllGather;
         }))
      out += c.out;
    return out;
  };
  EXPECT_EQ(fwd_gathered(plain), 0u);  // persistent params stay gathered after a normal step
  EXPECT_EQ(fwd_gathered(s), 4u * (3 + 2 + 1));  // after the overflow: every param, W x c each
  std::uint32_t updates = 0, plain_updates = 0;
  for (const Op& o : s.ops) updates += o.kind == OpKind::OptimizerStep ? 1 : 0;
  for (const Op& o : plain.ops) plain_updates += o.kind == OpKind::OptimizerStep ? 1 : 0;
  EXPECT_EQ(2 * updates, plain_updates);  // step 1 updates, step 0 does not
}

}  // namespace
}  // namespace zerosim
