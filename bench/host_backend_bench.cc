// The host backend in count-only mode (host_backend.h): one step of Llama-2-70B (the zoo's
// llama2-70b, bf16, default buckets, 8 GPUs per node) executed by 64 rank threads, every op issued,
// every Alloc/Free tracked and every collective a rendezvous of the 64 ranks, measured trace
// included. Target (issue #8): under 2 s on the build machine. The schedule is built once, outside
// the timed loop.
//   build/bench/host_backend_bench --benchmark_repetitions=3
//   --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <memory>

#include "process_cpu.h"
#include "zerosim/host_backend.h"
#include "zerosim/model_loader.h"
#include "zerosim/partition_plan.h"
#include "zerosim/schedule_builder.h"

namespace {

using namespace zerosim;  // NOLINT

void BM_HostCountOnlyLlama70B(benchmark::State& state) {
  const int stage = static_cast<int>(state.range(0));
  const auto gpus = static_cast<std::uint32_t>(state.range(1));
  auto m = load_zoo_model("llama2-70b");
  auto gpu = find_gpu("H100-SXM-80GB");
  if (!m.ok() || !gpu.ok()) return state.SkipWithError("llama2-70b or H100-SXM-80GB missing");
  const ModelDesc model = std::move(m.value());
  const DsConfig ds = default_ds_config(stage, DType::BFloat16);
  auto plan = plan_partition(model, partition_options(ds, gpus));
  if (!plan.ok()) return state.SkipWithError(plan.diagnostics().to_string().c_str());
  ScheduleInput in;
  in.model = &model;
  in.plan = &plan.value();
  in.ds = &ds;
  in.cluster.gpu = gpu.value();
  in.cluster.nodes = gpus / 8;
  in.cluster.gpus_per_node = 8;
  auto s = build_schedule(in);
  if (!s.ok()) return state.SkipWithError(s.diagnostics().to_string().c_str());
  auto g = lower_schedule(s.value());
  if (!g.ok()) return state.SkipWithError(g.diagnostics().to_string().c_str());
  const auto cpu0 = bench::ProcessCpu::now();
  for (auto _ : state) {
    auto run = exec::run_host(s.value(), g.value(), exec::HostOptions{});
    if (!run.ok()) return state.SkipWithError(run.diagnostics().to_string().c_str());
    benchmark::DoNotOptimize(run.value().wall_ns);
  }
  bench::report_process_cpu(state, cpu0);
  state.counters["ops"] = static_cast<double>(s.value().ops.size());
  state.counters["ranks"] = gpus;
}
BENCHMARK(BM_HostCountOnlyLlama70B)
    ->Args({3, 64})
    ->Args({2, 64})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
