// Benchmark of read_schedule_json (schedule_io.h) on issue #7's largest stage 0-2 file:
// Llama-2-70B, ZeRO stage 2, 16384 GPUs (what `zerosim schedule --model llama2-70b --gpus 16384
// --stage 2 --output F` writes: 804 rank roles x 486 slots), in both slot forms: Sparse, what the
// CLI writes, and Dense, one value per slot per role, the text every file had before (still
// readable). The file is written once by the CLI, outside the timed loop; the dense text is its
// schedule written with SlotsForm::Dense.
//
// Counters: text_MB, roles. The read is single-threaded: the CPU column measures it on a shared
// machine. Run (Release build):
//   build/bench/schedule_read_bench --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "zerosim/schedule_io.h"

namespace {

using namespace zerosim;  // NOLINT

struct Texts {
  std::string sparse, dense, why;
  std::size_t roles = 0;
};

const Texts& texts() {
  static const Texts t = [] {
    Texts out;
    const std::string path = "/tmp/zerosim_schedule_read_bench.json";
    const std::string cmd = std::string(ZEROSIM_CLI_PATH) +
                            " schedule --model llama2-70b --gpus 16384 --stage 2 --output " + path +
                            " >/dev/null 2>&1";
    if (std::system(cmd.c_str()) != 0) {
      out.why = "zerosim schedule failed: " + cmd;
      return out;
    }
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    std::remove(path.c_str());
    out.sparse = ss.str();
    auto s = read_schedule_json(out.sparse, "sparse.json");
    if (!s.ok()) {
      out.why = s.diagnostics().to_string();
      return out;
    }
    out.roles = s->roles.size();
    std::ostringstream dense;
    write_schedule_json(s.value(), dense, SlotsForm::Dense);
    out.dense = dense.str();
    return out;
  }();
  return t;
}

void read_bench(benchmark::State& state, bool dense) {
  const Texts& t = texts();
  if (!t.why.empty()) {
    state.SkipWithError(t.why.c_str());
    return;
  }
  const std::string& text = dense ? t.dense : t.sparse;
  for (auto _ : state) {
    auto s = read_schedule_json(text, "schedule.json");
    if (!s.ok()) {
      state.SkipWithError(s.diagnostics().to_string().c_str());
      break;
    }
    benchmark::DoNotOptimize(s.value().roles.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
  state.counters["text_MB"] = static_cast<double>(text.size()) / 1e6;
  state.counters["roles"] = static_cast<double>(t.roles);
}

void BM_ReadSchedule16384Sparse(benchmark::State& state) { read_bench(state, false); }
void BM_ReadSchedule16384Dense(benchmark::State& state) { read_bench(state, true); }

BENCHMARK(BM_ReadSchedule16384Sparse)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReadSchedule16384Dense)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
