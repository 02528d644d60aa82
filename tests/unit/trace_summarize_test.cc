// summarize() (trace.h): the simulator's summary is summarize() of its trace, so the summary is the
// same with and without a recorded trace, the written trace summarises to the same numbers for the
// roles it traces (memory from the curves, not the simulator's RankPeaks), and a measured-style
// trace (one timeline per rank) takes the largest rank's numbers.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "zerosim/engine.h"
#include "zerosim/partition_plan.h"
#include "zerosim/scenario.h"
#include "zerosim/schedule_builder.h"
#include "zerosim/trace.h"

namespace zerosim {
namespace {

std::string summary_text(const Summary& s) {
  std::ostringstream out;
  write_summary_json(s, out);
  return out.str();
}

// The schedule of a shipped scenario, built as `zerosim simulate --scenario` builds it.
Result<Schedule> scenario_schedule(const Scenario& s) {
  auto plan = plan_partition(
      s.model, partition_options(s.ds, static_cast<std::uint32_t>(s.cluster.world_size())));
  if (!plan.ok()) return plan.diagnostics();
  return build_schedule(schedule_input(s, plan.value()));
}

// Only the peaks of the given roles (the written trace carries a few roles).
Summary only_roles(Summary s, const Trace& t) {
  std::vector<RolePeakSummary> kept;
  for (const RolePeakSummary& p : s.peaks)
    for (const TraceRank& r : t.ranks)
      if (r.role == p.role) kept.push_back(p);
  s.peaks = kept;
  s.peak_role = s.steady_peak_role = 0;
  for (std::uint32_t i = 0; i < s.peaks.size(); ++i) {
    if (s.peaks[i].device.bytes > s.peaks[s.peak_role].device.bytes) s.peak_role = i;
    if (s.peaks[i].steady.bytes > s.peaks[s.steady_peak_role].steady.bytes) s.steady_peak_role = i;
  }
  for (RolePeakSummary& p : s.peaks) p.device.event = p.steady.event = 0;
  return s;
}

TEST(TraceSummarize, EveryShippedScenarioSummarisesAlikeWithAndWithoutATrace) {
  int scenarios = 0;
  for (const auto& e :
       std::filesystem::directory_iterator(std::string(ZEROSIM_SOURCE_DIR) + "/scenarios")) {
    if (e.path().extension() != ".json") continue;
    std::ifstream in(e.path());
    std::stringstream text;
    text << in.rdbuf();
    if (text.str().find("\"zerosim-scenario\"") == std::string::npos) continue;
    SCOPED_TRACE(e.path().string());
    auto sc = load_scenario_file(e.path().string());
    ASSERT_TRUE(sc.ok()) << sc.diagnostics().to_string();
    auto schedule = scenario_schedule(sc.value());
    ASSERT_TRUE(schedule.ok()) << schedule.diagnostics().to_string();
    EngineOptions with, without;
    with.record_trace = true;
    without.record_trace = false;
    auto a = simulate(schedule.value(), sc->cluster.gpu, with);
    auto b = simulate(schedule.value(), sc->cluster.gpu, without);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(summary_text(a->summary), summary_text(b->summary));
    EXPECT_TRUE(b->trace.spans.empty());
    // The written trace (memory curves of the traced roles, no RankPeaks) gives the same numbers
    // for those roles.
    ASSERT_FALSE(a->trace.ranks.empty());
    for (const TraceRank& r : a->trace.ranks) EXPECT_FALSE(r.peaks.has_value());
    Summary from_file = summarize(a->trace);
    for (RolePeakSummary& p : from_file.peaks) p.device.event = p.steady.event = 0;
    for (RolePeakSummary& p : from_file.peaks) p.host_peak = 0;  // no host curve in the file
    Summary expected = only_roles(a->summary, a->trace);
    for (RolePeakSummary& p : expected.peaks) p.host_peak = 0;
    EXPECT_EQ(summary_text(from_file), summary_text(expected));
    ++scenarios;
  }
  EXPECT_GE(scenarios, 9);
}

// Two measured ranks: each number is the larger rank's; a role's peak is its larger rank's; the
// OOM is carried, not derived.
TEST(TraceSummarize, PerRankTimelinesTakeTheLargestRank) {
  Trace t;
  t.meta.steps = 1;
  t.meta.backend = "cuda";
  for (std::uint32_t r : {0u, 1u}) {
    TraceRank tr;
    tr.rank = r;
    tr.role = 0;
    MemorySample s;
    s.t = 10;
    s.total = s.by_category[0] = 100 + 50 * r;
    tr.memory.push_back(s);
    t.ranks.push_back(tr);
  }
  t.ranks[1].oom = OomEvent{20, 0, 0, "b", BufferCategory::Temp, 8, 150, 140};
  const auto span = [](std::uint32_t rank, const char* cat, Stream st, SimTime start, SimTime dur) {
    Span s;
    s.rank = rank;
    s.category = cat;
    s.stream = st;
    s.start_ns = start;
    s.dur_ns = dur;
    return s;
  };
  t.spans.push_back(span(0, "forward", Stream::Compute, 0, 100));
  t.spans.push_back(span(1, "forward", Stream::Compute, 0, 120));
  t.spans.push_back(span(0, "collective", Stream::Reduce, 100, 50));
  Span waited = span(1, "backward", Stream::Compute, 150, 10);
  waited.wait_ns = 30;
  waited.wait_stream = Stream::Gather;
  t.spans.push_back(waited);
  Span init = span(0, "copy", Stream::Compute, 0, 0);
  init.phase = Phase::Init;
  t.spans.push_back(init);
  CommRecord c;
  c.rank = 0;
  c.kind = CollectiveKind::AllGather;
  c.bytes = 64;
  c.dur_ns = 50;
  t.comms.push_back(c);
  c.rank = 1;
  c.dur_ns = 70;
  t.comms.push_back(c);
  t.counters.push_back({1, kHostBytesCounter, {{5, 7}, {6, 9}}});
  const Summary s = summarize(t);
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_EQ(s.steps[0].end_ns, 160);
  EXPECT_EQ(s.compute_ns, 130);      // rank 1: 120 + 10
  EXPECT_EQ(s.exposed_comm_ns, 30);  // rank 1's wait on the gather stream
  ASSERT_EQ(s.comm.size(), 1u);
  EXPECT_EQ(s.comm[0].calls, 1u);
  EXPECT_EQ(s.comm[0].time_ns, 70);
  ASSERT_EQ(s.peaks.size(), 1u);
  EXPECT_EQ(s.peaks[0].device.bytes, 150u);
  EXPECT_EQ(s.peaks[0].rank, 1u);
  EXPECT_EQ(s.peaks[0].rank_count, 2u);
  EXPECT_EQ(s.peaks[0].host_peak, 9u);
  ASSERT_TRUE(s.oom.has_value());
  EXPECT_EQ(s.oom_rank, 1u);
  EXPECT_EQ(s.oom_ranks, 1u);
}

}  // namespace
}  // namespace zerosim
