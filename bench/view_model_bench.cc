// Benchmarks of the viewer's headless model (ui/model): what one frame costs per lane, and what
// opening a many-rank trace costs.
//
//   BM_CullMillionSpans/zoom: visible_items() over one lane of 1,000,000 spans (100 ns apart,
//     60 ns long) in a 1,400 px view at zoom factors 1 (everything: one merged run per few px),
//     1e3 and 1e6 (a handful of spans). Target: well under 1 ms per lane per frame at every zoom,
//     so a 64-rank trace (a few lanes per folded group) stays inside a 16 ms frame.
//   BM_CullInterleaved: the same million spans as tiny/wide pairs (bucket copies before backward
//     ops): merging must stop at each wide span, so the item count is what the view can show.
//   BM_FoldRanks/ranks: TimelineModel() of a measured trace of N ranks x 2,000 spans, every rank
//     identical but rank 0: the cost of opening it, per span (items_per_second).
//
// Run (Release build, bench on): build/bench/view_model_bench
#include <benchmark/benchmark.h>

#include <vector>

#include "model/span_culling.h"
#include "model/time_view.h"
#include "model/timeline_model.h"
#include "zerosim/trace.h"

namespace {

using zerosim::SimTime;
using zerosim::Span;
using zerosim::Trace;
using zerosim::TraceRank;

Trace lane_of_spans(std::int64_t n, bool interleaved) {
  Trace t;
  t.ranks.emplace_back();
  t.spans.resize(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    Span& s = t.spans[static_cast<std::size_t>(i)];
    s.rank = 0;
    s.op = static_cast<std::uint32_t>(i);
    s.category = "backward";
    s.start_ns = i * 100;
    s.dur_ns = interleaved ? (i % 2 == 0 ? 1 : 98) : 60;
  }
  return t;
}

// visible_items() over one lane of lane_of_spans(1e6, interleaved) at zoom state.range(0).
void cull_lane(benchmark::State& state, bool interleaved) {
  const Trace t = lane_of_spans(1'000'000, interleaved);
  const zerosim::view::TimelineModel m(t);
  zerosim::view::TimeView v(1400, 0, 100'000'000);
  v.zoom_at(700, static_cast<double>(state.range(0)));
  std::vector<zerosim::view::DrawItem> items;
  for (auto _ : state) {
    zerosim::view::visible_items(t, m.groups()[0].lanes[0], v, 3.0, items);
    benchmark::DoNotOptimize(items.data());
  }
  state.counters["items"] = static_cast<double>(items.size());
}

void BM_CullMillionSpans(benchmark::State& state) { cull_lane(state, false); }
BENCHMARK(BM_CullMillionSpans)->Arg(1)->Arg(1000)->Arg(1000000)->Unit(benchmark::kMicrosecond);

void BM_CullInterleaved(benchmark::State& state) { cull_lane(state, true); }
BENCHMARK(BM_CullInterleaved)->Arg(1)->Arg(100)->Arg(10000)->Unit(benchmark::kMicrosecond);

void BM_FoldRanks(benchmark::State& state) {
  const auto ranks = static_cast<std::uint32_t>(state.range(0));
  constexpr std::uint32_t kSpansPerRank = 2000;
  Trace t;
  for (std::uint32_t r = 0; r < ranks; ++r) {
    TraceRank tr;
    tr.rank = r;
    tr.role = r;
    t.ranks.push_back(tr);
    for (std::uint32_t k = 0; k < kSpansPerRank; ++k) {
      Span s;
      s.rank = r;
      s.op = k;
      s.name = "op";
      s.category = k % 3 == 0 ? "collective" : "backward";
      s.stream = k % 3 == 0 ? zerosim::Stream::Reduce : zerosim::Stream::Compute;
      s.start_ns = static_cast<SimTime>(k) * 1000 + (r == 0 ? 7 : 0);
      s.dur_ns = 900;
      t.spans.push_back(s);
    }
  }
  for (auto _ : state) {
    const zerosim::view::TimelineModel m(t);
    benchmark::DoNotOptimize(m.groups().size());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * ranks * kSpansPerRank);
}
BENCHMARK(BM_FoldRanks)->Arg(8)->Arg(64)->Arg(1024)->Unit(benchmark::kMillisecond);

}  // namespace
BENCHMARK_MAIN();
