// Benchmarks for the discrete-event simulator (sim/include/zerosim/engine.h).
//
// BM_SimulateLlama70B/<stage>/<gpus>: simulate() of one optimizer step of Llama-2-70B (the zoo's
// llama2-70b: every parameter tensor, default buckets, bf16, 8 GPUs per node) on H100-SXM-80GB,
// without building the trace. The schedule is built once, outside the timed loop. Target: under
// 2 ms per step at 1024 GPUs. The cost must not grow with the GPU count (65536 vs 1024): the engine
// times one role and analyses memory per role sparsely. Counters: ops, roles, and result_bytes
// (SimulationResult::footprint_bytes) and schedule_roles_bytes, which show the memory is flat in
// ranks beyond the role table the schedule itself carries. minflt_per_call: minor page faults per
// simulate() call (getrusage), which stay near 0 once the engine's workspace (engine.h) is warm:
// each result is dropped once read, as a caller that simulates over and over and keeps no result
// does, and its op times and ledger arrays go back to the thread's workspace by themselves.
// BM_SimulateLlama70BTrace: the same with the Trace built (spans, comm records, counters).
//
// Run (Release build, bench on):
//   build/bench/simulate_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <cstdint>
#include <map>
#include <memory>
#include <utility>

#include "zerosim/engine.h"
#include "zerosim/model_loader.h"
#include "zerosim/partition_plan.h"
#include "zerosim/schedule.h"
#include "zerosim/schedule_builder.h"

namespace {

using namespace zerosim;  // NOLINT

struct Case {
  ModelDesc model;
  PartitionPlan plan;
  DsConfig ds;
  Schedule schedule;
  GpuSpec gpu;
};

// Builds (once per stage and GPU count) the llama2-70b schedule; nullptr with a reason on failure.
const Case* get_case(int stage, std::uint32_t gpus, std::string& why) {
  static std::map<std::pair<int, std::uint32_t>, std::unique_ptr<Case>> cache;
  auto& slot = cache[{stage, gpus}];
  if (slot) return slot.get();
  auto c = std::make_unique<Case>();
  auto m = load_zoo_model("llama2-70b");
  auto gpu = find_gpu("H100-SXM-80GB");
  if (!m.ok() || !gpu.ok()) return why = "llama2-70b or H100-SXM-80GB missing", nullptr;
  c->model = std::move(m.value());
  c->gpu = gpu.value();
  c->ds = default_ds_config(stage, DType::BFloat16);
  auto plan = plan_partition(c->model, partition_options(c->ds, gpus));
  if (!plan.ok()) return why = plan.diagnostics().to_string(), nullptr;
  c->plan = std::move(plan.value());
  ScheduleInput in;
  in.model = &c->model;
  in.plan = &c->plan;
  in.ds = &c->ds;
  in.cluster.gpu = c->gpu;
  in.cluster.nodes = gpus / 8;
  in.cluster.gpus_per_node = 8;
  auto s = build_schedule(in);
  if (!s.ok()) return why = s.diagnostics().to_string(), nullptr;
  c->schedule = std::move(s.value());
  slot = std::move(c);
  return slot.get();
}

// Minor page faults of this process so far: a simulate() whose arrays glibc hands back to the
// kernel (mmap'ed, or trimmed off the heap top) faults them in again on the next call.
long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

void run(benchmark::State& state, bool trace) {
  const int stage = static_cast<int>(state.range(0));
  const auto gpus = static_cast<std::uint32_t>(state.range(1));
  std::string why;
  const Case* c = get_case(stage, gpus, why);
  if (c == nullptr) {
    state.SkipWithError(why.c_str());
    return;
  }
  EngineOptions options;
  options.record_trace = trace;
  std::size_t footprint = 0;
  const long faults_before = minor_faults();
  for (auto _ : state) {
    auto r = simulate(c->schedule, c->gpu, options);
    if (!r.ok()) {
      state.SkipWithError("simulate failed");
      break;
    }
    footprint = r->footprint_bytes();
    benchmark::DoNotOptimize(r->summary.total_ns);
  }
  const long faults = minor_faults() - faults_before;
  std::size_t role_bytes = 0;
  for (const RankRole& r : c->schedule.roles)
    role_bytes += r.slots.nonzero().capacity() * sizeof(SlotValues::Entry);
  state.counters["ops"] = static_cast<double>(c->schedule.ops.size());
  state.counters["roles"] = static_cast<double>(c->schedule.roles.size());
  state.counters["result_bytes"] = static_cast<double>(footprint);
  state.counters["schedule_roles_bytes"] = static_cast<double>(role_bytes);
  state.counters["minflt_per_call"] =
      benchmark::Counter(static_cast<double>(faults), benchmark::Counter::kAvgIterations);
}

void BM_SimulateLlama70B(benchmark::State& state) { run(state, false); }
void BM_SimulateLlama70BTrace(benchmark::State& state) { run(state, true); }

BENCHMARK(BM_SimulateLlama70B)
    ->Args({2, 1024})
    ->Args({3, 1024})
    ->Args({2, 65536})
    ->Args({3, 65536})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SimulateLlama70BTrace)
    ->Args({2, 1024})
    ->Args({3, 1024})
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
