// Trace writers and reader: the zerosim trace JSON round-trips byte for byte and rejects broken
// files with one-line messages; the Chrome trace follows ecosystem.md §3 (object form with
// traceEvents first, µs with 3 decimals from integer ns, integer pid/tid, thread names and sort
// indices, one counter series per name, s/f flows with bp "e", no displayTimeUnit); the summary
// carries the numbers a person compares.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "simulator_testlib.h"
#include "zerosim/model_loader.h"
#include "zerosim/schedule_builder.h"

namespace zerosim {
namespace {

using namespace simtest;  // NOLINT

// An IPG bucket filled by two copies and all-reduced on the reduce stream while backward runs.
// Times (ns): fwd [0,100000], copies [100000,104000] [104000,108000], AR [108000,154000],
// bwd [108000,308000], wait marker 308000; the bucket buffer (2e6 B) lives [0, 308000].
Schedule bucket_schedule() {
  Schedule s = tiny_schedule(4);
  s.buffers = {buffer("ipg[0]", BufferCategory::CommBucket, 1000000)};
  Op copy = data(OpKind::CopyToBucket, Stream::Compute, DType::Float16, 1000000);
  copy.bucket = 0;
  copy.dst = {0, 0, 0, 0};
  Op ar =
      with_deps(collective(CollectiveKind::AllReduce, 1000000, 1000000, 0, Stream::Reduce), {3});
  ar.bucket = 0;
  ar.label = "flush 0: AR(1000000)";
  Op fwd = compute(OpKind::Forward, 5e9);
  fwd.layer = 0;
  fwd.label = "fwd layers.0";
  s.ops = {alloc(0),
           fwd,
           copy,
           copy,
           ar,
           compute(OpKind::Backward, 1e10),
           with_deps(make_op(OpKind::Marker), {4}),
           free_op(0)};
  return s;
}

std::string trace_text(const Trace& t) {
  std::ostringstream out;
  write_trace_json(t, out);
  return out.str();
}

TEST(Trace, FormatUsIsExactFromIntegerNanoseconds) {
  EXPECT_EQ(format_us(0), "0.000");
  EXPECT_EQ(format_us(1), "0.001");
  EXPECT_EQ(format_us(1234567), "1234.567");
  EXPECT_EQ(format_us(-1), "-0.001");
  EXPECT_EQ(format_us(9223372036854775807LL), "9223372036854775.807");
}

TEST(Trace, SimulatorTraceHoldsSpansCommsAndCounters) {
  const SimulationResult r = run(bucket_schedule());
  const Trace& t = r.trace;
  ASSERT_EQ(t.spans.size(), 6u);  // Alloc/Free become counters, not spans
  ASSERT_EQ(t.comms.size(), 1u);
  const CommRecord& c = t.comms[0];
  EXPECT_EQ(c.op, 4u);
  EXPECT_EQ(c.start_ns, 108000);
  EXPECT_EQ(c.dur_ns, 46000);
  EXPECT_EQ(c.bytes, 2000000u);
  EXPECT_EQ(c.bytes_sent, 3000000u);
  EXPECT_DOUBLE_EQ(c.algbw_gbps, 2000000.0 / 46000.0);
  EXPECT_DOUBLE_EQ(c.busbw_gbps, 2000000.0 / 46000.0 * 1.5);
  EXPECT_EQ(c.algorithm, "ring");
  EXPECT_EQ(c.bucket, 0u);
  const Span& ar = t.spans[3];  // fwd, copy, copy, then AR and bwd start at 108000 (op order)
  EXPECT_EQ(ar.op, 4u);
  EXPECT_EQ(ar.comm, 0u);
  EXPECT_EQ(ar.stream, Stream::Reduce);
  EXPECT_EQ(ar.category, "collective");
  EXPECT_EQ(ar.rank, kAllRanks);
  ASSERT_EQ(t.ranks.size(), 1u);
  EXPECT_EQ(t.ranks[0].rank_count, 4u);
  ASSERT_EQ(t.ranks[0].memory.size(), 2u);
  EXPECT_EQ(t.ranks[0].memory[0].total, 2000000u);
  EXPECT_EQ(t.ranks[0].memory[1].t, 308000);
  EXPECT_EQ(t.ranks[0].memory[1].total, 0u);
  EXPECT_EQ(t.meta.backend, "simulator");
  EXPECT_EQ(t.meta.gpu, "round-gpu");
  EXPECT_EQ(t.meta.world, 4u);
}

TEST(Trace, JsonRoundTripsByteForByte) {
  const SimulationResult r = run(two_role_schedule());
  const std::string text = trace_text(r.trace);
  EXPECT_EQ(text.rfind("{\n  \"format\": \"zerosim-trace\",\n  \"version\": 2,\n", 0), 0u);
  auto back = read_trace_json(text, "t.json");
  ASSERT_TRUE(back.ok()) << back.diagnostics().to_string();
  EXPECT_EQ(trace_text(back.value()), text);
  const SimulationResult b = run(bucket_schedule());
  const std::string text2 = trace_text(b.trace);
  auto back2 = read_trace_json(text2, "t.json");
  ASSERT_TRUE(back2.ok()) << back2.diagnostics().to_string();
  EXPECT_EQ(trace_text(back2.value()), text2);
  EXPECT_EQ(back2->comms[0].busbw_gbps, b.trace.comms[0].busbw_gbps);  // doubles read back exactly
}

std::string errors_of(const std::string& text) {
  auto r = read_trace_json(text, "trace.json");
  EXPECT_FALSE(r.ok());
  return r.diagnostics().to_string();
}

TEST(Trace, ReaderRejectsBrokenFilesWithOneLineMessages) {
  const std::string good = trace_text(run(bucket_schedule()).trace);
  const std::string truncated = errors_of(good.substr(0, good.size() / 2));
  EXPECT_EQ(truncated.rfind("trace.json: invalid JSON at line ", 0), 0u) << truncated;
  EXPECT_EQ(std::count(truncated.begin(), truncated.end(), '\n'), 1);
  std::string v3 = good;
  v3.replace(v3.find("\"version\": 2"), 12, "\"version\": 3");
  EXPECT_EQ(errors_of(v3), "trace.json: /version: expected version 1 or 2, got 3\n");
  std::string fmt = good;
  fmt.replace(fmt.find("zerosim-trace"), 13, "zerosim-sched");
  EXPECT_EQ(errors_of(fmt),
            "trace.json: /format: expected \"zerosim-trace\", got \"zerosim-sched\"\n");
  EXPECT_EQ(errors_of("[1, 2]"), "trace.json: /: expected an object, got an array\n");
}

TEST(Trace, ReaderRejectsInconsistentReferences) {
  Trace t = run(bucket_schedule()).trace;
  t.spans[3].comm = 5;
  EXPECT_EQ(errors_of(trace_text(t)),
            "trace.json: /spans/3/comm: expected a comm index 0..0, got 5\n");
  t = run(bucket_schedule()).trace;
  t.spans[0].comm = 0;
  EXPECT_EQ(
      errors_of(trace_text(t)),
      "trace.json: /spans/0/comm: expected comm record 0 to be op 1 of the same rank, got op 4\n");
  t = run(bucket_schedule()).trace;
  t.spans[1].rank = 9;
  EXPECT_EQ(errors_of(trace_text(t)),
            "trace.json: /spans/1/rank: expected a traced rank (0), got 9\n");
  t = run(bucket_schedule()).trace;
  t.ranks[0].memory[1].by_category[0] = 5;
  EXPECT_EQ(
      errors_of(trace_text(t)),
      "trace.json: /ranks/0/memory/1: expected the categories to add up to the total 0, got 5\n");
  t = run(bucket_schedule()).trace;
  t.ranks[0].memory[1].t = -1;
  const std::string neg = errors_of(trace_text(t));
  EXPECT_NE(neg.find("/ranks/0/memory/1: expected integers >= 0, got -1"), std::string::npos)
      << neg;
}

TEST(Trace, ReaderRejectsUnknownKeysAndNames) {
  std::string text = trace_text(run(bucket_schedule()).trace);
  text.replace(text.find("\"stream\": \"reduce\""), 18, "\"stream\": \"reduse\"");
  const std::string e = errors_of(text);
  EXPECT_EQ(e.rfind("trace.json: /spans/3/stream: expected one of ", 0), 0u) << e;
  text = trace_text(run(bucket_schedule()).trace);
  text.replace(text.find("\"dur_ns\": 46000"), 15, "\"durr_ns\": 46000");
  const std::string u = errors_of(text);
  EXPECT_NE(u.find("trace.json: /spans/3: expected a \"dur_ns\" key, got none"), std::string::npos)
      << u;
  EXPECT_NE(u.find("trace.json: /spans/3/durr_ns: unknown key \"durr_ns\""), std::string::npos)
      << u;
}

// "ranks" and "counters" as objects with numeric keys: their rows were streamed by the key before
// the object was refused, and a key of 4000000000 sized the rows by it (bad_alloc in check,
// calibrate and view; found by a hostile-input pass).
TEST(Trace, ReaderRefusesRanksAndCountersWrittenAsObjectsWithoutSizingByTheirKeys) {
  nlohmann::json good = nlohmann::json::parse(trace_text(run(bucket_schedule()).trace));
  nlohmann::json ranks = good;
  ranks["ranks"] = {{"4000000000", good["ranks"][0]}};
  EXPECT_EQ(errors_of(ranks.dump()), "trace.json: /ranks: expected an array, got an object\n");
  nlohmann::json counters = good;
  counters["counters"] = {
      {"4000000000", {{"rank", 0}, {"name", "host_bytes"}, {"samples", {{0, 1}, {5, 2}}}}}};
  EXPECT_EQ(errors_of(counters.dump()),
            "trace.json: /counters: expected an array, got an object\n");
}

// check kept a sequence per rank of the world: "world": 4294967295 in meta ran out of memory. The
// bound is the largest world zerosim simulates, so its own traces read back.
TEST(Trace, ReaderRefusesAWorldAboveTheTracedWorldCap) {
  nlohmann::json j = nlohmann::json::parse(trace_text(run(bucket_schedule()).trace));
  j["meta"]["world"] = 4294967295u;
  EXPECT_EQ(errors_of(j.dump()),
            "trace.json: /meta/world: expected an integer 1..16777216, got 4294967295\n");
  j["meta"]["world"] = kMaxTracedWorld;
  EXPECT_TRUE(read_trace_json(j.dump(), "trace.json").ok());
  EXPECT_EQ(kMaxTracedWorld, 16777216u);  // --gpus's bound (cli/inputs.h kMaxGpus)
}

// A meta name is printed in check's and view's headers: a control character in an edited trace
// reached the terminal raw (found by a hostile-input pass).
TEST(Trace, ReaderRefusesANameWithControlCharacters) {
  nlohmann::json j = nlohmann::json::parse(trace_text(run(bucket_schedule()).trace));
  j["meta"]["model"] = "evil\n\u001b[31mRED";
  EXPECT_EQ(errors_of(j.dump()),
            "trace.json: /meta/model: expected a name without control characters, got "
            "\"evil\\n\\u001b[31mRED\"\n");
  j["meta"]["model"] = "Llama-3.1-8B \u00e9";  // UTF-8 is a name
  EXPECT_TRUE(read_trace_json(j.dump(), "trace.json").ok());
}

TEST(Trace, ChromeTraceFollowsThePerfettoRules) {
  const SimulationResult r = run(bucket_schedule());
  std::ostringstream out;
  write_chrome_trace(r.trace, out);
  const std::string text = out.str();
  EXPECT_EQ(text.rfind("{\"traceEvents\": [", 0), 0u);
  EXPECT_EQ(text.find("displayTimeUnit"), std::string::npos);
  const auto j = nlohmann::json::parse(text);
  ASSERT_TRUE(j.contains("otherData"));
  EXPECT_EQ(j["otherData"]["backend"], "simulator");
  int x = 0, c = 0, s = 0, f = 0;
  std::set<std::string> threads;
  for (const auto& e : j["traceEvents"]) {
    ASSERT_TRUE(e["pid"].is_number_integer());
    if (e.contains("tid")) {
      ASSERT_TRUE(e["tid"].is_number_integer());
    }
    const std::string ph = e["ph"];
    if (ph == "M" && e["name"] == "process_name") {
      EXPECT_EQ(e["args"]["name"], "rank 0 (role 0, 4 ranks)");
    }
    if (ph == "M" && e["name"] == "thread_name")
      threads.insert(e["args"]["name"].get<std::string>());
    if (ph == "X") ++x;
    if (ph == "C") {
      ++c;
      EXPECT_EQ(e["args"].size(), 1u);
      EXPECT_TRUE(e["args"].contains("bytes"));
    }
    if (ph == "s") {
      ++s;
      EXPECT_EQ(e["ts"].get<double>(), 106.0);  // middle of the bucket's last copy
      EXPECT_EQ(e["tid"], 1);
    }
    if (ph == "f") {
      ++f;
      EXPECT_EQ(e["bp"], "e");
      EXPECT_EQ(e["ts"].get<double>(), 131.0);  // middle of the all-reduce
      EXPECT_EQ(e["tid"], 2);
      EXPECT_EQ(e["name"], "bucket 0");
    }
  }
  EXPECT_EQ(x, 6);
  EXPECT_EQ(c, 4);  // memory.total and memory.comm_bucket, at 0 and at 308 µs
  EXPECT_EQ(s, 1);
  EXPECT_EQ(f, 1);
  EXPECT_EQ(threads, (std::set<std::string>{"compute", "reduce"}));
  EXPECT_NE(text.find("\"name\": \"flush 0: AR(1000000)\", \"cat\": \"collective\", \"ph\": \"X\", "
                      "\"ts\": 108.000, "
                      "\"dur\": 46.000, \"pid\": 0, \"tid\": 2"),
            std::string::npos);
  EXPECT_NE(text.find("{\"name\": \"memory.comm_bucket\", \"ph\": \"C\", \"ts\": 308.000, \"pid\": "
                      "0, \"args\": "
                      "{\"bytes\": 0}}"),
            std::string::npos);
  EXPECT_NE(
      text.find(
          "{\"name\": \"thread_sort_index\", \"ph\": \"M\", \"pid\": 0, \"tid\": 2, \"args\": "
          "{\"sort_index\": 2}}"),
      std::string::npos);
}

// A real schedule (GPT-2 small, stage 2 with overlap_comm, two steps): on every (pid, tid) the X
// events never partially overlap (Perfetto moves those to an overflow track), and timestamps are
// the exact µs of integer ns.
TEST(Trace, ChromeSlicesNestOnEveryThreadOfARealSchedule) {
  auto m = load_zoo_model("gpt2-small");
  ASSERT_TRUE(m.ok());
  DsConfig ds = default_ds_config(2, DType::BFloat16);
  ds.zero.overlap_comm = true;
  PartitionOptions o;
  o.stage = 2;
  o.world = 8;
  const PartitionPlan plan = plan_partition(m.value(), o).value();
  ScheduleInput in;
  in.model = &m.value();
  in.plan = &plan;
  in.ds = &ds;
  in.cluster.gpu = find_gpu("H100-SXM-80GB").value();
  in.cluster.nodes = 1;
  in.cluster.gpus_per_node = 8;
  in.training.seq_len = 1024;
  in.steps = 2;
  const Schedule s = build_schedule(in).value();
  auto r = simulate(s, in.cluster.gpu);
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  std::ostringstream out;
  write_chrome_trace(r->trace, out);
  const auto j = nlohmann::json::parse(out.str());
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> slices;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "X")
      slices[{e["pid"].get<int>(), e["tid"].get<int>()}].emplace_back(e["ts"], e["dur"]);
  ASSERT_GE(slices.size(), 2u);  // compute and reduce streams at least
  for (auto& [key, v] : slices) {
    std::sort(v.begin(), v.end());
    for (std::size_t i = 1; i < v.size(); ++i)
      EXPECT_LE(v[i - 1].first + v[i - 1].second, v[i].first + 1e-6)
          << "pid " << key.first << " tid " << key.second;
  }
  EXPECT_GT(r->summary.comm.size(), 0u);
  EXPECT_EQ(r->trace.comms.size(), [&] {
    std::size_t n = 0;
    for (const Op& op : s.ops) n += op.kind == OpKind::Collective;
    return n;
  }());
}

TEST(Trace, SummaryJsonHasTheComparedNumbers) {
  const SimulationResult r = run(bucket_schedule());
  std::ostringstream out;
  write_summary_json(r.summary, out);
  const auto j = nlohmann::json::parse(out.str());
  EXPECT_EQ(j["format"], "zerosim-summary");
  EXPECT_EQ(j["version"], 1);
  EXPECT_EQ(j["time"]["total_ns"], 308000);
  EXPECT_EQ(j["time"]["compute_ns"], 300000);
  EXPECT_EQ(j["time"]["exposed_comm_ns"], 0);
  EXPECT_EQ(j["time"]["steps"][0]["duration_ns"], 308000);
  EXPECT_EQ(j["comm"][0]["kind"], "all_reduce");
  EXPECT_EQ(j["comm"][0]["bytes_sent_per_rank"], 3000000);
  EXPECT_EQ(j["memory"]["peak_bytes"], 2000000);
  EXPECT_EQ(j["memory"]["roles"][0]["by_category"]["comm_bucket"], 2000000);
  EXPECT_EQ(j["memory"]["roles"][0]["rank_count"], 4);
  EXPECT_TRUE(j["oom"].is_null());
}

}  // namespace
}  // namespace zerosim
