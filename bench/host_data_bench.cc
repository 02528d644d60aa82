// The host backend in data mode (host_data.h): one step of GPT-2 small (the zoo's gpt2-small, its
// 148 tensors, 124,439,808 parameters) on 4 rank threads with real buffers, ring collectives on
// real data and AdamW. Target (issue #8): under 5 s on the build machine for the ZeRO stage 2
// schedule (BM_HostDataZeroGpt2Small/2; /0 is stage 0, which holds the whole fp32 master and Adam
// states on every rank). BM_HostDataPlainDpGpt2Small runs the plain data-parallel schedule of the
// same tensors (data_reference.h: broadcasts, flatten, all-reduce, cast, AdamW, write-back), about
// 2.7 GB of buffers per rank. Schedules are built outside the timed loop. user_s/sys_s are the
// process's CPU seconds (process_cpu.h): on the build machine (a 2-core VM, shared) wall time
// follows the other load, CPU seconds much less; sys_s is mostly first-touch page faults (about
// 0.6-0.9 s per GB faulted in), which the buffers' page recycling (host_storage.h) keeps near
// what the schedule holds at its peak.
//   build/bench/host_data_bench
#include <benchmark/benchmark.h>

#include "data_reference.h"
#include "process_cpu.h"
#include "zerosim/host_backend.h"
#include "zerosim/model_loader.h"
#include "zerosim/partition_plan.h"
#include "zerosim/schedule_builder.h"

namespace {

using namespace zerosim;  // NOLINT

exec::HostOptions data_mode() {
  exec::HostOptions o;
  o.data = true;
  o.data_options.memory_cap = 0;
  return o;
}

void BM_HostDataPlainDpGpt2Small(benchmark::State& state) {
  auto m = load_zoo_model("gpt2-small");
  if (!m.ok()) return state.SkipWithError("gpt2-small missing");
  exec::PlainDpSpec spec;
  for (const ParamTensor& p : m.value().params) spec.tensors.push_back(p.numel);
  spec.world = 4;
  const Schedule s = exec::plain_dp_schedule(spec);
  auto g = lower_schedule(s);
  if (!g.ok()) return state.SkipWithError(g.diagnostics().to_string().c_str());
  const auto cpu0 = bench::ProcessCpu::now();
  for (auto _ : state) {
    auto run = exec::run_host(s, g.value(), data_mode());
    if (!run.ok()) return state.SkipWithError(run.diagnostics().to_string().c_str());
    benchmark::DoNotOptimize(run.value().wall_ns);
  }
  bench::report_process_cpu(state, cpu0);
  state.counters["ops"] = static_cast<double>(s.ops.size());
}
BENCHMARK(BM_HostDataPlainDpGpt2Small)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

void BM_HostDataZeroGpt2Small(benchmark::State& state) {
  const int stage = static_cast<int>(state.range(0));
  auto m = load_zoo_model("gpt2-small");
  auto gpu = find_gpu("H100-SXM-80GB");
  if (!m.ok() || !gpu.ok()) return state.SkipWithError("gpt2-small or H100-SXM-80GB missing");
  const ModelDesc model = std::move(m.value());
  const DsConfig ds = default_ds_config(stage, DType::Float16);
  auto plan = plan_partition(model, partition_options(ds, 4));
  if (!plan.ok()) return state.SkipWithError(plan.diagnostics().to_string().c_str());
  ScheduleInput in;
  in.model = &model;
  in.plan = &plan.value();
  in.ds = &ds;
  in.cluster.gpu = gpu.value();
  in.cluster.nodes = 1;
  in.cluster.gpus_per_node = 4;
  auto s = build_schedule(in);
  if (!s.ok()) return state.SkipWithError(s.diagnostics().to_string().c_str());
  auto g = lower_schedule(s.value());
  if (!g.ok()) return state.SkipWithError(g.diagnostics().to_string().c_str());
  exec::HostOptions o = data_mode();
  o.data_options.gradient_clipping = ds.gradient_clipping;
  if (auto gap = exec::data_mode_refusal(s.value(), o))
    return state.SkipWithError(gap->to_string().c_str());
  const auto cpu0 = bench::ProcessCpu::now();
  for (auto _ : state) {
    auto run = exec::run_host(s.value(), g.value(), o);
    if (!run.ok()) return state.SkipWithError(run.diagnostics().to_string().c_str());
    benchmark::DoNotOptimize(run.value().wall_ns);
  }
  bench::report_process_cpu(state, cpu0);
}
BENCHMARK(BM_HostDataZeroGpt2Small)
    ->Arg(2)
    ->Arg(0)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
