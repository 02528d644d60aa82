// The classic "hold" benchmark for the event queue, after ns-3's utils/bench-scheduler.cc: fill the
// queue with N events, then repeatedly pop the earliest and schedule a replacement at now + a
// random increment, so the queue stays at N events. One iteration = one pop + one schedule = one
// simulated event; items/s reads directly as events per second.
//
//   <build>/bench/event_queue_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "zerosim/event_queue.h"

namespace zerosim {
namespace {

constexpr std::size_t kIncrements = 1 << 16;  // power of two: the index is a mask, not a modulo
constexpr double kMeanIncrementNs = 1000.0;

// Exponential inter-event times (ns-3's default for the hold model), drawn once with a fixed seed
// so every run and every N sees the same sequence and no generator runs in the timed loop.
std::vector<SimTime> increments() {
  std::mt19937_64 rng(12345);
  std::exponential_distribution<double> dist(1.0 / kMeanIncrementNs);
  std::vector<SimTime> out(kIncrements);
  for (auto& x : out) x = static_cast<SimTime>(dist(rng));
  return out;
}

void BM_EventQueueHold(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const std::vector<SimTime> inc = increments();
  EventQueue q;
  for (std::size_t i = 0; i < n; ++i) {
    q.schedule(inc[i % kIncrements], 0, static_cast<std::uint32_t>(i));
  }
  std::size_t k = n;
  for (auto _ : state) {
    const Event e = *q.pop();
    q.schedule(q.now() + inc[k++ & (kIncrements - 1)], e.kind, e.a, e.b);
    benchmark::DoNotOptimize(e);
  }
  if (q.size() != n || q.rejected_count() != 0) state.SkipWithError("queue lost events");
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
  state.counters["queue_events"] = static_cast<double>(n);
}
BENCHMARK(BM_EventQueueHold)->Range(1 << 10, 1 << 20);

// The same hold loop where one event in eight cancels the event it just scheduled and schedules
// another: the cost of lazy cancellation (hash-set insert plus dropping the entry later).
void BM_EventQueueHoldWithCancel(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const std::vector<SimTime> inc = increments();
  EventQueue q;
  for (std::size_t i = 0; i < n; ++i) {
    q.schedule(inc[i % kIncrements], 0, static_cast<std::uint32_t>(i));
  }
  std::size_t k = n;
  for (auto _ : state) {
    const Event e = *q.pop();
    const EventId id = q.schedule(q.now() + inc[k++ & (kIncrements - 1)], e.kind, e.a, e.b);
    if ((k & 7) == 0) {
      q.cancel(id);
      q.schedule(q.now() + inc[k++ & (kIncrements - 1)], e.kind, e.a, e.b);
    }
    benchmark::DoNotOptimize(e);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_EventQueueHoldWithCancel)->Range(1 << 10, 1 << 20);

}  // namespace
}  // namespace zerosim

BENCHMARK_MAIN();
