// The time model's defaults (time_model.h, docs/time_model.md): each one's effect on a prediction.
// GEMM efficiency by generation and hidden size with its roofline cap, NVLS on NVSwitch Hopper
// nodes, host costs in small-batch stage 3, human units and the speed of a step.
#include "zerosim/time_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "simulator_testlib.h"
#include "zerosim/collective_model.h"
#include "zerosim/engine.h"
#include "zerosim/gpu_catalog.h"
#include "zerosim/model_loader.h"
#include "zerosim/partition_plan.h"
#include "zerosim/schedule_builder.h"

namespace zerosim {
namespace {

GpuSpec gpu(const std::string& name) {
  auto g = find_gpu(name);
  EXPECT_TRUE(g.ok()) << name;
  return g.ok() ? g.value() : GpuSpec{};
}

TEST(TimeModel, CatalogNamesGenerationsAndNvswitch) {
  EXPECT_EQ(gpu("H100-SXM-80GB").generation, GpuGeneration::Hopper);
  EXPECT_TRUE(gpu("H100-SXM-80GB").nvswitch);
  EXPECT_FALSE(gpu("H100-PCIe-80GB").nvswitch);
  EXPECT_EQ(gpu("A100-80GB").generation, GpuGeneration::Ampere);
  EXPECT_EQ(gpu("B200").generation, GpuGeneration::Blackwell);
  EXPECT_EQ(gpu("V100-32GB").generation, GpuGeneration::Volta);
  // MI250X (CDNA2) alone names none: no GEMM efficiency table has been published for it, so its
  // compute efficiency is the stated fallback rather than another generation's curve.
  for (const GpuSpec& g : gpu_catalog()) {
    if (g.name != "MI250X") {
      EXPECT_NE(g.generation, GpuGeneration::Unknown) << g.name << " names no generation";
    }
  }
  EXPECT_EQ(compute_rate(gpu("MI250X"), DType::BFloat16, {8192, 4096}, std::nullopt).basis,
            "default: fallback 0.5 (the GPU names no generation)");
}

TEST(TimeModel, EfficiencyIsLowerForSmallHiddenSizes) {
  const GpuSpec h100 = gpu("H100-SXM-80GB");
  double last = 0;
  for (std::uint64_t h : {768, 1024, 2048, 4096, 8192, 16384}) {
    const ComputeRate r = compute_rate(h100, DType::BFloat16, {h, 8192}, std::nullopt);
    EXPECT_GT(r.efficiency, last) << "hidden " << h;
    last = r.efficiency;
  }
  // The fit goes through its two measured points (llm-foundry H100 HFU).
  EXPECT_NEAR(compute_rate(h100, DType::BFloat16, {1536, 8192}, std::nullopt).efficiency, 0.38,
              0.005);
  EXPECT_NEAR(compute_rate(h100, DType::BFloat16, {8192, 8192}, std::nullopt).efficiency, 0.57,
              0.005);
  // Ampere's curve: 52% at 1024 and 74.5% at 7168 (llm-foundry A100 HFU: 73.7-75.2% for MPT-30b).
  const GpuSpec a100 = gpu("A100-80GB");
  EXPECT_NEAR(compute_rate(a100, DType::BFloat16, {1024, 8192}, std::nullopt).efficiency, 0.52,
              0.005);
  EXPECT_NEAR(compute_rate(a100, DType::BFloat16, {7168, 8192}, std::nullopt).efficiency, 0.745,
              0.005);
  const ComputeRate r = compute_rate(h100, DType::BFloat16, {4096, 8192}, std::nullopt);
  EXPECT_NE(r.basis.find("default: hopper GEMM curve at hidden 4096"), std::string::npos)
      << r.basis;
}

TEST(TimeModel, FewTokensPerMicroBatchAreMemoryBound) {
  const GpuSpec h100 = gpu("H100-SXM-80GB");
  const ComputeRate big = compute_rate(h100, DType::BFloat16, {4096, 4096}, std::nullopt);
  const ComputeRate few = compute_rate(h100, DType::BFloat16, {4096, 64}, std::nullopt);
  EXPECT_LT(few.efficiency, big.efficiency / 2);
  // [64 x 4096] x [4096 x 4096] in bf16: 2·64·4096² FLOPs over 2·(2·64·4096 + 4096²) bytes.
  const double intensity = 64.0 * 4096 / (2 * 64 + 4096);
  EXPECT_NEAR(few.efficiency, intensity * 3350e9 / 989.5e12, 1e-9);
  EXPECT_NE(few.basis.find("memory-bound"), std::string::npos) << few.basis;
}

TEST(TimeModel, GivenEfficiencyAndFallback) {
  const ComputeRate given = compute_rate(gpu("H100-SXM-80GB"), DType::BFloat16, {4096, 4096}, 0.3);
  EXPECT_DOUBLE_EQ(given.efficiency, 0.3);
  EXPECT_EQ(given.basis.rfind("given: --efficiency", 0), 0u) << given.basis;
  const ComputeRate unknown_shape =
      compute_rate(gpu("H100-SXM-80GB"), DType::BFloat16, {}, std::nullopt);
  EXPECT_DOUBLE_EQ(unknown_shape.efficiency, kFallbackComputeEfficiency);
  EXPECT_NE(unknown_shape.basis.find("GEMM shape unknown"), std::string::npos);
  const ComputeRate no_generation =
      compute_rate(simtest::round_gpu(), DType::BFloat16, {4096, 4096}, std::nullopt);
  EXPECT_DOUBLE_EQ(no_generation.efficiency, kFallbackComputeEfficiency);
}

CollectiveCost all_reduce(const LinkParams& l, Elements count, CollectiveGroup g) {
  CollectiveRequest r;
  r.kind = CollectiveKind::AllReduce;
  r.count = count;
  r.dtype = DType::BFloat16;
  r.group = g;
  auto c = collective_cost(r, l);
  EXPECT_TRUE(c.ok());
  return c.ok() ? c.value() : CollectiveCost{};
}

TEST(TimeModel, NvlsAllReduceInsideAnH100NvswitchNode) {
  const LinkParams h100 = links_for_gpu(gpu("H100-SXM-80GB"));
  EXPECT_NEAR(h100.nvls_algbw_gbps, 450 * 0.61, 1e-9);
  const Elements n = 512ULL << 20;  // 1 GiB of bf16
  const CollectiveCost in_node = all_reduce(h100, n, {8, 1, 8});
  EXPECT_STREQ(in_node.algorithm, "nvls");
  EXPECT_EQ(in_node.duration_ns,
            std::llround(25e3 + static_cast<double>(2 * n) / h100.nvls_algbw_gbps));
  // nccl-tests busbw of that call: algbw x 2(n-1)/n = 274.5 x 1.75 = 480 GB/s, the measured peak.
  const double busbw = static_cast<double>(2 * n) / static_cast<double>(in_node.duration_ns) * 1.75;
  EXPECT_NEAR(busbw, 480, 5);  // 477: the 25 µs latency costs a little at 1 GiB
  // Across nodes NVLS needs CollNet (not modelled): ring or tree.
  EXPECT_STRNE(all_reduce(h100, n, {16, 2, 8}).algorithm, "nvls");
  // No NVLS on Ampere (NCCL's nvlsEfficiency is 0) nor without NVSwitch.
  EXPECT_EQ(links_for_gpu(gpu("A100-80GB")).nvls_algbw_gbps, 0);
  EXPECT_EQ(links_for_gpu(gpu("H100-PCIe-80GB")).nvls_algbw_gbps, 0);
  EXPECT_STRNE(all_reduce(links_for_gpu(gpu("A100-80GB")), n, {8, 1, 8}).algorithm, "nvls");
  // Forcing ring keeps the ring (NCCL_ALGO=Ring).
  CollectiveRequest r;
  r.count = n;
  r.dtype = DType::BFloat16;
  r.group = {8, 1, 8};
  r.algorithm = CollectiveAlgorithm::Ring;
  EXPECT_STREQ(collective_cost(r, h100)->algorithm, "ring");
  // NVLS is 1.3x the ring's busbw here: 1 GiB takes longer on the ring.
  EXPECT_GT(collective_cost(r, h100)->duration_ns, in_node.duration_ns);
}

TEST(TimeModel, NvlsBadInputIsRefused) {
  LinkParams l = links_for_gpu(gpu("H100-SXM-80GB"));
  l.nvls_algbw_gbps = -1;
  CollectiveRequest r;
  r.count = 1024;
  r.group = {8, 1, 8};
  EXPECT_FALSE(collective_cost(r, l).ok());
  l = links_for_gpu(gpu("A100-80GB"));
  r.algorithm = CollectiveAlgorithm::Nvls;
  auto c = collective_cost(r, l);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.diagnostics().items().front().message.find("NVLS only"), std::string::npos);
}

// The schedule of `model` at `stage` on 8 x H100 at micro-batch 1 and `seq` tokens (two steps at
// stage 3, built under zero.Init).
struct Built {
  ModelDesc model;
  DsConfig ds;
  PartitionPlan plan;
  GpuSpec gpu;
  Schedule schedule;
};

Built build_8xh100(const std::string& model, int stage, std::uint64_t seq) {
  Built b;
  auto m = load_zoo_model(model);
  EXPECT_TRUE(m.ok());
  if (m.ok()) b.model = m.value();
  b.ds = default_ds_config(stage, DType::BFloat16);
  auto plan = plan_partition(b.model, partition_options(b.ds, 8));
  EXPECT_TRUE(plan.ok());
  if (plan.ok()) b.plan = plan.value();
  b.gpu = gpu("H100-SXM-80GB");
  ScheduleInput in;
  in.model = &b.model;
  in.plan = &b.plan;
  in.ds = &b.ds;
  in.cluster.gpu = b.gpu;
  in.cluster.nodes = 1;
  in.cluster.gpus_per_node = 8;
  in.training.micro_batch = 1;
  in.training.seq_len = seq;
  in.training.zero_init = stage == 3;
  in.steps = stage == 3 ? 2 : 1;
  auto s = build_schedule(in);
  EXPECT_TRUE(s.ok());
  if (s.ok()) b.schedule = std::move(s.value());
  return b;
}

// One step of that schedule; returns the (last) step.
SimTime step_time(const std::string& model, int stage, std::uint64_t seq, const HostCosts& host) {
  const Built b = build_8xh100(model, stage, seq);
  EngineOptions o;
  o.gemm = {b.model.arch->hidden, seq};
  o.host = host;
  o.record_trace = false;
  auto r = simulate(b.schedule, b.gpu, o);
  EXPECT_TRUE(r.ok());
  if (!r.ok()) return 0;
  const auto& last = r->summary.steps.back();
  return last.end_ns - last.start_ns;
}

TEST(TimeModel, HostCostsDominateSmallBatchStage3) {
  // gpt2 (124M) at 128 tokens: each module's GEMMs take a few µs, its hooks tens of µs.
  const SimTime with = step_time("gpt2", 3, 128, HostCosts{});
  const SimTime without = step_time("gpt2", 3, 128, HostCosts::none());
  EXPECT_GT(with, 2 * without) << with << " vs " << without;
  // Stage 2 has no module hooks: host costs matter far less there.
  const SimTime s2_with = step_time("gpt2", 2, 128, HostCosts{});
  const SimTime s2_without = step_time("gpt2", 2, 128, HostCosts::none());
  EXPECT_LT(static_cast<double>(s2_with - s2_without), 0.5 * static_cast<double>(with - without));
  // Large micro-batches hide most of the host behind the GPU: at 4096 tokens it adds a fraction
  // of the step (about a fifth), where at 128 tokens it more than doubles it.
  const SimTime big_with = step_time("gpt2", 3, 4096, HostCosts{});
  const SimTime big_without = step_time("gpt2", 3, 4096, HostCosts::none());
  const double small_overhead = static_cast<double>(with) / static_cast<double>(without) - 1;
  const double big_overhead = static_cast<double>(big_with) / static_cast<double>(big_without) - 1;
  EXPECT_LT(big_overhead, small_overhead / 4) << big_overhead << " vs " << small_overhead;
}

// Every collective call is launched by the host, the repeated ones too: the engine costs identical
// calls once and reuses that cost, which once left the launch on the first of them only.
TEST(TimeModel, EveryIdenticalCollectiveCallPaysItsLaunch) {
  const Built b = build_8xh100("gpt2", 3, 128);
  const auto durations = [&](const HostCosts& host) {
    EngineOptions o;
    o.host = host;
    auto r = simulate(b.schedule, b.gpu, o);
    EXPECT_TRUE(r.ok());
    std::map<std::uint32_t, SimTime> by_op;  // collective op -> its span's duration
    if (r.ok())
      for (const Span& sp : r->trace.spans)
        if (sp.comm != kNone) by_op[sp.op] = sp.dur_ns;
    return by_op;
  };
  HostCosts launch = HostCosts::none();
  launch.collective_launch_us = 10;
  const auto with = durations(launch);
  const auto without = durations(HostCosts::none());
  ASSERT_EQ(with.size(), without.size());
  ASSERT_GT(with.size(), 100u);  // many all-gathers of the same sizes
  std::size_t moving = 0;
  for (const auto& [op, d] : without) {
    if (d == 0) continue;  // a call that moves nothing is not launched
    ++moving;
    EXPECT_EQ(with.at(op), d + 10'000) << b.schedule.ops[op].label;
  }
  EXPECT_GT(moving, 100u);
}

TEST(TimeModel, HostComputeShare) {
  HostCosts h;
  EXPECT_DOUBLE_EQ(host_compute_ns(h, OpKind::Forward, 1, false), 16 * 5e3);
  EXPECT_DOUBLE_EQ(host_compute_ns(h, OpKind::Backward, 4, false), 32 * 5e3 / 4);
  EXPECT_DOUBLE_EQ(host_compute_ns(h, OpKind::Forward, 4, true), (16 * 5.0 / 4 + 40 + 20) * 1e3);
  EXPECT_DOUBLE_EQ(host_compute_ns(HostCosts::none(), OpKind::Forward, 1, true), 0);
}

TEST(TimeModel, HumanDurations) {
  EXPECT_EQ(human_duration(0), "0 ms");
  EXPECT_EQ(human_duration(812'000), "812 us");
  EXPECT_EQ(human_duration(51'300'000), "51.3 ms");
  EXPECT_EQ(human_duration(5'140'000'000), "5.14 s");
  EXPECT_EQ(human_duration(144'000'000'000), "2.40 min");
  EXPECT_EQ(human_duration(7'200'000'000'000), "2.00 h");
}

TEST(TimeModel, StepSpeedIsModelFlopsOverPeak) {
  Schedule s = simtest::tiny_schedule(4);
  s.meta.lp = DType::BFloat16;
  s.meta.grad_accum = 2;
  Op f = simtest::make_op(OpKind::Forward);
  f.flops = 1e12;
  Op b = simtest::make_op(OpKind::Backward);
  b.flops = 2e12;
  Op rc = simtest::make_op(OpKind::Recompute);
  rc.flops = 1e12;  // recompute is not model FLOPs
  s.ops = {f, rc, b};
  Summary sum;
  sum.steps = {{0, 0, 100'000'000, 0, 0, 0}};  // 0.1 s
  const StepSpeed v = step_speed(sum, s, simtest::round_gpu(), {1024, 2048});
  EXPECT_DOUBLE_EQ(v.model_flops_per_gpu, 3e12);
  EXPECT_NEAR(v.mfu, 3e12 / (0.1 * 100e12), 1e-12);
  EXPECT_DOUBLE_EQ(v.tokens_per_step, 2048.0 * 2 * 4);
  EXPECT_NEAR(v.tokens_per_s, 2048.0 * 2 * 4 / 0.1, 1e-6);
  EXPECT_EQ(step_speed(sum, s, simtest::round_gpu(), {}).tokens_per_s, 0);
}

}  // namespace
}  // namespace zerosim
