// The Chrome Trace Event export of real runs, parsed back and checked against what Perfetto's JSON
// importer expects (ecosystem.md §3): the object form with traceEvents first, integer pids/tids,
// one-character phases with their required fields, M events naming every traced rank, X slices
// with non-negative times, numeric C counters, s/f flows paired by (id, cat, name) with bp "e",
// no displayTimeUnit; and issue #9's two checks: every traced rank appears, and an out-of-memory
// run carries its OOM as a process-scoped instant naming what was being allocated; a measured
// (validate) run's named counters become counter tracks.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "unit/cli_testlib.h"
#include "zerosim/trace.h"

namespace zerosim {
namespace {

struct Exported {
  int exit_code = -1;
  nlohmann::json chrome;
  Trace trace;
  std::string text;
};

// `zerosim simulate ARGS` writing both the zerosim trace and the Chrome export.
Exported simulate(const std::string& args, const std::string& name) {
  const std::string base =
      ::testing::TempDir() + "zerosim_chrome_" + std::to_string(getpid()) + "_" + name;
  const clitest::CliRun r = clitest::run_cli("simulate " + args + " --trace " + base +
                                             ".json --chrome-trace " + base + ".chrome.json");
  Exported e;
  e.exit_code = r.exit_code;
  e.text = clitest::read_all(base + ".chrome.json");
  e.chrome = nlohmann::json::parse(e.text, nullptr, false);
  Result<Trace> t = read_trace_file(base + ".json");
  if (t.ok()) e.trace = std::move(t.value());
  std::remove((base + ".json").c_str());
  std::remove((base + ".chrome.json").c_str());
  return e;
}

// Everything Perfetto's JSON importer relies on; `with_slices` gets the pids that have X slices.
void expect_perfetto_structure(const Exported& e, std::set<int>& with_slices) {
  EXPECT_EQ(e.text.rfind("{\"traceEvents\": [", 0), 0u);  // traceEvents first
  EXPECT_EQ(e.text.find("displayTimeUnit"), std::string::npos);
  ASSERT_TRUE(e.chrome.is_object());
  ASSERT_TRUE(e.chrome.contains("traceEvents") && e.chrome.at("traceEvents").is_array());
  for (const auto& [key, value] : e.chrome.items()) {
    EXPECT_TRUE(key == "traceEvents" || key == "otherData") << "unknown top-level key " << key;
  }
  // (id, cat, name) of every s and f.
  std::map<std::uint64_t, std::pair<std::string, std::string>> starts, finishes;
  for (const auto& ev : e.chrome.at("traceEvents")) {
    for (const char* key : {"name", "ph", "pid"})
      ASSERT_TRUE(ev.contains(key)) << key << ": " << ev;
    ASSERT_TRUE(ev["name"].is_string()) << ev;
    ASSERT_TRUE(ev["ph"].is_string() && ev["ph"].get<std::string>().size() == 1) << ev;
    ASSERT_TRUE(ev["pid"].is_number_integer()) << ev;
    if (ev.contains("tid")) {
      EXPECT_TRUE(ev["tid"].is_number_integer()) << ev;
    }
    const std::string ph = ev["ph"];
    ASSERT_TRUE(std::string("MXCsfi").find(ph) != std::string::npos) << "unexpected phase " << ev;
    if (ph != "M") {
      ASSERT_TRUE(ev.contains("ts") && ev["ts"].is_number()) << ev;
      EXPECT_GE(ev["ts"].get<double>(), 0.0) << ev;
    }
    if (ph == "M") {
      const std::string n = ev["name"];
      ASSERT_TRUE(ev.contains("args")) << ev;
      if (n == "process_name" || n == "thread_name") {
        EXPECT_TRUE(ev["args"].value("name", nlohmann::json()).is_string()) << ev;
      } else {
        EXPECT_TRUE(n == "process_sort_index" || n == "thread_sort_index") << ev;
        EXPECT_TRUE(ev["args"].value("sort_index", nlohmann::json()).is_number_integer()) << ev;
      }
      if (n.rfind("thread_", 0) == 0) {
        EXPECT_TRUE(ev.contains("tid")) << ev;
      }
    } else if (ph == "X") {
      ASSERT_TRUE(ev.contains("dur") && ev["dur"].is_number()) << ev;
      EXPECT_GE(ev["dur"].get<double>(), 0.0) << ev;
      EXPECT_TRUE(ev.contains("tid")) << ev;
      with_slices.insert(ev["pid"].get<int>());
    } else if (ph == "C") {
      ASSERT_TRUE(ev.contains("args") && ev["args"].is_object() && !ev["args"].empty()) << ev;
      for (const auto& [series, v] : ev["args"].items()) EXPECT_TRUE(v.is_number()) << ev;
    } else if (ph == "s" || ph == "f") {
      for (const char* key : {"id", "cat"}) ASSERT_TRUE(ev.contains(key)) << key << ": " << ev;
      ASSERT_TRUE(ev["id"].is_number_integer()) << ev;
      EXPECT_TRUE(ev.contains("tid")) << ev;
      auto& side = ph == "s" ? starts : finishes;
      EXPECT_TRUE(
          side.emplace(ev["id"].get<std::uint64_t>(), std::make_pair(ev["cat"], ev["name"])).second)
          << "flow id used twice: " << ev;
      if (ph == "f") {
        EXPECT_EQ(ev.value("bp", ""), "e") << ev;
      }
    } else if (ph == "i") {
      const std::string scope = ev.value("s", "t");
      EXPECT_TRUE(scope == "g" || scope == "p" || scope == "t") << ev;
    }
  }
  EXPECT_EQ(starts, finishes) << "every flow start needs its finish with the same cat and name";
}

// pid -> process_name, from the M events.
std::map<int, std::string> process_names(const nlohmann::json& chrome) {
  std::map<int, std::string> names;
  for (const auto& ev : chrome.at("traceEvents")) {
    if (ev.at("ph") == "M" && ev.at("name") == "process_name") {
      names[ev.at("pid")] = ev.at("args").at("name");
    }
  }
  return names;
}

TEST(ChromeTracePerfetto, EveryTracedRankOfARealRunIsAProcessWithSlices) {
  const Exported e = simulate(
      "--scenario " + std::string(ZEROSIM_SOURCE_DIR) + "/scenarios/gpt2-xl_zero2_8xa100.json",
      "zero2");
  ASSERT_EQ(e.exit_code, 0);
  ASSERT_GT(e.trace.ranks.size(), 1u);  // several roles traced: the check means something
  std::set<int> with_slices;
  expect_perfetto_structure(e, with_slices);
  ASSERT_FALSE(HasFatalFailure());
  const std::map<int, std::string> names = process_names(e.chrome);
  ASSERT_EQ(names.size(), e.trace.ranks.size());
  for (const TraceRank& r : e.trace.ranks) {
    const auto pid = static_cast<int>(r.rank);
    ASSERT_TRUE(names.count(pid)) << "rank " << r.rank << " has no process_name";
    EXPECT_EQ(names.at(pid).rfind("rank " + std::to_string(r.rank) + " (", 0), 0u);
    EXPECT_TRUE(with_slices.count(pid)) << "rank " << r.rank << " has no slices";
  }
  for (const auto& ev : e.chrome.at("traceEvents")) EXPECT_NE(ev.at("ph"), "i") << "no OOM here";
}

TEST(ChromeTracePerfetto, AnOutOfMemoryRunCarriesItsOomAsAProcessInstantEvent) {
  // Llama-2-7B under ZeRO-0 on 80 GB GPUs: the fp32 master weights and Adam states do not fit.
  const Exported e = simulate("--model llama2-7b --gpus 8 --stage 0", "oom");
  ASSERT_EQ(e.exit_code, 2);  // infeasible, the outputs still written
  std::set<int> with_slices;
  expect_perfetto_structure(e, with_slices);
  ASSERT_FALSE(HasFatalFailure());
  std::size_t oom_ranks = 0;
  std::map<int, std::size_t> instants;
  for (const auto& ev : e.chrome.at("traceEvents")) {
    if (ev.at("ph") == "i") ++instants[ev.at("pid").get<int>()];
  }
  for (const TraceRank& r : e.trace.ranks) {
    const auto pid = static_cast<int>(r.rank);
    EXPECT_TRUE(with_slices.count(pid)) << "rank " << r.rank;
    if (!r.oom) {
      EXPECT_EQ(instants.count(pid), 0u) << "rank " << r.rank << " did not run out of memory";
      continue;
    }
    ++oom_ranks;
    ASSERT_EQ(instants[pid], 1u) << "rank " << r.rank;
    for (const auto& ev : e.chrome.at("traceEvents")) {
      if (ev.at("ph") != "i" || ev.at("pid") != pid) continue;
      ASSERT_TRUE(ev.contains("args") && ev.contains("s") && ev.contains("cat")) << ev;
      EXPECT_EQ(ev["s"], "p");  // across the rank's tracks
      EXPECT_EQ(ev["cat"], "oom");
      EXPECT_EQ(ev["name"], "OOM: " + r.oom->buffer_name);
      EXPECT_EQ(ev["ts"].get<double>(), std::stod(format_us(r.oom->t)));
      EXPECT_EQ(ev.at("args").at("buffer"), r.oom->buffer_name);
      EXPECT_EQ(ev.at("args").at("category"), std::string(category_name(r.oom->category)));
      EXPECT_EQ(ev.at("args").at("bytes").get<Bytes>(), r.oom->bytes);
      EXPECT_EQ(ev.at("args").at("live_bytes").get<Bytes>(), r.oom->live_bytes);
      EXPECT_EQ(ev.at("args").at("capacity").get<Bytes>(), r.oom->capacity);
      EXPECT_GT(r.oom->live_bytes, r.oom->capacity);
    }
  }
  EXPECT_GE(oom_ranks, 1u);
}

// `zerosim validate --output`: the measured trace's named counters (trace.h "Named counters")
// become one counter track each under the rank's process, the peak counter's last value is the
// peak validate reports, and every slice carries its host issue time.
TEST(ChromeTracePerfetto, AValidateRunsNamedCountersBecomeCounterTracks) {
  const std::string base =
      ::testing::TempDir() + "zerosim_chrome_" + std::to_string(getpid()) + "_validate";
  const clitest::CliRun v = clitest::run_cli(
      "validate --scenario " + std::string(ZEROSIM_SOURCE_DIR) +
      "/scenarios/tiny_zero2_4gpu.json --no-data --format json --output " + base + ".json");
  ASSERT_EQ(v.exit_code, 0) << v.err << v.out;
  const auto report = nlohmann::json::parse(v.out);
  Result<Trace> t = read_trace_file(base + ".json");
  std::remove((base + ".json").c_str());
  ASSERT_TRUE(t.ok()) << t.diagnostics().to_string();
  Exported e;
  e.trace = std::move(t.value());
  std::ostringstream chrome;
  write_chrome_trace(e.trace, chrome);
  e.text = chrome.str();
  e.chrome = nlohmann::json::parse(e.text, nullptr, false);
  std::set<int> with_slices;
  expect_perfetto_structure(e, with_slices);
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_FALSE(e.trace.counters.empty());
  // (pid, name) -> the last value written and the arg key it was written under.
  std::map<std::pair<int, std::string>, std::pair<std::string, std::int64_t>> last;
  std::size_t issued = 0, slices = 0;
  for (const auto& ev : e.chrome.at("traceEvents")) {
    if (ev.at("ph") == "X") {
      ++slices;
      issued += ev.at("args").contains("issue_ts") &&
                ev.at("args").at("issue_ts").get<double>() <= ev.at("ts").get<double>();
    }
    if (ev.at("ph") != "C") continue;
    const std::string name = ev.at("name");
    if (name.rfind("memory.", 0) == 0) continue;  // the memory curve's series
    ASSERT_EQ(ev.at("args").size(), 1u) << ev;
    const auto only = ev.at("args").begin();  // an iterator into ev, which outlives it
    last[{ev.at("pid").get<int>(), name}] = {only.key(), only.value().get<std::int64_t>()};
  }
  EXPECT_EQ(issued, slices);
  EXPECT_GT(slices, 0u);
  ASSERT_EQ(last.size(), e.trace.counters.size());
  std::int64_t largest_peak = 0;
  for (const TraceCounter& c : e.trace.counters) {
    const auto it = last.find({static_cast<int>(c.rank), c.name});
    ASSERT_NE(it, last.end()) << c.name << " of rank " << c.rank << " has no counter track";
    const bool bytes = c.name.size() > 6 && c.name.substr(c.name.size() - 6) == "_bytes";
    EXPECT_EQ(it->second.first, bytes ? "bytes" : "value") << c.name;
    EXPECT_EQ(it->second.second, c.samples.back().value) << c.name;
    if (c.name == "alloc.device_peak_bytes")
      largest_peak = std::max(largest_peak, c.samples.back().value);
  }
  EXPECT_GT(largest_peak, 0);
  EXPECT_EQ(largest_peak, report.at("memory").at("largest_peak_bytes").get<std::int64_t>());
}

}  // namespace
}  // namespace zerosim
