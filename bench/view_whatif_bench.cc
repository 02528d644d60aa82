// The what-if panel's re-simulation (ui/whatif/what_if.h): one knob change on the shipped GPT-2 XL
// ZeRO-2 scenario at 8 ranks (scenarios/gpt2-xl_zero2_8xa100.json), applied as the panel applies
// it: the DeepSpeed config rewritten and read back, partitioned, built without the builder's
// self-check, simulated with the trace recorded, the previous run kept as the ghost. Alternates
// reduce_bucket_size between the scenario's 5e8 and 2e8 elements so every iteration really
// re-simulates. Target: under 50 ms, so the panel answers within a few frames.
// BM_WhatIfStage2To3Gpt2Xl8Ranks: the heaviest common change, stage 2 <-> 3 (stage 3's schedule
// has a fetch and release per module), for the record.
//
// Run (Release build, bench on):
//   build/bench/view_whatif_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <string>

#include "whatif/what_if.h"

namespace {

// Alternates the scenario's knobs and `change` of them, re-simulating every iteration.
template <typename Change>
void alternate(benchmark::State& state, Change change) {
  auto w = zerosim::view::WhatIf::open(std::string(ZEROSIM_SOURCE_DIR) +
                                       "/scenarios/gpt2-xl_zero2_8xa100.json");
  if (!w.ok()) {
    state.SkipWithError(w.diagnostics().to_string().c_str());
    return;
  }
  const zerosim::view::Knobs a = w.value()->knobs();
  zerosim::view::Knobs b = a;
  change(b);
  bool flip = false;
  for (auto _ : state) {
    flip = !flip;
    const zerosim::Diagnostics d = w.value()->apply(flip ? b : a);
    if (d.has_errors()) {
      state.SkipWithError(d.to_string().c_str());
      return;
    }
  }
  state.counters["spans"] = static_cast<double>(w.value()->trace().spans.size());
}

void BM_WhatIfResimulateGpt2Xl8Ranks(benchmark::State& state) {
  alternate(state, [](zerosim::view::Knobs& k) { k.reduce_bucket_size = 200000000; });
}
BENCHMARK(BM_WhatIfResimulateGpt2Xl8Ranks)->Unit(benchmark::kMillisecond);

void BM_WhatIfStage2To3Gpt2Xl8Ranks(benchmark::State& state) {
  alternate(state, [](zerosim::view::Knobs& k) { k.stage = 3; });
}
BENCHMARK(BM_WhatIfStage2To3Gpt2Xl8Ranks)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
