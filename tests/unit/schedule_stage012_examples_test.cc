// Worked examples G9–G13 and G21 of deepspeed_zero.md §9, the DeepSpeed v0.14.4 version notes, the
// stage 0 engine chunking rule, the BF16_Optimizer reroute and CPU optimizer offload.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>

#include "schedule_stage012_testlib.h"

namespace zerosim {
namespace {

using namespace testlib;  // NOLINT: test-local helpers

const std::vector<Elements> kG1 = {5, 3, 7};

std::vector<Coll> reduction_colls(const Schedule& s, std::uint32_t step = 0) {
  return collectives(s, [step](const Op& op) {
    return op.step == step && (op.phase == Phase::Backward || op.phase == Phase::BoundaryReduce ||
                               op.phase == Phase::Epilogue);
  });
}

auto is_spec(const char* id) {
  return [id](const Buffer& b) { return b.spec_id == id; };
}

TEST(ScheduleStage012Examples, G9TinyModelStillHoldsFullIpgBuffers) {
  for (bool overlap : {false, true}) {
    auto ds = zero_config(2, 500000000, overlap);
    auto b = build(make_model({1}), ds, 4);
    ASSERT_TRUE(b.schedule.ok());
    const Schedule& s = b.s();
    const Bytes expect = overlap ? 2000000000u : 1000000000u;
    for (std::uint32_t role = 0; role < s.roles.size(); ++role)
      EXPECT_EQ(peak_bytes(
                    s, role, [](const Op&) { return true; }, is_spec("T2")),
                expect);
    EXPECT_EQ(step_collectives(s).back(), AG(8, 2));
    // Rank 0 holds p0 and one padding element; ranks 1-3 only padding.
    EXPECT_EQ(buffers_for_rank(s, 0, is_spec("T4")), 1u);
    EXPECT_EQ(buffers_for_rank(s, 2, is_spec("T4")), 2u);
  }
}

TEST(ScheduleStage012Examples, G10RoundRobinOwnersFollowTheReorderedLayout) {
  auto ds = zero_config(2, 500000000, false);
  ds.zero.round_robin_gradients = true;
  auto b = build(make_model({4, 4, 4, 4, 4}), ds, 2);
  ASSERT_TRUE(b.schedule.ok());
  EXPECT_EQ(reduction_colls(b.s()), (std::vector<Coll>{AR(20, Phase::Epilogue)}));
  EXPECT_EQ(buffers_for_rank(b.s(), 0, is_spec("T3")), 12u);
  EXPECT_EQ(buffers_for_rank(b.s(), 1, is_spec("T3")), 12u);
  ds.zero.use_multi_rank_bucket_allreduce = false;
  auto v = build(make_model({4, 4, 4, 4, 4}), ds, 2);
  ASSERT_TRUE(v.schedule.ok());
  EXPECT_EQ(reduction_colls(v.s()),
            (std::vector<Coll>{RD(0, 10, Phase::Epilogue), RD(1, 10, Phase::Epilogue)}));
}

TEST(ScheduleStage012Examples, G10Stage1BoundaryPassInsertsInDeclaredOrder) {
  // Stage 1 without overlap walks p0..p4 (declared order) while owners follow [p0,p2,p4,p1,p3]:
  // slices p0 (0,4) p1 (1,4) p2 (0,4) p3 (1,4) p4 (0,2)+(1,2): one reduce per owner, 0 first.
  auto ds = zero_config(1, 500000000, false);
  ds.zero.round_robin_gradients = true;
  ds.zero.use_multi_rank_bucket_allreduce = false;
  auto b = build(make_model({4, 4, 4, 4, 4}), ds, 2);
  ASSERT_TRUE(b.schedule.ok());
  EXPECT_EQ(reduction_colls(b.s()),
            (std::vector<Coll>{RD(0, 10, Phase::Epilogue), RD(1, 10, Phase::Epilogue)}));
  std::vector<std::uint32_t> order;
  for (const Op& op : b.s().ops)
    if (op.kind == OpKind::CopyToBucket) order.push_back(op.param);
  EXPECT_EQ(order, (std::vector<std::uint32_t>{0, 1, 2, 3, 4}));
}

TEST(ScheduleStage012Examples, G11TwoParamGroupsShareOneBucket) {
  auto b = build(make_model({6, 3, 3}, {2, 1, 0}), zero_config(2, 8, false), 2,
                 with_groups({{0}, {1, 2}}));
  ASSERT_TRUE(b.schedule.ok());
  const Schedule& s = b.s();
  EXPECT_EQ(step_collectives(s),
            (std::vector<Coll>{AR(6, Phase::Backward), AR(6, Phase::Epilogue), OVERFLOW_AR(),
                               NORM_AR(), NORM_AR(), AG(8, 4), AG(8, 4)}));
  EXPECT_EQ(buffers_for_rank(s, 0, is_spec("T3")), 12u);
  EXPECT_EQ(buffers_for_rank(s, 1, is_spec("T3")), 9u);
}

TEST(ScheduleStage012Examples, G12StepSequencesByPrecision) {
  auto step_only = [](const Schedule& s) {
    return collectives(
        s, [](const Op& op) { return op.phase == Phase::Step || op.phase == Phase::PostStep; });
  };
  auto fp16 = build(make_model(kG1), zero_config(2, 8, false), 4);
  ASSERT_TRUE(fp16.schedule.ok());
  EXPECT_EQ(step_only(fp16.s()), (std::vector<Coll>{OVERFLOW_AR(), NORM_AR(), AG(16, 4)}));
  auto ds = zero_config(2, 8, false);
  ds.fp16 = false;
  ds.bf16 = true;  // bf16.check_grad_overflow defaults to true: identical sequence
  auto bf16 = build(make_model(kG1), ds, 4);
  ASSERT_TRUE(bf16.schedule.ok());
  EXPECT_EQ(step_only(bf16.s()),
            (std::vector<Coll>{OVERFLOW_AR(), NORM_AR(), AG(16, 4, DType::BFloat16)}));
  ds.bf16_check_grad_overflow = false;
  auto bf16_nocheck = build(make_model(kG1), ds, 4);
  ASSERT_TRUE(bf16_nocheck.schedule.ok());
  EXPECT_EQ(step_only(bf16_nocheck.s()),
            (std::vector<Coll>{NORM_AR(), AG(16, 4, DType::BFloat16)}));
  ds.bf16 = false;
  auto fp32 = build(make_model(kG1), ds, 4);
  ASSERT_TRUE(fp32.schedule.ok());
  EXPECT_EQ(step_only(fp32.s()), (std::vector<Coll>{NORM_AR(), AG(16, 4, DType::Float32)}));
  // allgather_bucket_size is ignored on the all_gather_into_tensor path.
  auto small_a = zero_config(2, 8, false);
  small_a.zero.allgather_bucket_size = 2;
  auto a = build(make_model(kG1), small_a, 4);
  ASSERT_TRUE(a.schedule.ok());
  EXPECT_EQ(step_only(a.s()), (std::vector<Coll>{OVERFLOW_AR(), NORM_AR(), AG(16, 4)}));
}

// G12, overflow step: only the u8 all-reduce, nothing else; the next step is a normal one, and the
// Adam states are created by the first step that updates.
TEST(ScheduleStage012Examples, G12OverflowStepIssuesOnlyTheCheck) {
  BuildOptions o = with_steps(2);
  o.overflow_steps = {0};
  auto b = build(make_model(kG1), zero_config(2, 8, false), 4, o);
  ASSERT_TRUE(b.schedule.ok());
  const Schedule& s = b.s();
  auto step_only = [&](std::uint32_t step) {
    return collectives(s, [step](const Op& op) {
      return op.step == step && (op.phase == Phase::Step || op.phase == Phase::PostStep);
    });
  };
  EXPECT_EQ(step_only(0), (std::vector<Coll>{OVERFLOW_AR()}));
  EXPECT_EQ(step_only(1), (std::vector<Coll>{OVERFLOW_AR(), NORM_AR(), AG(16, 4)}));
  std::uint32_t adam_alloc_step = kNone, updates = 0;
  for (const Op& op : s.ops) {
    if (op.kind == OpKind::OptimizerStep) ++updates;
    if (op.kind == OpKind::Alloc && s.buffers[op.buffer].category == BufferCategory::OptimState)
      adam_alloc_step = op.step;
  }
  EXPECT_EQ(updates, 1u);
  EXPECT_EQ(adam_alloc_step, 1u);
  bool noted = false;
  for (const std::string& n : s.meta.notes) noted = noted || n.rfind("overflow steps 0:", 0) == 0;
  EXPECT_TRUE(noted);
}

// Overflow steps need a step() that checks for overflow, and steps that exist.
TEST(ScheduleStage012Examples, OverflowStepsAreChecked) {
  const auto errors = [](DsConfig ds, std::vector<std::uint32_t> steps) {
    BuildOptions o = with_steps(3);
    o.overflow_steps = std::move(steps);
    o.expect_ok = false;
    const Built b = build(make_model(kG1), std::move(ds), 4, o);
    return b.schedule.ok() ? std::string() : b.schedule.diagnostics().to_string();
  };
  EXPECT_EQ(errors(zero_config(2, 8, false), {0, 1}), "");
  // The last step is the steady state a simulation reports: it must update.
  EXPECT_NE(errors(zero_config(2, 8, false), {2})
                .find("/overflow_steps: expected steps before the last one (2, the steady state a "
                      "simulation "
                      "reports), got 2"),
            std::string::npos);
  EXPECT_NE(
      errors(zero_config(2, 8, false), {1, 1}).find("expected ascending steps without repeats"),
      std::string::npos);
  DsConfig fp32 = zero_config(2, 8, false);
  fp32.fp16 = false;
  EXPECT_NE(errors(fp32, {0}).find("got float32 in stage 2"), std::string::npos);
  // Stage 0: FP16_Optimizer checks fp16 grads; in bf16 it does not, and fp32's bare optimizer has
  // no check at all.
  EXPECT_EQ(errors(zero_config(0, 8, false), {0}), "");
  DsConfig stage0_bf16 = zero_config(0, 8, false);
  stage0_bf16.fp16 = false;
  stage0_bf16.bf16 = true;
  EXPECT_NE(errors(stage0_bf16, {0}).find("got bfloat16 in stage 0"), std::string::npos);
  DsConfig stage0_fp32 = zero_config(0, 8, false);
  stage0_fp32.fp16 = false;
  EXPECT_NE(errors(stage0_fp32, {0}).find("got stage 0 (no ZeRO optimizer)"), std::string::npos);
}

// Stage 0 fp16, an overflow step: FP16_Optimizer.step() checks, then returns (no norm, no update,
// no write-back); the other steps update.
TEST(ScheduleStage012Examples, Stage0OverflowStepSkipsTheUpdate) {
  BuildOptions o = with_steps(3);
  o.overflow_steps = {1};
  const Built b = build(make_model(kG1), zero_config(0, 8, false), 4, o);
  ASSERT_TRUE(b.schedule.ok()) << b.schedule.diagnostics().to_string();
  std::uint32_t updates[3] = {}, norms[3] = {}, checks[3] = {};
  for (const Op& op : b.s().ops) {
    if (op.step >= 3) continue;
    updates[op.step] += op.kind == OpKind::OptimizerStep || op.kind == OpKind::WriteBack;
    norms[op.step] += op.kind == OpKind::GradNorm;
    checks[op.step] += op.kind == OpKind::GradOverflow;
  }
  for (std::uint32_t k : {0u, 2u}) {
    EXPECT_GT(updates[k], 0u) << "step " << k;
    EXPECT_GT(norms[k], 0u) << "step " << k;
  }
  EXPECT_EQ(updates[1], 0u);
  EXPECT_EQ(norms[1], 0u);
  EXPECT_GT(checks[1], 0u);
}

TEST(ScheduleStage012Examples, G13RealisticStage2SizingWithoutMaterialising) {
  std::vector<Elements> sizes(1000, 1000000);
  auto b = build(make_model(sizes), zero_config(2, 500000000, false), 8, with_steps(2));
  ASSERT_TRUE(b.schedule.ok());
  const Schedule& s = b.s();
  for (std::uint32_t step = 0; step < 2; ++step)
    EXPECT_EQ(step_collectives(s, step),
              (std::vector<Coll>{AR(500000000, Phase::Backward), AR(500000000, Phase::Epilogue),
                                 OVERFLOW_AR(), NORM_AR(), AG(1000000000, 125000000)}));
  // Ranks 4-7 receive their params in the first flush, ranks 0-3 in the second: two roles.
  ASSERT_EQ(s.roles.size(), 2u);
  EXPECT_EQ(s.role_of(0), s.role_of(3));
  EXPECT_EQ(s.role_of(4), s.role_of(7));
  EXPECT_NE(s.role_of(0), s.role_of(4));
  const std::uint32_t role0 = s.role_of(0);
  auto step1 = [](Phase ph) {
    return [ph](const Op& op) { return op.step == 1 && op.phase == ph; };
  };
  auto persistent = [](const Buffer& x) { return x.persistent; };
  // B1 2.0e9 + B2 0.5e9 + B3 1.0e9 bytes.
  EXPECT_EQ(peak_bytes(s, role0, step1(Phase::Backward), persistent), 3500000000u);
  // step(): flat LP copy 0.25e9 + fp32 grads 0.5e9 while grads_in_partition (0.25e9) is alive.
  EXPECT_EQ(peak_bytes(s, role0, step1(Phase::Step)), 4500000000u);
  // Epilogue: IPG 1.0e9 + grads_in_partition 0.25e9 on top of the persistent 3.5e9 ...
  auto not_t5 = [](const Buffer& x) { return x.spec_id != "T5"; };
  EXPECT_EQ(peak_bytes(s, role0, step1(Phase::Epilogue), not_t5), 4750000000u);
  // ... and, while the all-reduce runs, the flattened copy of its 4 owner slices (T5, 1.0e9), which
  // is freed before the owned grads are copied into grads_in_partition.
  EXPECT_EQ(peak_bytes(s, role0, step1(Phase::Epilogue)), 5500000000u);
}

TEST(ScheduleStage012Examples, G21Stage0EngineAllReduce) {
  auto ds = zero_config(0, 500000000, false);
  auto b = build(make_model(kG1), ds, 4);
  ASSERT_TRUE(b.schedule.ok());
  const Schedule& s = b.s();
  EXPECT_EQ(s.meta.optimizer, "FP16_Optimizer");
  EXPECT_EQ(step_collectives(s), (std::vector<Coll>{AR(15, Phase::BoundaryReduce)}));
  EXPECT_EQ(collectives(s, [](const Op& op) { return op.phase == Phase::Init; }),
            (std::vector<Coll>{BC(5), BC(3), BC(7)}));
  EXPECT_EQ(s.roles.size(), 1u);
  // GAS 2: still once per optimizer step, at the boundary.
  ds.grad_accum_steps = 2;
  auto gas = build(make_model(kG1), ds, 4);
  ASSERT_TRUE(gas.schedule.ok());
  auto colls = step_collectives(gas.s());
  ASSERT_EQ(colls.size(), 1u);
  for (const Op& op : gas.s().ops)
    if (op.kind == OpKind::Collective && op.phase == Phase::BoundaryReduce) {
      EXPECT_EQ(op.micro_step, 1u);
    }
}

TEST(ScheduleStage012Examples, Stage0ChunksWithTheFixedEngineLimit) {
  // CHUNK_GT(5e8): 3e8 stays, 3e8 more exceeds the limit (chunk of 6e8), then 1e8 alone;
  // reduce_bucket_size does not change it.
  auto ds = zero_config(0, 8, false);
  auto b = build(make_model({300000000, 300000000, 100000000}, {2, 1, 0}), ds, 2);
  ASSERT_TRUE(b.schedule.ok());
  EXPECT_EQ(step_collectives(b.s()), (std::vector<Coll>{AR(600000000, Phase::BoundaryReduce),
                                                        AR(100000000, Phase::BoundaryReduce)}));
  ds.fp16 = false;  // fp32: a bare torch optimizer, the same engine all-reduce in fp32
  auto plain = build(make_model({5, 3, 7}), ds, 4);
  ASSERT_TRUE(plain.schedule.ok());
  EXPECT_EQ(step_collectives(plain.s()),
            (std::vector<Coll>{AR(15, Phase::BoundaryReduce, DType::Float32)}));
}

TEST(ScheduleStage012Examples, V0144EmptyFlushIssuesAZeroElementAllReduce) {
  auto ds = zero_config(2, 4, true);
  ds.zero.reduce_scatter = false;
  auto old = build(make_model({10}), ds, 2, with_version(DeepSpeedVersion::V0_14_4));
  ASSERT_TRUE(old.schedule.ok());
  EXPECT_EQ(reduction_colls(old.s()),
            (std::vector<Coll>{AR(0, Phase::Backward), AR(10, Phase::Epilogue)}));
  auto now = build(make_model({10}), ds, 2);
  ASSERT_TRUE(now.schedule.ok());
  EXPECT_EQ(reduction_colls(now.s()), (std::vector<Coll>{AR(10, Phase::Epilogue)}));
  // With reduce_scatter the empty flush issues nothing in both versions.
  ds.zero.reduce_scatter = true;
  auto old_rs = build(make_model({10}), ds, 2, with_version(DeepSpeedVersion::V0_14_4));
  ASSERT_TRUE(old_rs.schedule.ok());
  EXPECT_EQ(reduction_colls(old_rs.s()),
            (std::vector<Coll>{AR(6, Phase::Epilogue), AR(4, Phase::Epilogue)}));
  EXPECT_EQ(old_rs.s().meta.deepspeed_version, DeepSpeedVersion::V0_14_4);
}

// A config resolved with one release's rules (DsConfig::version) is not built as the other's: the
// dtypes and the wrapper would mix the two (v0.14.4 stage 0 bf16 is BF16_Optimizer, edaa722's is
// FP16_Optimizer).
TEST(ScheduleStage012Examples, AConfigResolvedForAnotherReleaseIsRefused) {
  DsConfig ds = default_ds_config(0, DType::BFloat16);
  ModelDesc model = make_model({10, 6});
  auto plan = plan_partition(model, partition_options(ds, 2));
  ASSERT_TRUE(plan.ok());
  ScheduleInput in;
  in.model = &model;
  in.plan = &plan.value();
  in.ds = &ds;
  in.cluster.nodes = 1;
  in.cluster.gpus_per_node = 2;
  in.version = DeepSpeedVersion::V0_14_4;
  const auto r = build_schedule(in);
  EXPECT_EQ(r.diagnostics().to_string(),
            "schedule: /deepspeed_version: expected the DeepSpeed config resolved for DeepSpeed "
            "0.14.4, got one resolved for edaa722 (internal error)\n");
  ds.version = DeepSpeedVersion::V0_14_4;
  const auto ok = build_schedule(in);
  ASSERT_TRUE(ok.ok()) << ok.diagnostics().to_string();
  EXPECT_EQ(ok.value().meta.optimizer, "BF16_Optimizer");
  EXPECT_EQ(ok.value().meta.grad_accum_dtype, DType::Float32);
}

TEST(ScheduleStage012Examples, V0144AllocatesIpgBuffersInBackwardEveryMicroStep) {
  auto ds = zero_config(1, 8, false);
  ds.grad_accum_steps = 2;
  auto old = build(make_model(kG1, {2, 1, 0}), ds, 4, with_version(DeepSpeedVersion::V0_14_4));
  auto now = build(make_model(kG1, {2, 1, 0}), ds, 4);
  ASSERT_TRUE(old.schedule.ok());
  ASSERT_TRUE(now.schedule.ok());
  EXPECT_EQ(reduction_colls(old.s()), reduction_colls(now.s()));  // same collectives
  std::vector<std::pair<OpKind, std::uint32_t>> events;
  for (const Op& op : old.s().ops)
    if ((op.kind == OpKind::Alloc || op.kind == OpKind::Free) &&
        old.s().buffers[op.buffer].spec_id == "T2") {
      events.emplace_back(op.kind, op.micro_step);
      if (op.kind == OpKind::Alloc) {
        EXPECT_EQ(op.phase, Phase::Backward);
      }
    }
  EXPECT_EQ(events,
            (std::vector<std::pair<OpKind, std::uint32_t>>{
                {OpKind::Alloc, 0}, {OpKind::Free, 1}, {OpKind::Alloc, 1}, {OpKind::Free, 1}}));
}

TEST(ScheduleStage012Examples, Bf16OptimizerReroute) {
  DsConfig ds;
  ds.bf16 = true;
  ds.grad_accum_dtype = DType::Float32;
  ds.zero.stage = 1;
  auto b = build(make_model(kG1), ds, 4);
  ASSERT_TRUE(b.schedule.ok());
  const Schedule& s = b.s();
  EXPECT_EQ(s.meta.optimizer, "BF16_Optimizer");
  // The engine all-reduces the 2W-aligned fp32 buffer in CD (bf16); no overflow or norm all-reduce.
  EXPECT_EQ(step_collectives(s), (std::vector<Coll>{AR(16, Phase::BoundaryReduce, DType::BFloat16),
                                                    AG(16, 4, DType::BFloat16)}));
  bool full_fp32 = false;
  for (const Buffer& buf : s.buffers)
    full_fp32 |= buf.category == BufferCategory::Grad && buf.dtype == DType::Float32 &&
                 buf.numel == 16 && buf.persistent;
  EXPECT_TRUE(full_fp32);
}

TEST(ScheduleStage012Examples, CpuOptimizerOffloadCopiesOwnedSlices) {
  auto ds = zero_config(2, 8, false);
  ds.zero.offload_optimizer.device = OffloadDevice::Cpu;
  ds.zero.offload_optimizer.pin_memory = true;
  auto b = build(make_model(kG1, {2, 1, 0}), ds, 4);
  ASSERT_TRUE(b.schedule.ok());
  const Schedule& s = b.s();
  EXPECT_EQ(step_collectives(s), (std::vector<Coll>{AR(7, Phase::Backward), AR(8, Phase::Epilogue),
                                                    OVERFLOW_AR(), NORM_AR(), AG(16, 4)}));
  // Owned slices go to B4 in fp32: 4, 4, 4 and 3 (rank 3's last element is padding).
  const std::vector<Elements> owned = {4, 4, 4, 3};
  for (std::uint32_t r = 0; r < 4; ++r) {
    Elements d2h = 0;
    for (const Op& op : s.ops)
      if (op.kind == OpKind::DeviceToHost) {
        d2h += s.op_elements(op, s.role_of(r));
        EXPECT_EQ(op.dtype, DType::Float32);
      }
    EXPECT_EQ(d2h, owned[r]) << "rank " << r;
  }
  bool host_step = false;
  for (const Op& op : s.ops)
    host_step |= op.kind == OpKind::OptimizerStep && op.stream == Stream::Host;
  EXPECT_TRUE(host_step);
  for (const Buffer& buf : s.buffers) {
    EXPECT_NE(buf.spec_id, "T3");  // no grads_in_partition on the GPU
    if (buf.spec_id == "B2" || buf.spec_id == "B4" || buf.spec_id == "B5" || buf.spec_id == "B7") {
      EXPECT_EQ(buf.pool, MemoryPool::Pinned) << buf.name;
    }
    if (buf.spec_id == "B6") {
      EXPECT_EQ(buf.numel, 7u);
    }
  }
}

// Pinned CPU offload at init (stage_1_and_2.py:492-507 at edaa722): each group's unpinned fp32
// copy lives from before B2 to after the master copy; temp_buffer_bit16 of a group stays until the
// next group rebinds the name, the last one until __init__ returns (after B7). v0.14.4 has no
// temp_buffer_bit16; without pin_memory neither transient exists.
TEST(ScheduleStage012Examples, PinnedOffloadHoldsInitHostTransients) {
  struct Life {
    std::size_t alloc = SIZE_MAX, free = SIZE_MAX;
  };
  const auto lives = [](const Schedule& s) {
    std::map<std::string, Life> out;
    for (std::size_t i = 0; i < s.ops.size(); ++i) {
      const Op& op = s.ops[i];
      if (op.kind != OpKind::Alloc && op.kind != OpKind::Free) continue;
      Life& l = out[s.buffers[op.buffer].name];
      (op.kind == OpKind::Alloc ? l.alloc : l.free) = i;
      if (s.buffers[op.buffer].category == BufferCategory::Temp &&
          s.buffers[op.buffer].pool == MemoryPool::Host) {
        EXPECT_EQ(op.phase, Phase::Init) << s.buffers[op.buffer].name;
      }
    }
    return out;
  };
  auto ds = zero_config(2, 8, false);
  ds.zero.offload_optimizer.device = OffloadDevice::Cpu;
  ds.zero.offload_optimizer.pin_memory = true;
  const auto groups = with_groups({{0, 1}, {2}});
  auto b = build(make_model(kG1), ds, 4, groups);
  ASSERT_TRUE(b.schedule.ok());
  auto l = lives(b.s());
  for (const std::string g : {"0", "1"}) {
    const Life& unpinned = l["fp32 master before pin_memory [" + g + "]"];
    const Life& b2 = l["single_partition_of_fp32_groups[" + g + "]"];
    const Life& b4 = l["fp32 grad partition [" + g + "]"];
    const Life& lp = l["temp_buffer_bit16 [" + g + "]"];
    EXPECT_LT(unpinned.alloc, b2.alloc) << g;
    EXPECT_GT(unpinned.free, b2.alloc) << g;
    EXPECT_LT(unpinned.free, lp.alloc) << g;
    EXPECT_LT(lp.alloc, b4.alloc) << g;
  }
  EXPECT_GT(l["temp_buffer_bit16 [0]"].free, l["temp_buffer_bit16 [1]"].alloc);
  EXPECT_LT(l["temp_buffer_bit16 [0]"].free, l["fp32 grad partition [1]"].alloc);
  EXPECT_GT(l["temp_buffer_bit16 [1]"].free, l["temp_grad_buffer_for_cpu_offload"].alloc);
  EXPECT_NE(l["temp_buffer_bit16 [1]"].free, SIZE_MAX);
  for (const Buffer& buf : b.s().buffers)
    if (buf.name.starts_with("fp32 master before pin_memory")) {
      EXPECT_EQ(buf.dtype, DType::Float32);
      EXPECT_EQ(buf.pool, MemoryPool::Host);  // unpinned
      EXPECT_FALSE(buf.persistent);
    }

  auto old_groups = groups;
  old_groups.version = DeepSpeedVersion::V0_14_4;
  auto old = build(make_model(kG1), ds, 4, old_groups);
  ASSERT_TRUE(old.schedule.ok());
  l = lives(old.s());
  EXPECT_EQ(l.count("temp_buffer_bit16 [0]"), 0u);
  EXPECT_EQ(l.count("fp32 master before pin_memory [1]"), 1u);

  ds.zero.offload_optimizer.pin_memory = false;
  auto unpinned = build(make_model(kG1), ds, 4, groups);
  ASSERT_TRUE(unpinned.schedule.ok());
  for (const Buffer& buf : unpinned.s().buffers) {
    EXPECT_FALSE(buf.name.starts_with("fp32 master before pin_memory")) << buf.name;
    EXPECT_FALSE(buf.name.starts_with("temp_buffer_bit16")) << buf.name;
  }
}

TEST(ScheduleStage012Examples, CpuOffloadWithGradAccumUsesCpuAccumulators) {
  auto ds = zero_config(2, 8, false);
  ds.zero.offload_optimizer.device = OffloadDevice::Cpu;
  ds.grad_accum_steps = 2;
  for (const DeepSpeedVersion v : {DeepSpeedVersion::Edaa722, DeepSpeedVersion::V0_14_4}) {
    auto b = build(make_model(kG1, {2, 1, 0}), ds, 4, testlib::with_version(v));
    ASSERT_TRUE(b.schedule.ok());
    const Schedule& s = b.s();
    const std::uint32_t role1 = s.role_of(1);  // holds p0 and p1 (8 elements)
    Elements h2d = 0, d2h_lp = 0, b8 = 0;
    for (const Op& op : s.ops) {
      if (op.kind == OpKind::HostToDevice && op.phase != Phase::Step)
        h2d += s.op_elements(op, role1);
      if (op.kind == OpKind::DeviceToHost && op.dtype == DType::Float16)
        d2h_lp += s.op_elements(op, role1);
    }
    for (std::uint32_t i = 0; i < s.buffers.size(); ++i)
      if (s.buffers[i].spec_id == "B8") b8 += s.buffer_numel(i, role1);
    EXPECT_EQ(h2d, 8u);  // micro-step 1 adds the accumulator back
    // Micro-step 0 (not a boundary) stores into the accumulator; edaa722 stores again at the
    // boundary (copy_gradients_to_cpu is unconditional, stage_1_and_2.py:1559), v0.14.4 not.
    EXPECT_EQ(d2h_lp, v == DeepSpeedVersion::V0_14_4 ? 8u : 16u);
    EXPECT_EQ(b8, 8u);
  }
}

TEST(ScheduleStage012Examples, Stage1GradAccumAttributeModeKeepsFp32Accumulators) {
  auto ds = zero_config(1, 8, false);
  ds.grad_accum_dtype = DType::Float32;  // fp16 model + fp32 accumulation: p.grad_accum
  ds.grad_accum_steps = 2;
  auto b = build(make_model(kG1, {2, 1, 0}), ds, 4);
  ASSERT_TRUE(b.schedule.ok());
  const Schedule& s = b.s();
  EXPECT_EQ(reduction_colls(s),
            (std::vector<Coll>{AR(8, Phase::BoundaryReduce), AR(7, Phase::Epilogue)}));
  Elements accum = 0;
  for (const Buffer& buf : s.buffers)
    if (buf.name.rfind("grad_accum:", 0) == 0) {
      EXPECT_EQ(buf.dtype, DType::Float32);
      accum += buf.numel;
    }
  EXPECT_EQ(accum, 15u);
  // The step flattens fp32 grads: no separate master-dtype copy (T7).
  for (const Buffer& buf : s.buffers) {
    EXPECT_NE(buf.spec_id, "T7");
    if (buf.spec_id == "T6") {
      EXPECT_EQ(buf.dtype, DType::Float32);
    }
  }
}

TEST(ScheduleStage012Examples, FlushesInterleaveWithLayerBackward) {
  // Three layers, one param each; backward L2, L1, L0 makes p2, p1, p0 ready in turn. With R = 8
  // the arrival of p1 flushes {p2}: the all-reduce follows L1's backward, before L0's.
  ModelDesc m = make_model(kG1, {2, 1, 0});
  for (std::uint32_t l = 0; l < 3; ++l) {
    Layer layer;
    layer.name = "L" + std::to_string(l);
    layer.param_ids = {l};
    layer.fwd_flops_per_token = 10;
    m.layers.push_back(layer);
  }
  auto b = build(m, zero_config(2, 8, false), 4);
  ASSERT_TRUE(b.schedule.ok());
  std::vector<std::string> trace;
  for (const Op& op : b.s().ops) {
    if (op.phase != Phase::Forward && op.phase != Phase::Backward && op.phase != Phase::Epilogue)
      continue;
    if (op.kind == OpKind::Forward || op.kind == OpKind::Backward) trace.push_back(op.label);
    if (op.kind == OpKind::Collective) trace.push_back(op.label);
  }
  EXPECT_EQ(trace, (std::vector<std::string>{"fwd L0", "fwd L1", "fwd L2", "bwd L2", "bwd L1",
                                             "flush 0: AR(7)", "bwd L0", "flush 1: AR(8)"}));
  for (const Op& op : b.s().ops)
    if (op.kind == OpKind::Backward) {
      EXPECT_DOUBLE_EQ(op.flops, 2 * 10.0 * 4096);  // 2 x forward, micro-batch 1 x 4096 tokens
    }
}

}  // namespace
}  // namespace zerosim
