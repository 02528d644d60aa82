// The host backend's measured trace beyond spans (host_backend.h, sampled_device.h, trace.h
// "Named counters"): every traced rank carries the tracking allocator's named counters, whose
// values are the allocator's own figures (the last alloc.device_peak_bytes is the peak validate
// compares with the ledger) and do not depend on timing; the memory curve drops at Frees; every
// span carries its host issue time, a collective's before its rendezvous completes; counters and
// issue times survive the trace writer and reader, and summarize() takes the host peak from them.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "host_testlib.h"
#include "sampled_device.h"
#include "zerosim/host_backend.h"
#include "zerosim/trace.h"

namespace zerosim::exec {
namespace {

using hosttest::build;
using hosttest::Built;
using hosttest::quick;

const TraceCounter* find(const Trace& t, std::uint32_t rank, const std::string& name) {
  for (const TraceCounter& c : t.counters)
    if (c.rank == rank && c.name == name) return &c;
  return nullptr;
}

std::int64_t max_value(const TraceCounter& c) {
  std::int64_t m = 0;
  for (const CounterSample& s : c.samples) m = std::max(m, s.value);
  return m;
}

std::vector<std::int64_t> values(const TraceCounter& c) {
  std::vector<std::int64_t> v;
  for (const CounterSample& s : c.samples) v.push_back(s.value);
  return v;
}

TEST(AllocatorCounters, FirstSampleRecordsEverythingThenOnlyChanges) {
  AllocatorCounters c;
  MemoryCounters m;
  c.sample(5, m);
  m.device_current = m.device_peak = 64;
  m.device_buffers = 1;
  c.sample(7, m);
  m.host_current = 8;
  m.host_buffers = 1;
  c.sample(9, m);
  const std::vector<TraceCounter> out = c.take(3);
  ASSERT_EQ(out.size(), kAllocatorCounterNames.size());
  for (std::size_t k = 0; k < out.size(); ++k) {
    EXPECT_EQ(out[k].rank, 3u);
    EXPECT_EQ(out[k].name, kAllocatorCounterNames[k]);
    if (k > 0) {
      EXPECT_LT(out[k - 1].name, out[k].name);  // Trace::counters' order
    }
    ASSERT_FALSE(out[k].samples.empty());
    EXPECT_EQ(out[k].samples[0].t, 5);
    EXPECT_EQ(out[k].samples[0].value, 0);
  }
  EXPECT_EQ(out[1].name, "alloc.device_bytes");
  EXPECT_EQ(out[1].samples.size(), 2u);  // unchanged at t = 9: no sample
  EXPECT_EQ(out[1].samples[1].t, 7);
  EXPECT_EQ(out[1].samples[1].value, 64);
  EXPECT_EQ(out[4].name, kHostBytesCounter);
  ASSERT_EQ(out[4].samples.size(), 2u);
  EXPECT_EQ(out[4].samples[1].t, 9);
  EXPECT_EQ(out[4].samples[1].value, 8);
}

// The offload scenario has host buffers (the optimizer states on the CPU), so host_bytes moves.
TEST(HostCounters, TracedRanksCarryTheAllocatorsFiguresAndTheSummaryUsesThem) {
  const Built b = build("llama2-13b_zero2_offload_8xa100.json", 2);
  auto run = run_host(b.schedule, b.graph, quick());
  ASSERT_TRUE(run.ok()) << run.diagnostics().to_string();
  const Trace& t = run->trace;
  std::set<std::uint32_t> traced;
  for (const Span& s : t.spans) traced.insert(s.rank);
  ASSERT_FALSE(traced.empty());
  ASSERT_EQ(t.counters.size(), traced.size() * kAllocatorCounterNames.size());
  for (std::size_t i = 1; i < t.counters.size(); ++i) {
    const TraceCounter& a = t.counters[i - 1];
    const TraceCounter& c = t.counters[i];
    EXPECT_TRUE(a.rank < c.rank || (a.rank == c.rank && a.name < c.name)) << c.name;
  }
  const Summary summary = summarize(t);
  for (std::uint32_t rank : traced) {
    const MemoryCounters& m = run->ranks[rank].memory;
    for (const char* name : kAllocatorCounterNames) {
      const TraceCounter* c = find(t, rank, name);
      ASSERT_NE(c, nullptr) << "rank " << rank << " " << name;
      ASSERT_FALSE(c->samples.empty());
      EXPECT_EQ(c->samples.front().value, 0) << name;  // before op 0 nothing is live
      for (std::size_t k = 1; k < c->samples.size(); ++k) {
        EXPECT_LE(c->samples[k - 1].t, c->samples[k].t) << name;
        EXPECT_NE(c->samples[k - 1].value, c->samples[k].value) << name;  // changes only
      }
    }
    const TraceCounter& peak = *find(t, rank, "alloc.device_peak_bytes");
    const TraceCounter& device = *find(t, rank, "alloc.device_bytes");
    const TraceCounter& host = *find(t, rank, kHostBytesCounter);
    EXPECT_EQ(static_cast<Bytes>(peak.samples.back().value), m.device_peak) << rank;
    EXPECT_GT(m.device_peak, 0u);
    EXPECT_EQ(static_cast<Bytes>(max_value(device)), m.device_peak) << rank;
    EXPECT_EQ(static_cast<Bytes>(device.samples.back().value), m.device_current) << rank;
    EXPECT_TRUE(std::is_sorted(
        peak.samples.begin(), peak.samples.end(),
        [](const CounterSample& x, const CounterSample& y) { return x.value < y.value; }));
    EXPECT_GT(m.host_peak, 0u);
    EXPECT_EQ(static_cast<Bytes>(max_value(host)), m.host_peak) << rank;
    EXPECT_EQ(find(t, rank, "alloc.device_buffers")->samples.back().value,
              static_cast<std::int64_t>(m.device_buffers));
    EXPECT_EQ(find(t, rank, "alloc.host_buffers")->samples.back().value,
              static_cast<std::int64_t>(m.host_buffers));
    // summarize(): the role's host peak is the host_bytes counter's (the trace has no RankPeaks).
    const std::uint32_t role = run->ranks[rank].role;
    const auto p = std::find_if(summary.peaks.begin(), summary.peaks.end(),
                                [&](const RolePeakSummary& r) { return r.role == role; });
    ASSERT_NE(p, summary.peaks.end());
    EXPECT_EQ(p->host_peak, m.host_peak) << "role " << role;
  }
}

TEST(HostCounters, CounterValuesDoNotDependOnTiming) {
  const Built b = build("tiny_zero2_4gpu.json", 2);
  auto one = run_host(b.schedule, b.graph, quick());
  auto two = run_host(b.schedule, b.graph, quick());
  ASSERT_TRUE(one.ok() && two.ok());
  ASSERT_EQ(one->trace.counters.size(), two->trace.counters.size());
  ASSERT_FALSE(one->trace.counters.empty());
  for (std::size_t i = 0; i < one->trace.counters.size(); ++i) {
    EXPECT_EQ(one->trace.counters[i].name, two->trace.counters[i].name);
    EXPECT_EQ(values(one->trace.counters[i]), values(two->trace.counters[i]))
        << one->trace.counters[i].name;
  }
}

TEST(HostCounters, TheMemoryCurveDropsAtFrees) {
  const Built b = build("tiny_zero2_4gpu.json", 2);
  auto run = run_host(b.schedule, b.graph, quick());
  ASSERT_TRUE(run.ok());
  for (const TraceRank& r : run->trace.ranks) {
    ASSERT_FALSE(r.memory.empty());
    // The curve ends where the allocator ended (Frees after the last Alloc included) and a Free
    // shows as a sample below its predecessor.
    EXPECT_EQ(r.memory.back().total, run->ranks[r.rank].memory.device_current) << r.rank;
    std::size_t drops = 0;
    for (std::size_t k = 1; k < r.memory.size(); ++k) {
      drops += r.memory[k].total < r.memory[k - 1].total;
      EXPECT_LE(r.memory[k - 1].t, r.memory[k].t);
    }
    EXPECT_GT(drops, 0u) << r.rank;
  }
}

TEST(HostCounters, EverySpanCarriesItsIssueTimeAndCollectivesWaitForTheirPartners) {
  const Built b = build("tiny_zero2_4gpu.json", 2);  // 4 ranks in 4 roles: every rank traced
  auto run = run_host(b.schedule, b.graph, quick());
  ASSERT_TRUE(run.ok());
  const Trace& t = run->trace;
  std::size_t collectives = 0, waited = 0;
  for (const Span& s : t.spans) {
    ASSERT_NE(s.issue_ns, kNoTime) << s.name;
    EXPECT_GE(s.issue_ns, 0) << s.name;
    EXPECT_LE(s.issue_ns, s.start_ns) << s.name;
    EXPECT_EQ(s.phase, b.schedule.ops[s.op].phase) << s.name;
    if (s.category != "collective") {
      EXPECT_EQ(s.issue_ns, s.start_ns) << s.name;  // a CPU thread runs what it issues at once
      continue;
    }
    ++collectives;
    waited += s.issue_ns < s.start_ns;
    ASSERT_LT(s.comm, t.comms.size());
    EXPECT_EQ(t.comms[s.comm].start_ns, s.start_ns);  // the record times the same call
    EXPECT_EQ(t.comms[s.comm].dur_ns, s.dur_ns);
  }
  ASSERT_GT(collectives, 0u);
  // Every collective of the toy has 2 or 4 members; all but the last to arrive wait.
  EXPECT_GT(waited, 0u);
}

TEST(HostCounters, CountersAndIssueTimesRoundTripThroughTheTraceFile) {
  const Built b = build("tiny_zero2_4gpu.json", 2);
  auto run = run_host(b.schedule, b.graph, quick());
  ASSERT_TRUE(run.ok());
  std::ostringstream text;
  write_trace_json(run->trace, text);
  auto back = read_trace_json(text.str(), "measured.json");
  ASSERT_TRUE(back.ok()) << back.diagnostics().to_string();
  const Trace& a = run->trace;
  const Trace& r = back.value();
  ASSERT_EQ(r.counters.size(), a.counters.size());
  for (std::size_t i = 0; i < a.counters.size(); ++i) {
    EXPECT_EQ(r.counters[i].rank, a.counters[i].rank);
    EXPECT_EQ(r.counters[i].name, a.counters[i].name);
    ASSERT_EQ(r.counters[i].samples.size(), a.counters[i].samples.size());
    for (std::size_t k = 0; k < a.counters[i].samples.size(); ++k) {
      EXPECT_EQ(r.counters[i].samples[k].t, a.counters[i].samples[k].t);
      EXPECT_EQ(r.counters[i].samples[k].value, a.counters[i].samples[k].value);
    }
  }
  ASSERT_EQ(r.spans.size(), a.spans.size());
  for (std::size_t i = 0; i < a.spans.size(); ++i) {
    EXPECT_EQ(r.spans[i].issue_ns, a.spans[i].issue_ns);
    EXPECT_EQ(r.spans[i].phase, a.spans[i].phase);
  }
  std::ostringstream again;
  write_trace_json(r, again);
  EXPECT_EQ(again.str(), text.str());
}

}  // namespace
}  // namespace zerosim::exec
