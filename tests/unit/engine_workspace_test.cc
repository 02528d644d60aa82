// EngineWorkspace (engine.h): simulate() refills the arrays it keeps from call to call, and a
// recycled result's, without reading anything a previous call left there. Every simulation below
// runs once in a fresh workspace and once in a workspace that just ran other schedules (larger,
// smaller, of another stage, one that failed), with every result handed back: both must agree
// on every op time, ledger event, peak and summary figure. A result dropped on a thread goes back
// to that thread's workspace by itself (SimulationResult's destructor).
#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <utility>
#include <vector>

#include "zerosim/engine.h"
#include "zerosim/model_loader.h"
#include "zerosim/schedule_builder.h"

namespace zerosim {
namespace {

Schedule schedule_of(const char* model, int stage, std::uint32_t gpus) {
  auto m = load_zoo_model(model);
  EXPECT_TRUE(m.ok()) << m.diagnostics().to_string();
  const DsConfig ds = default_ds_config(stage, DType::BFloat16);
  const PartitionPlan plan = plan_partition(m.value(), partition_options(ds, gpus)).value();
  ScheduleInput in;
  in.model = &m.value();
  in.plan = &plan;
  in.ds = &ds;
  in.cluster.gpu = find_gpu("H100-SXM-80GB").value();
  in.cluster.nodes = gpus / 8;
  in.cluster.gpus_per_node = 8;
  auto s = build_schedule(in);
  EXPECT_TRUE(s.ok()) << s.diagnostics().to_string();
  return std::move(s.value());
}

GpuSpec h100() { return find_gpu("H100-SXM-80GB").value(); }

void expect_same(const SimulationResult& a, const SimulationResult& b) {
  ASSERT_EQ(a.ops.size(), b.ops.size());
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    ASSERT_EQ(a.ops[i].start_ns, b.ops[i].start_ns) << "op " << i;
    ASSERT_EQ(a.ops[i].end_ns, b.ops[i].end_ns) << "op " << i;
  }
  ASSERT_EQ(a.ledger.event_count(), b.ledger.event_count());
  for (std::size_t e = 0; e < a.ledger.event_count(); ++e) {
    ASSERT_EQ(a.ledger.events()[e].t, b.ledger.events()[e].t) << "event " << e;
    ASSERT_EQ(a.ledger.events()[e].buffer, b.ledger.events()[e].buffer) << "event " << e;
  }
  ASSERT_EQ(a.ledger.buffers().size(), b.ledger.buffers().size());
  ASSERT_EQ(a.memory.size(), b.memory.size());
  for (std::size_t r = 0; r < a.memory.size(); ++r) {
    EXPECT_EQ(a.memory[r].device.bytes, b.memory[r].device.bytes);
    EXPECT_EQ(a.memory[r].steady.bytes, b.memory[r].steady.bytes);
    EXPECT_EQ(a.memory[r].host.bytes, b.memory[r].host.bytes);
  }
  EXPECT_EQ(a.summary.total_ns, b.summary.total_ns);
  EXPECT_EQ(a.summary.init_ns, b.summary.init_ns);
  ASSERT_EQ(a.summary.steps.size(), b.summary.steps.size());
  for (std::size_t k = 0; k < a.summary.steps.size(); ++k) {
    EXPECT_EQ(a.summary.steps[k].end_ns, b.summary.steps[k].end_ns);
    EXPECT_EQ(a.summary.steps[k].bytes_sent, b.summary.steps[k].bytes_sent);
  }
  ASSERT_EQ(a.trace.spans.size(), b.trace.spans.size());
  for (std::size_t k = 0; k < a.trace.spans.size(); ++k) {
    EXPECT_EQ(a.trace.spans[k].wait_ns, b.trace.spans[k].wait_ns) << "span " << k;
    EXPECT_EQ(a.trace.spans[k].wait_stream, b.trace.spans[k].wait_stream) << "span " << k;
  }
}

SimulationResult fresh(const Schedule& s, const EngineOptions& o) {
  EngineWorkspace ws;
  auto r = simulate(s, h100(), o, ws);
  EXPECT_TRUE(r.ok()) << r.diagnostics().to_string();
  return std::move(r.value());
}

TEST(EngineWorkspace, AReusedWorkspaceGivesTheFreshResult) {
  const Schedule big = schedule_of("gpt3-1.3b", 3, 64);
  const Schedule small = schedule_of("gpt3-125m", 2, 16);
  EngineOptions traced;  // spans carry the compute stream's waits
  EngineOptions plain;
  plain.record_trace = false;
  EngineWorkspace ws;
  // big, then small (arrays longer than needed, stale values beyond and inside), then big again.
  const std::vector<std::pair<const Schedule*, const EngineOptions*>> runs = {
      {&big, &traced}, {&small, &plain}, {&small, &traced}, {&big, &plain}, {&big, &traced}};
  for (const auto& [s, o] : runs) {
    auto r = simulate(*s, h100(), *o, ws);
    ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
    expect_same(r.value(), fresh(*s, *o));
    ws.recycle(std::move(r.value()));
  }
  EXPECT_GT(ws.footprint_bytes(), 0u);
  ws.release();
  auto again = simulate(small, h100(), plain, ws);
  ASSERT_TRUE(again.ok());
  expect_same(again.value(), fresh(small, plain));
}

TEST(EngineWorkspace, AFailedSimulationLeavesTheWorkspaceUsable) {
  const Schedule good = schedule_of("gpt3-125m", 3, 16);
  Schedule bad = good;
  bad.ops.back().deps = {static_cast<std::uint32_t>(bad.ops.size())};  // points forwards
  EngineWorkspace ws;
  EngineOptions o;
  ASSERT_TRUE(simulate(good, h100(), o, ws).ok());
  auto r = simulate(bad, h100(), o, ws);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.diagnostics().to_string().find("deps"), std::string::npos);
  auto after = simulate(good, h100(), o, ws);
  ASSERT_TRUE(after.ok()) << after.diagnostics().to_string();
  expect_same(after.value(), fresh(good, o));
}

// simulate() without a workspace uses the thread's: the same results as a fresh one.
TEST(EngineWorkspace, TheThreadsWorkspaceIsUsedByDefault) {
  const Schedule s = schedule_of("gpt3-125m", 2, 16);
  auto first = simulate(s, h100());
  ASSERT_TRUE(first.ok());
  EngineWorkspace::this_thread().recycle(std::move(first.value()));
  auto second = simulate(s, h100());
  ASSERT_TRUE(second.ok());
  expect_same(second.value(), fresh(s, EngineOptions{}));
  EXPECT_GT(EngineWorkspace::this_thread().footprint_bytes(), 0u);
}

// A caller that simulates, reads and drops results allocates their arrays once: the dropped
// result's op times (and ledger) are in the thread's workspace afterwards, and the next result
// built from them is the fresh one. (Before, they were freed: with glibc's default malloc
// settings 73 pages per call for Llama-2-70B stage 3 were faulted in again, simulate_bench.cc.)
TEST(EngineWorkspace, ADroppedResultHandsItsArraysToTheThreadsWorkspace) {
  const Schedule s = schedule_of("gpt3-125m", 3, 16);
  std::thread([&] {
    std::size_t op_bytes = 0;
    std::size_t before = 0;
    {
      auto r = simulate(s, h100());
      ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
      op_bytes = r->ops.capacity() * sizeof(OpTiming);
      before = EngineWorkspace::this_thread().footprint_bytes();
    }
    ASSERT_GT(op_bytes, 0u);
    EXPECT_GE(EngineWorkspace::this_thread().footprint_bytes(), before + op_bytes);
    auto again = simulate(s, h100());
    ASSERT_TRUE(again.ok());
    expect_same(again.value(), fresh(s, EngineOptions{}));
    // Copies and moves keep the arrays where they are; each copy hands its own back once.
    SimulationResult copy = again.value();
    SimulationResult moved = std::move(again.value());
    expect_same(copy, moved);
  }).join();
}

// A result that outlives its thread's workspace (a thread_local made before the workspace is
// destroyed after it) frees its arrays instead of handing them to a destroyed workspace: the
// sanitiser runs (scripts/run_sanitizers.sh) would report a use after free or a leak.
TEST(EngineWorkspace, AResultDestroyedAfterItsThreadsWorkspaceFreesItsArrays) {
  const Schedule s = schedule_of("gpt3-125m", 2, 16);
  std::thread([&] {
    thread_local SimulationResult kept;  // constructed first, so destroyed last
    auto r = simulate(s, h100());
    ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
    kept = std::move(r.value());
    EXPECT_FALSE(kept.ops.empty());
  }).join();
}

}  // namespace
}  // namespace zerosim
