// Cost of evaluating the collective time model, which the engine calls once per collective op:
// one all-reduce (ring and tree both evaluated), one all-gather, and a calibrated all-reduce.
#include <benchmark/benchmark.h>

#include <cstdint>

#include "zerosim/collective_model.h"

namespace zerosim {
namespace {

CollectiveRequest make_request(CollectiveKind k, std::uint32_t nodes) {
  CollectiveRequest r;
  r.kind = k;
  r.count = 1ULL << 26;
  r.dtype = DType::BFloat16;
  r.group = {nodes * 8, nodes, 8};
  return r;
}

void run(benchmark::State& state, const CollectiveRequest& r, const CalibratedLinks* cal) {
  const LinkParams links;
  for (auto _ : state) {
    auto c = collective_cost(r, links, cal);
    benchmark::DoNotOptimize(c);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

void BM_AllReduceCost(benchmark::State& state) {
  run(state, make_request(CollectiveKind::AllReduce, static_cast<std::uint32_t>(state.range(0))),
      nullptr);
}
BENCHMARK(BM_AllReduceCost)->Arg(1)->Arg(16);

void BM_AllGatherCost(benchmark::State& state) {
  run(state, make_request(CollectiveKind::AllGather, 16), nullptr);
}
BENCHMARK(BM_AllGatherCost);

void BM_CalibratedAllReduceCost(benchmark::State& state) {
  CalibratedLinks cal;
  cal.set(CollectiveKind::AllReduce, CalibratedCollective{17.3, 362.4, 8, 1, 31, 0.0, "bench"});
  run(state, make_request(CollectiveKind::AllReduce, 1), &cal);
}
BENCHMARK(BM_CalibratedAllReduceCost);

}  // namespace
}  // namespace zerosim

BENCHMARK_MAIN();
