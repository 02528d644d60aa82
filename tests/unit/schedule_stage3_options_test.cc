// Stage 3 schedule options: step() sequences by precision and offload (§7.7), gradient accumulation
// (§7.9), streams with and without overlap_comm, stage3_allgather_sequential,
// stage3_use_all_reduce_for_fetch_params, offload_param and offload_optimizer data movement, and
// the input errors build_stage3 reports instead of crashing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "schedule_stage3_test_util.h"

namespace zerosim {
namespace {

using namespace s3test;  // NOLINT

constexpr auto kF = Phase::Forward;
constexpr auto kS = Phase::Step;

DsConfig g14_config() {
  DsConfig ds = stage3_config();
  ds.zero.sub_group_size = 5;  // sub-groups {p10, p7}, {p2}
  ds.zero.param_persistence_threshold = 0;
  return ds;
}

const ModelDesc& g14_model() {
  static const ModelDesc m = param_model({10, 7, 2}, {2, 1, 0});
  return m;
}

std::vector<Coll> step_colls(const Schedule& s) {
  return colls(s, [](const Op& o) { return o.phase == kS; });
}

TEST(ScheduleStage3Step, Fp16ChecksOverflowThenOneFloat64NormPerSubGroup) {
  EXPECT_EQ(step_colls(build(g14_model(), g14_config(), 4)),
            (std::vector<Coll>{ar(1, DType::UInt8, kS), ar(1, DType::Float64, kS),
                               ar(1, DType::Float64, kS)}));
}

TEST(ScheduleStage3Step, Bf16AndFp32HaveNoOverflowCheck) {
  DsConfig ds = g14_config();
  ds.fp16 = false;
  ds.bf16 = true;
  const std::vector<Coll> norms = {ar(1, DType::Float64, kS), ar(1, DType::Float64, kS)};
  EXPECT_EQ(step_colls(build(g14_model(), ds, 4)), norms);
  ds.bf16 = false;
  EXPECT_EQ(step_colls(build(g14_model(), ds, 4)), norms);
}

// Optimizer offload: norms come from per-param fp32 norms; ratio 0.5 keeps sub-group 0 on the GPU.
TEST(ScheduleStage3Step, OffloadNormsAreFloat32OnCpuSubGroups) {
  DsConfig ds = g14_config();
  ds.zero.offload_optimizer.device = OffloadDevice::Cpu;
  EXPECT_EQ(step_colls(build(g14_model(), ds, 4)),
            (std::vector<Coll>{ar(1, DType::UInt8, kS), ar(1, DType::Float32, kS),
                               ar(1, DType::Float32, kS)}));
  ds.zero.offload_optimizer.ratio = 0.5;
  EXPECT_EQ(step_colls(build(g14_model(), ds, 4)),
            (std::vector<Coll>{ar(1, DType::UInt8, kS), ar(1, DType::Float64, kS),
                               ar(1, DType::Float32, kS)}));
}

TEST(ScheduleStage3Step, OffloadOptimizerMovesEachGradPartition) {
  DsConfig ds = g14_config();
  ds.zero.offload_optimizer.device = OffloadDevice::Cpu;
  const Schedule s = build(g14_model(), ds, 4);
  std::vector<Elements> d2h, host_copies;
  for (const Op& o : s.ops) {
    if (o.kind == OpKind::DeviceToHost && o.phase == Phase::Epilogue) d2h.push_back(o.elements);
    if (o.kind == OpKind::Copy && o.stream == Stream::Host && o.phase == Phase::Epilogue)
      host_copies.push_back(o.elements);
  }
  EXPECT_EQ(d2h, (std::vector<Elements>{3, 2, 1}));  // per param, ds_id order
  EXPECT_EQ(host_copies, (std::vector<Elements>{3, 2, 1}));
  EXPECT_EQ(s.buffers[find_buffer(s, "grad_partitions_flat_buffer")].pool, MemoryPool::Host);
  EXPECT_EQ(s.buffers[find_buffer(s, "fp32 master [sub-group 0]")].pool, MemoryPool::Host);
  int host_steps = 0;
  for (const Op& o : s.ops)
    if (o.kind == OpKind::OptimizerStep) host_steps += o.stream == Stream::Host ? 1 : 0;
  EXPECT_EQ(host_steps, 2);
}

// §7.9: every micro-step reduce-scatters; the first copies, later ones add; one step at the end.
TEST(ScheduleStage3Step, GradientAccumulationReduceScattersEveryMicroStep) {
  DsConfig ds = g14_config();
  ds.grad_accum_steps = 2;
  const Schedule s = build(g14_model(), ds, 4);
  std::vector<std::pair<std::uint32_t, Elements>> rs_by_micro;
  std::vector<std::string> partition_labels;
  for (const Op& o : s.ops) {
    if (o.kind == OpKind::Collective && o.collective == CollectiveKind::ReduceScatter)
      rs_by_micro.emplace_back(o.micro_step, o.numel);
    if (o.kind == OpKind::Copy && o.label.rfind("partition grads", 0) == 0)
      partition_labels.push_back(o.label);
  }
  EXPECT_EQ(rs_by_micro, (std::vector<std::pair<std::uint32_t, Elements>>{{0, 24}, {1, 24}}));
  EXPECT_EQ(partition_labels,
            (std::vector<std::string>{"partition grads (copy)", "partition grads (accumulate)"}));
  for (const Op& o : s.ops)
    if (o.phase == kS) {
      EXPECT_EQ(o.micro_step, 1u);
    }
  // Micro-step 2 runs on the COMPLETE trace: p0 is fetched alone, {p1, p2} prefetched together, and
  // all stay gathered for their backward use (default reuse distance).
  const auto micro1 = colls(s, [](const Op& o) {
    return o.collective == CollectiveKind::AllGather && o.micro_step == 1 && o.phase != Phase::Init;
  });
  EXPECT_EQ(micro1, (std::vector<Coll>{ag(3, 12, kF), ag(3, 12, kF)}));
}

TEST(ScheduleStage3Streams, OverlapCommUsesGatherAndReduceStreams) {
  DsConfig ds = g14_config();
  for (const bool overlap : {true, false}) {
    ds.zero.overlap_comm = overlap;
    const Schedule s = build(g14_model(), ds, 4);
    for (const Op& o : s.ops) {
      if (o.kind != OpKind::Collective || o.phase == Phase::Init) continue;
      if (o.collective == CollectiveKind::AllGather && o.phase != Phase::PostStep) {
        EXPECT_EQ(o.stream, overlap ? Stream::Gather : Stream::Compute) << o.label;
      }
      if (o.collective == CollectiveKind::ReduceScatter) {
        EXPECT_EQ(o.stream, overlap ? Stream::Reduce : Stream::Compute) << o.label;
      }
    }
  }
}

TEST(ScheduleStage3Fetch, AllgatherSequentialGathersOneParamAtATime) {
  DsConfig ds = stage3_config();
  ds.zero.param_persistence_threshold = 0;
  ds.zero.allgather_sequential = true;
  ds.zero.prefetch_bucket_size = 1;
  const Schedule s = build(layer_model({{10, 7, 2}}), ds, 4);
  const auto fwd = colls(
      s, [](const Op& o) { return o.phase == kF && o.collective == CollectiveKind::AllGather; });
  EXPECT_EQ(fwd, (std::vector<Coll>{ag(3, 12, kF), ag(2, 8, kF), ag(1, 4, kF)}));
}

TEST(ScheduleStage3Fetch, AllReduceForFetchParams) {
  DsConfig ds = stage3_config();
  ds.zero.param_persistence_threshold = 0;
  ds.zero.use_all_reduce_for_fetch_params = true;
  const Schedule s = build(layer_model({{10, 7, 2}}), ds, 4);
  const auto fwd = colls(
      s, [](const Op& o) { return o.phase == kF && o.collective != CollectiveKind::Broadcast; });
  EXPECT_EQ(fwd, (std::vector<Coll>{ar(24, DType::Float16, kF)}));
}

// offload_param: partitions live on the host and are copied to the device before each gather.
TEST(ScheduleStage3Fetch, OffloadParamCopiesPartitionsBeforeGather) {
  DsConfig ds = stage3_config();
  ds.zero.param_persistence_threshold = 0;
  ds.zero.offload_param.device = OffloadDevice::Cpu;
  const Schedule s = build(layer_model({{10, 7, 2}}), ds, 4);
  // param_groups_fp16_flat_cpu_memory is pinned whatever pin_memory says (stage3.py:857-858).
  EXPECT_EQ(s.buffers[find_buffer(s, "lp_param_buffer (LP partitions)")].pool, MemoryPool::Pinned);
  std::size_t h2d = s.ops.size(), gather = s.ops.size();
  for (std::size_t i = 0; i < s.ops.size(); ++i) {
    const Op& o = s.ops[i];
    if (o.phase != kF) continue;
    if (o.kind == OpKind::HostToDevice && h2d == s.ops.size()) h2d = i;
    if (o.kind == OpKind::Collective && o.collective == CollectiveKind::AllGather &&
        gather == s.ops.size())
      gather = i;
  }
  ASSERT_LT(gather, s.ops.size());
  ASSERT_LT(h2d, gather);
  EXPECT_EQ(s.ops[h2d].elements, 6u);
  EXPECT_EQ(s.ops[h2d].stream, Stream::Gather);
}

// Activation checkpointing: each block's recompute runs its forward hooks inside backward, so with
// nothing retained a block is gathered twice in backward (recompute, then its own backward).
TEST(ScheduleStage3Fetch, CheckpointRecomputeFetchesAgain) {
  DsConfig ds = stage3_config();
  ds.zero.param_persistence_threshold = 0;
  ds.zero.max_reuse_distance = 0;
  ds.zero.prefetch_bucket_size = 0;
  TrainingSettings t;
  t.activation_checkpointing = true;
  const Schedule s =
      build(layer_model({{4}, {4}, {4}}, {LayerKind::Block, LayerKind::Block, LayerKind::Other}),
            ds, 2, 2, DeepSpeedVersion::Edaa722, t);
  const Coll one_bwd = ag(2, 4, Phase::Backward, 1);
  // L3 (not a block) once, then L2 and L1 twice each.
  EXPECT_EQ(colls(s, [](const Op& o) { return o.step == 1 && o.phase == Phase::Backward; }),
            (std::vector<Coll>(5, one_bwd)));
  std::vector<std::uint32_t> recomputed;
  for (const Op& o : s.ops)
    if (o.kind == OpKind::Recompute && o.step == 1) recomputed.push_back(o.layer);
  EXPECT_EQ(recomputed, (std::vector<std::uint32_t>{1, 0}));
}

ScheduleInput input_for(const ModelDesc& m, const PartitionPlan& p, const DsConfig& ds,
                        std::uint32_t world) {
  ScheduleInput in;
  in.model = &m;
  in.plan = &p;
  in.ds = &ds;
  in.cluster.nodes = 1;
  in.cluster.gpus_per_node = world;
  return in;
}

TEST(ScheduleStage3BadInput, ReportsInsteadOfCrashing) {
  const DsConfig ds = g14_config();
  const ModelDesc& m = g14_model();
  const PartitionPlan plan = stage3_plan(m, ds, 4);
  ScheduleInput in;
  auto r = schedule::build_stage3(in);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.diagnostics().to_string().find("missing input"), std::string::npos);

  in = input_for(m, plan, ds, 8);  // cluster of 8, plan for 4
  r = schedule::build_stage3(in);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.diagnostics().items().front().pointer, "/plan/world");

  in = input_for(m, plan, ds, 4);
  in.steps = 0;
  r = schedule::build_stage3(in);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.diagnostics().items().front().pointer, "/steps");

  PartitionPlan stage2 = plan;
  stage2.stage = 2;
  in = input_for(m, stage2, ds, 4);
  r = schedule::build_stage3(in);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.diagnostics().items().front().pointer, "/plan");

  ModelDesc bad = layer_model({{10}});
  bad.layers[0].param_ids.push_back(7);
  const PartitionPlan bad_plan = stage3_plan(bad, ds, 4);
  in = input_for(bad, bad_plan, ds, 4);
  r = schedule::build_stage3(in);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.diagnostics().items().front().to_string(),
            "model: /layers/0/param_ids/1: expected a param index below 1, got 7");
}

}  // namespace
}  // namespace zerosim
