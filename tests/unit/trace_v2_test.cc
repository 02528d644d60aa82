// Trace format version 2 (trace.h): every new field round-trips, a version-1 file still reads (with
// the defaults) but may not use version-2 keys, and each kind of garbage in a new field gives one
// diagnostic naming the file, the JSON pointer, what was expected and what was found. Also: the
// streaming reader still refuses duplicate keys inside a streamed element.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "zerosim/trace.h"

namespace zerosim {
namespace {

// Two traced ranks, one compute span, one collective span with its comm record, a counter, and
// every v2 field set to a non-default value.
Trace v2_trace() {
  Trace t;
  t.meta.world = 4;
  t.meta.steps = 2;
  t.meta.schedule_digest = "fnv1a64:0123456789abcdef";
  t.meta.clock = "cuda_events";
  t.meta.host = "node-1";
  t.meta.driver_version = "550.54";
  t.meta.cuda_version = "12.4";
  t.meta.nccl_version = "2.21.5";
  t.meta.warmup_steps = 3;
  t.meta.timed_steps = 2;
  for (std::uint32_t r : {0u, 1u}) {
    TraceRank tr;
    tr.rank = r;
    MemorySample s;
    s.t = 5;
    s.total = s.by_category[1] = 40;
    tr.memory.push_back(s);
    t.ranks.push_back(tr);
  }
  RankPeaks p;
  p.device.bytes = p.device.by_category[0] = 100;
  p.device.t = 7;
  p.steady.bytes = p.steady.by_category[2] = 60;
  p.steady.t = 9;
  p.host_bytes = 12;
  t.ranks[0].peaks = p;
  t.ranks[1].oom = OomEvent{11, 0, 0, "ipg[0]", BufferCategory::CommBucket, 8, 150, 140};
  Span fwd;
  fwd.rank = 0;
  fwd.name = "fwd layers.0";
  fwd.category = "forward";
  fwd.dur_ns = 10;
  fwd.issue_ns = 0;
  fwd.phase = Phase::Init;
  t.spans.push_back(fwd);
  Span ar;
  ar.rank = 1;
  ar.op = 4;
  ar.name = "flush 0";
  ar.category = "collective";
  ar.stream = Stream::Reduce;
  ar.start_ns = 12;
  ar.dur_ns = 3;
  ar.comm = 0;
  ar.wait_ns = 2;
  ar.wait_stream = Stream::Gather;
  t.spans.push_back(ar);
  CommRecord c;
  c.op = 4;
  c.rank = 1;
  c.kind = CollectiveKind::Reduce;
  c.micro_step = 1;
  c.reduce_op = ReduceOp::Sum;
  c.root = 3;
  c.start_ns = 12;
  c.dur_ns = 3;
  c.algorithm = "ring";
  t.comms.push_back(c);
  t.counters.push_back({0, kHostBytesCounter, {{0, 4}, {8, 12}}});
  t.counters.push_back({1, "pool.reserved_bytes", {{3, 1024}}});
  return t;
}

std::string text_of(const Trace& t) {
  std::ostringstream out;
  write_trace_json(t, out);
  return out.str();
}

std::string errors_of(const std::string& text) {
  auto r = read_trace_json(text, "trace.json");
  EXPECT_FALSE(r.ok());
  return r.diagnostics().to_string();
}

// `text` with the first occurrence of `from` replaced by `to` (which must exist).
std::string edit(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(TraceV2, EveryNewFieldRoundTrips) {
  const std::string text = text_of(v2_trace());
  auto back = read_trace_json(text, "t.json");
  ASSERT_TRUE(back.ok()) << back.diagnostics().to_string();
  EXPECT_EQ(text_of(back.value()), text);
  const Trace& t = back.value();
  EXPECT_EQ(t.meta.clock, "cuda_events");
  EXPECT_EQ(t.meta.warmup_steps, 3u);
  ASSERT_TRUE(t.ranks[0].peaks.has_value());
  EXPECT_EQ(t.ranks[0].peaks->steady.t, 9);
  ASSERT_TRUE(t.ranks[1].oom.has_value());
  EXPECT_EQ(t.ranks[1].oom->buffer_name, "ipg[0]");
  EXPECT_EQ(t.spans[0].phase, Phase::Init);
  EXPECT_EQ(t.spans[0].issue_ns, 0);
  EXPECT_EQ(t.spans[1].wait_stream, Stream::Gather);
  EXPECT_EQ(t.comms[0].reduce_op, ReduceOp::Sum);
  EXPECT_EQ(t.comms[0].root, 3u);
  ASSERT_EQ(t.counters.size(), 2u);
  EXPECT_EQ(t.counters[0].samples[1].value, 12);
}

TEST(TraceV2, VersionOneFilesReadWithDefaults) {
  Trace t = v2_trace();
  t.meta = TraceMeta{};
  t.meta.world = 4;
  t.meta.steps = 3;
  t.ranks[0].peaks.reset();
  t.ranks[1].oom.reset();
  for (Span& s : t.spans) {
    s.phase = Phase::Forward;
    s.issue_ns = kNoTime;
    s.wait_ns = 0;
    s.wait_stream.reset();
  }
  t.comms[0].micro_step = 0;
  t.comms[0].reduce_op = ReduceOp::None;
  t.comms[0].root = kNone;
  t.counters.clear();
  std::string v1 = edit(text_of(t), "\"version\": 2", "\"version\": 1");
  v1 = edit(v1,
            ",\n    \"schedule_digest\": \"\", \"clock\": \"simulated\", \"host\": \"\", "
            "\"driver_version\": \"\", \"cuda_version\": \"\", \"nccl_version\": \"\", "
            "\"warmup_steps\": 0, \"timed_steps\": 1",
            "");
  v1 = edit(v1, ",\n  \"counters\": []", "");
  auto r = read_trace_json(v1, "v1.json");
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  EXPECT_EQ(r->meta.clock, "simulated");
  EXPECT_EQ(r->meta.timed_steps, 3u);  // every step
  EXPECT_EQ(r->spans[0].phase, Phase::Forward);
  EXPECT_EQ(r->spans[0].issue_ns, kNoTime);
  // A version-1 file may not use the version-2 keys.
  EXPECT_EQ(errors_of(edit(v1, "\"cat\": \"forward\"", "\"cat\": \"forward\", \"wait_ns\": 4")),
            "trace.json: /spans/0/wait_ns: expected no version-2 key in a version-1 trace, got "
            "\"wait_ns\"\n");
  EXPECT_EQ(errors_of(edit(v1, "\"grad_accum\": 1", "\"grad_accum\": 1, \"clock\": \"simulated\"")),
            "trace.json: /meta/clock: expected no version-2 key in a version-1 trace, got "
            "\"clock\"\n");
}

TEST(TraceV2, GarbageInEachNewFieldIsOneLine) {
  const std::string good = text_of(v2_trace());
  const auto one = [&](const std::string& from, const std::string& to, const std::string& want) {
    SCOPED_TRACE(to);
    EXPECT_EQ(errors_of(edit(good, from, to)), "trace.json: " + want + "\n");
  };
  one("\"clock\": \"cuda_events\"", "\"clock\": \"wall\"",
      "/meta/clock: expected one of \"simulated\", \"host_steady\", \"cuda_events\", got \"wall\"");
  one("\"fnv1a64:0123456789abcdef\"", "\"md5:abc\"",
      "/meta/schedule_digest: expected \"fnv1a64-v2:\" (or \"fnv1a64:\") and 16 lowercase hex "
      "digits, got \"md5:abc\"");
  one("\"timed_steps\": 2", "\"timed_steps\": 0",
      "/meta/timed_steps: expected an integer 1..4294967295, got 0");
  one("\"warmup_steps\": 3", "\"warmup_steps\": \"3\"",
      "/meta/warmup_steps: expected an integer 0..4294967295, got \"3\"");
  one("\"nccl_version\": \"2.21.5\"", "\"nccl_version\": 2.21",
      "/meta/nccl_version: expected a string, got 2.21");
  one("\"issue_ns\": 0", "\"issue_ns\": -5", "/spans/0/issue_ns: expected an integer >= 0, got -5");
  one("\"phase\": \"init\"", "\"phase\": \"warmup\"",
      "/spans/0/phase: expected one of \"init\", \"forward\", \"backward\", \"boundary_reduce\", "
      "\"epilogue\", \"step\", \"post_step\", got \"warmup\"");
  one("\"wait_stream\": \"gather\"", "\"wait_stream\": \"nvlink\"",
      "/spans/1/wait_stream: expected one of \"compute\", \"reduce\", \"gather\", \"h2d\", "
      "\"d2h\", \"host\", got \"nvlink\"");
  one("\"wait_ns\": 2", "\"wait_ns\": 0",
      "/spans/1/wait_stream: expected \"wait_stream\" only with \"wait_ns\" > 0, got no wait");
  one("\"reduce_op\": \"sum\"", "\"reduce_op\": \"avg\"",
      "/comms/0/reduce_op: expected one of \"sum\", \"max\", got \"avg\"");
  one("\"root\": 3", "\"root\": 9", "/comms/0/root: expected a rank 0..3 (meta/world 4), got 9");
  one("\"micro_step\": 1", "\"micro_step\": -1",
      "/comms/0/micro_step: expected an integer 0..4294967295, got -1");
  one("{\"rank\": 1, \"name\": \"pool", "{\"rank\": 7, \"name\": \"pool",
      "/counters/1/rank: expected a traced rank (0, 1), got 7");
  one("\"pool.reserved_bytes\"", "\"Pool Bytes\"",
      "/counters/1/name: expected a name of [a-z0-9_.], got \"Pool Bytes\"");
  one("{\"rank\": 1, \"name\": \"pool.reserved_bytes\"", "{\"rank\": 0, \"name\": \"host_bytes\"",
      "/counters/1/name: expected one counter \"host_bytes\" per rank, got a second one");
  one("[[0, 4], [8, 12]]", "[[9, 4], [8, 12]]",
      "/counters/0/samples/1: expected counter samples in time order, got t = 8 ns after 9 ns");
  one("[[0, 4], [8, 12]]", "[[0, 4], [8]]",
      "/counters/0/samples/1: expected [t_ns, value] with integers t_ns >= 0 and value in int64, "
      "got [8]");
  one("\"bytes\": 100, \"t_ns\": 7, \"by_category\": [100,",
      "\"bytes\": 100, \"t_ns\": 7, \"by_category\": [90,",
      "/ranks/0/peaks/device/by_category: expected the categories to add up to bytes 100, got 90");
  one("\"host_bytes\": 12}", "\"host_bytes\": 12, \"max\": 1}",
      "/ranks/0/peaks/max: unknown key \"max\"");
  one("\"live_bytes\": 150", "\"live_bytes\": 100",
      "/ranks/1/oom/live_bytes: expected live bytes above the capacity 140, got 100");
  one("\"category\": \"comm_bucket\"", "\"category\": \"bucket\"",
      "/ranks/1/oom/category: expected one of \"param16\", \"param32\", \"grad\", "
      "\"optim_state\", \"activation\", \"comm_bucket\", \"gathered_param\", \"temp\", got "
      "\"bucket\"");
}

TEST(TraceV2, StreamedElementsStillRefuseDuplicateKeys) {
  const std::string text =
      edit(text_of(v2_trace()), "{\"op\": 4, \"rank\": 1", "{\"op\": 4, \"rank\": 1, \"op\": 5");
  EXPECT_EQ(errors_of(text),
            "trace.json: /spans/1/op: duplicate key: a JSON object names it twice (keep one; "
            "DeepSpeed refuses duplicate keys too)\n");
}

}  // namespace
}  // namespace zerosim
