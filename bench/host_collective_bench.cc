// Host backend collectives (host_ring.h): a ring all-reduce of 64 MiB of float32 between 2, 4 and 8
// rank threads, against the machine's single-core memcpy bandwidth measured in the same run.
//
// Counters: `sent_GBps` is the bytes every rank sent, summed, per second of the call (each sent
// byte is copied into a slot and reduced or copied out of it, so on a machine with as many cores as
// ranks it approaches the memcpy rate); `busbw_GBps` is nccl-tests' bus bandwidth, S x 2(n-1)/n /
// t. Target (issue #8): sent_GBps >= 0.5 x BM_Memcpy64MiB's bytes_per_second.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "host_ring.h"

namespace {

constexpr std::size_t kBytes = std::size_t{64} << 20;

void BM_Memcpy64MiB(benchmark::State& state) {
  std::vector<unsigned char> a(kBytes, 1), b(kBytes, 0);
  for (auto _ : state) {
    std::memcpy(b.data(), a.data(), kBytes);
    benchmark::DoNotOptimize(b.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * kBytes);
}
BENCHMARK(BM_Memcpy64MiB)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_RingAllReduce64MiB(benchmark::State& state) {
  const auto n = static_cast<std::uint32_t>(state.range(0));
  const zerosim::Elements count = kBytes / sizeof(float);
  std::vector<std::vector<float>> data(n, std::vector<float>(count, 1.0f));
  zerosim::exec::HostRing ring(n);
  zerosim::Bytes sent_before = 0;
  for (auto _ : state) {
    std::vector<std::thread> t;
    for (std::uint32_t r = 0; r < n; ++r)
      t.emplace_back([&, r] {
        (void)ring.all_reduce(r, data[r].data(), count, zerosim::DType::Float32,
                              zerosim::ReduceOp::Sum);
      });
    for (auto& x : t) x.join();
  }
  zerosim::Bytes sent = 0;
  for (std::uint32_t r = 0; r < n; ++r) sent += ring.bytes(r).sent;
  sent -= sent_before;
  state.counters["sent_GBps"] =
      benchmark::Counter(static_cast<double>(sent) / 1e9, benchmark::Counter::kIsRate);
  state.counters["busbw_GBps"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kBytes * 2.0 * (n - 1) / n / 1e9,
                         benchmark::Counter::kIsRate);
}
BENCHMARK(BM_RingAllReduce64MiB)
    ->Arg(2)
    ->Arg(4)
    ->Arg(8)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// A ZeRO-2 bucket's reduce-scatter: 64 MiB of fp16 in per rank, 64/n MiB out. The ring reads the
// input in place (each step adds the rank's own block to what arrived into a two-block scratch),
// so `sent_GBps` compares with all-reduce's without a whole-input copy per call in front.
void BM_RingReduceScatter64MiB(benchmark::State& state) {
  const auto n = static_cast<std::uint32_t>(state.range(0));
  const zerosim::Elements count = kBytes / 2, block = count / n;
  std::vector<std::vector<std::uint16_t>> in(n, std::vector<std::uint16_t>(count, 0x3c00)),
      out(n, std::vector<std::uint16_t>(block));
  zerosim::exec::HostRing ring(n);
  for (auto _ : state) {
    std::vector<std::thread> t;
    for (std::uint32_t r = 0; r < n; ++r)
      t.emplace_back([&, r] {
        (void)ring.reduce_scatter(r, in[r].data(), out[r].data(), block, zerosim::DType::Float16,
                                  zerosim::ReduceOp::Sum);
      });
    for (auto& x : t) x.join();
  }
  zerosim::Bytes sent = 0;
  for (std::uint32_t r = 0; r < n; ++r) sent += ring.bytes(r).sent;
  state.counters["sent_GBps"] =
      benchmark::Counter(static_cast<double>(sent) / 1e9, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_RingReduceScatter64MiB)
    ->Arg(2)
    ->Arg(4)
    ->Arg(8)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
