// Simulation memory grows with tensors and buckets, not with ranks: the same model at 1024 and at
// 65536 GPUs gives results of about the same size (SimulationResult::footprint_bytes counts every
// vector the result holds: op times, ledger, per-role memory, summary, trace). The rank roles stand
// for the ranks: their rank counts add up to the world size, and each role is one entry in the
// summary however many ranks it covers. bench/simulate_bench.cc shows the same for Llama-2-70B,
// with times.
#include <gtest/gtest.h>

#include "zerosim/engine.h"
#include "zerosim/model_loader.h"
#include "zerosim/schedule_builder.h"

namespace zerosim {
namespace {

SimulationResult simulate_llama7b(int stage, std::uint32_t gpus) {
  auto m = load_zoo_model("llama2-7b");
  EXPECT_TRUE(m.ok()) << m.diagnostics().to_string();
  const DsConfig ds = default_ds_config(stage, DType::BFloat16);
  PartitionOptions o;
  o.stage = stage;
  o.world = gpus;
  o.param_persistence_threshold = ds.zero.param_persistence_threshold;
  const PartitionPlan plan = plan_partition(m.value(), o).value();
  ScheduleInput in;
  in.model = &m.value();
  in.plan = &plan;
  in.ds = &ds;
  in.cluster.gpu = find_gpu("H100-SXM-80GB").value();
  in.cluster.nodes = gpus / 8;
  in.cluster.gpus_per_node = 8;
  auto s = build_schedule(in);
  EXPECT_TRUE(s.ok()) << s.diagnostics().to_string();
  auto r = simulate(s.value(), in.cluster.gpu);
  EXPECT_TRUE(r.ok()) << r.diagnostics().to_string();
  std::uint64_t ranks = 0;
  for (const RolePeakSummary& p : r->summary.peaks) ranks += p.rank_count;
  EXPECT_EQ(ranks, gpus);
  EXPECT_EQ(r->summary.peaks.size(), s->roles.size());
  return std::move(r.value());
}

void expect_flat(int stage) {
  const SimulationResult small = simulate_llama7b(stage, 1024);
  const SimulationResult large = simulate_llama7b(stage, 65536);
  const auto a = static_cast<double>(small.footprint_bytes());
  const auto b = static_cast<double>(large.footprint_bytes());
  ::testing::Test::RecordProperty("footprint_1024", std::to_string(small.footprint_bytes()));
  ::testing::Test::RecordProperty("footprint_65536", std::to_string(large.footprint_bytes()));
  EXPECT_LT(b, 1.1 * a) << "1024 GPUs: " << a << " B, 65536 GPUs: " << b << " B";
  EXPECT_LT(a, 1.1 * b);
  EXPECT_EQ(small.ops.size(), large.ops.size());
  EXPECT_EQ(small.ledger.event_count(), large.ledger.event_count());
}

TEST(SimulatorScale, Stage2MemoryIsFlatInRanks) { expect_flat(2); }
TEST(SimulatorScale, Stage3MemoryIsFlatInRanks) { expect_flat(3); }

}  // namespace
}  // namespace zerosim
