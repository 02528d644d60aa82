// Benchmarks for the schedule builders on models of many small tensors.
//
// BM_BuildStage3ManySmallTensors/<T>: build_schedule() of stage 3, 2 GPUs, one step, for a param
// list of T tensors of 10 elements each in one module (`p0` ... `p<T-1>`): every tensor lands in
// one reduce bucket and one module's release. Both were quadratic in T (a scan of the bucket per
// grad in the reduce-scatter staging, of the release list per param in RELEASE): 100k tensors took
// 3.0 s for `zerosim schedule`, 500k two minutes (a hostile-input pass). The time per tensor must
// stay flat as T grows (Complexity reports the fitted order: N lg N at 12.5k-100k, 39-463 ms).
//
// Run (Release build, bench on):
//   build/bench/schedule_build_bench --benchmark_repetitions=5
//   --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <string>

#include "zerosim/model_loader.h"
#include "zerosim/partition_plan.h"
#include "zerosim/schedule_builder.h"

namespace {

using namespace zerosim;  // NOLINT

void BM_BuildStage3ManySmallTensors(benchmark::State& state) {
  const auto tensors = static_cast<std::size_t>(state.range(0));
  std::string text = R"({"format": "zerosim-param-list", "version": 1, "params": [)";
  for (std::size_t i = 0; i < tensors; ++i) {
    if (i != 0) text += ", ";
    text += "[\"p";
    text += std::to_string(i);
    text += "\", [10]]";
  }
  text += "]}";
  auto model = load_param_list_text(text, "bench");
  auto gpu = find_gpu("H100-SXM-80GB");
  if (!model.ok() || !gpu.ok()) {
    state.SkipWithError("param list or GPU missing");
    return;
  }
  const DsConfig ds = default_ds_config(3, DType::BFloat16);
  auto plan = plan_partition(model.value(), partition_options(ds, 2));
  if (!plan.ok()) {
    state.SkipWithError("partition failed");
    return;
  }
  ScheduleInput in;
  in.model = &model.value();
  in.plan = &plan.value();
  in.ds = &ds;
  in.cluster.gpu = gpu.value();
  in.cluster.nodes = 1;
  in.cluster.gpus_per_node = 2;
  in.steps = 1;
  std::size_t ops = 0;
  for (auto _ : state) {
    auto s = build_schedule(in);
    if (!s.ok()) {
      state.SkipWithError(s.diagnostics().to_string().c_str());
      return;
    }
    ops = s->ops.size();
    benchmark::DoNotOptimize(ops);
  }
  state.SetComplexityN(state.range(0));
  state.counters["ops"] = static_cast<double>(ops);
}

BENCHMARK(BM_BuildStage3ManySmallTensors)
    ->Arg(12500)
    ->Arg(25000)
    ->Arg(50000)
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond)
    ->Complexity();

}  // namespace

BENCHMARK_MAIN();
