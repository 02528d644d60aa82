// Benchmark of read_trace_json (trace.h) on a measured-size trace: Llama-2-70B, ZeRO stage 3, 64
// H100s, one optimizer step, as a backend that measures every rank would write it. The simulator's
// trace (one timing for all ranks) is replicated per rank: every span and comm record 64 times with
// its rank, every rank with the representative's memory curve (about 600k spans, 277 MB of text).
// The trace is built and written once, outside the timed loop.
//
// Counters: MB_per_s (text bytes over wall time), MB_per_cpu_s (text bytes over the process's CPU
// time, user + system: the read is single-threaded, so on an idle machine the two agree, and on a
// shared build machine only this one measures the code), text_MB, spans, and peak_heap_x: the
// largest number of heap bytes live at once during the read, over and above what was live before
// it, divided by the text size (global operator new/delete below count them). Targets (#7): at
// least 50 MB/s and peak_heap_x under 3 (text, parser state and Trace together stay within 3x the
// file). maxrss_MB is the process's ru_maxrss after the run, for a cross-check.
//
// Run (Release build, bench on):
//   build/bench/trace_read_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <sys/resource.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <sstream>
#include <string>

#include "process_cpu.h"
#include "zerosim/engine.h"
#include "zerosim/model_loader.h"
#include "zerosim/partition_plan.h"
#include "zerosim/schedule.h"
#include "zerosim/schedule_builder.h"
#include "zerosim/trace.h"

namespace {

std::atomic<std::int64_t> g_live{0};
std::atomic<std::int64_t> g_peak{0};

void note_alloc(void* p) {
  if (p == nullptr) return;
  const auto n = static_cast<std::int64_t>(malloc_usable_size(p));
  const std::int64_t now = g_live.fetch_add(n, std::memory_order_relaxed) + n;
  std::int64_t peak = g_peak.load(std::memory_order_relaxed);
  while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

void note_free(void* p) {
  if (p != nullptr)
    g_live.fetch_sub(static_cast<std::int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
}

}  // namespace

// The replacements below pair malloc with free by design; GCC flags free() in an inlined operator
// delete as mismatched with operator new.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

void* operator new(std::size_t n) {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  note_alloc(p);
  return p;
}
void* operator new[](std::size_t n) { return operator new(n); }
void operator delete(void* p) noexcept {
  note_free(p);
  std::free(p);
}
void operator delete[](void* p) noexcept { operator delete(p); }
void operator delete(void* p, std::size_t) noexcept { operator delete(p); }
void operator delete[](void* p, std::size_t) noexcept { operator delete(p); }

namespace {

using namespace zerosim;  // NOLINT

constexpr std::uint32_t kRanks = 64;

// The simulator's trace of Llama-2-70B stage 3 on 64 H100s, replicated per rank; empty on failure.
std::string make_trace_text(std::string& why, std::size_t& spans) {
  auto m = load_zoo_model("llama2-70b");
  auto gpu = find_gpu("H100-SXM-80GB");
  if (!m.ok() || !gpu.ok()) return why = "llama2-70b or H100-SXM-80GB missing", "";
  const DsConfig ds = default_ds_config(3, DType::BFloat16);
  auto plan = plan_partition(m.value(), partition_options(ds, kRanks));
  if (!plan.ok()) return why = plan.diagnostics().to_string(), "";
  ScheduleInput in;
  in.model = &m.value();
  in.plan = &plan.value();
  in.ds = &ds;
  in.cluster.gpu = gpu.value();
  in.cluster.nodes = kRanks / 8;
  in.cluster.gpus_per_node = 8;
  auto s = build_schedule(in);
  if (!s.ok()) return why = s.diagnostics().to_string(), "";
  auto r = simulate(s.value(), gpu.value(), EngineOptions{});
  if (!r.ok()) return why = r.diagnostics().to_string(), "";
  const Trace& one = r->trace;
  Trace t;
  t.meta = one.meta;
  t.meta.backend = "cuda";
  for (std::uint32_t k = 0; k < kRanks; ++k) {
    TraceRank tr = one.ranks.front();
    tr.rank = k;
    tr.rank_count = 1;
    t.ranks.push_back(std::move(tr));
  }
  for (const CommRecord& c : one.comms)
    for (std::uint32_t k = 0; k < kRanks; ++k) {
      t.comms.push_back(c);
      t.comms.back().rank = k;
    }
  for (const Span& sp : one.spans)
    for (std::uint32_t k = 0; k < kRanks; ++k) {
      t.spans.push_back(sp);
      t.spans.back().rank = k;
      if (sp.comm != kNone) t.spans.back().comm = sp.comm * kRanks + k;
    }
  spans = t.spans.size();
  std::ostringstream out;
  write_trace_json(t, out);
  return out.str();
}

void BM_ReadTrace64Ranks(benchmark::State& state) {
  static std::string why;
  static std::size_t spans = 0;
  static const std::string text = make_trace_text(why, spans);
  if (text.empty()) {
    state.SkipWithError(why.c_str());
    return;
  }
  std::int64_t peak_extra = 0;
  const zerosim::bench::ProcessCpu cpu_before = zerosim::bench::ProcessCpu::now();
  for (auto _ : state) {
    const std::int64_t before = g_live.load();
    g_peak.store(before);
    auto t = read_trace_json(text, "trace64.json");
    if (!t.ok()) {
      state.SkipWithError(t.diagnostics().to_string().c_str());
      break;
    }
    benchmark::DoNotOptimize(t.value().spans.data());
    peak_extra = std::max(peak_extra, g_peak.load() - before);
  }
  const zerosim::bench::ProcessCpu cpu_after = zerosim::bench::ProcessCpu::now();
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  const double mb = static_cast<double>(text.size()) / 1e6;
  const double cpu_s = (cpu_after.user - cpu_before.user) + (cpu_after.sys - cpu_before.sys);
  if (cpu_s > 0)
    state.counters["MB_per_cpu_s"] = mb * static_cast<double>(state.iterations()) / cpu_s;
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
  state.counters["MB_per_s"] =
      benchmark::Counter(mb, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["text_MB"] = mb;
  state.counters["spans"] = static_cast<double>(spans);
  // The text is held by the caller; the read may add at most twice its size (3x in all).
  state.counters["peak_heap_x"] =
      static_cast<double>(peak_extra + static_cast<std::int64_t>(text.size())) /
      static_cast<double>(text.size());
  state.counters["maxrss_MB"] = static_cast<double>(u.ru_maxrss) / 1e3;
}

BENCHMARK(BM_ReadTrace64Ranks)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
