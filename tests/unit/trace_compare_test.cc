// compare_sequences and compare_traces (trace_compare.h) at the edges a hostile-input pass found:
// a world of billions of ranks, and traffic sums beyond 2^64.
#include "zerosim/trace_compare.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "zerosim/saturating.h"

namespace zerosim {
namespace {

LoggedCollective collective(std::uint32_t rank, Elements numel) {
  LoggedCollective c;
  c.rank = rank;
  c.kind = CollectiveKind::AllReduce;
  c.numel = numel;
  c.out_numel = numel;
  c.group_size = 2;
  return c;
}

// The ranks no entry names share one sequence and are compared once: expanded per rank, a world
// of 4294967294 ranks allocated 100 GB (bad_alloc) before comparing anything.
TEST(TraceCompare, AWorldOfBillionsOfRanksIsComparedWithoutACopyPerRank) {
  constexpr std::uint32_t kWorld = 0xFFFFFFFEu;
  const std::vector<LoggedCollective> every = {collective(kAllRanks, 8), collective(kAllRanks, 16)};
  SequenceCheck same = compare_sequences(every, every, kWorld);
  EXPECT_TRUE(same.equal);
  EXPECT_EQ(same.ranks, kWorld);
  EXPECT_EQ(same.collectives, 2ull * kWorld);

  // A measured log of rank 5 alone: rank 0, the lowest rank it does not name, has the
  // prediction's collectives and none measured.
  const std::vector<LoggedCollective> rank5 = {collective(5, 8), collective(5, 16)};
  SequenceCheck c = compare_sequences(every, rank5, kWorld);
  EXPECT_FALSE(c.equal);
  EXPECT_EQ(c.rank, 0u);
  EXPECT_EQ(c.difference, "length: predicted 2 collectives, measured 0");
  EXPECT_EQ(c.ranks, 1u);  // compared up to the difference, as rank by rank
  EXPECT_EQ(c.collectives, 0u);

  // Both sides name rank 3 and differ there only; every unnamed rank agrees.
  std::vector<LoggedCollective> p = every, m = every;
  p.push_back(collective(3, 32));
  m.push_back(collective(3, 64));
  c = compare_sequences(p, m, kWorld);
  EXPECT_FALSE(c.equal);
  EXPECT_EQ(c.rank, 3u);
  EXPECT_EQ(c.index, 2u);
  EXPECT_EQ(c.difference, "numel: predicted 32, measured 64");
  EXPECT_EQ(c.ranks, 4u);        // 0..3
  EXPECT_EQ(c.collectives, 9u);  // 2 + 2 + 2 + 3
}

// One rank's trace with two all-reduce records of these S bytes.
Trace two_all_reduces(Bytes a, Bytes b) {
  Trace t;
  t.meta.world = 1;
  t.ranks.emplace_back();
  for (const Bytes bytes : {a, b}) {
    CommRecord& c = t.comms.emplace_back();
    c.rank = 0;
    c.kind = CollectiveKind::AllReduce;
    c.bytes = bytes;
    c.bytes_sent = bytes;
  }
  return t;
}

// Two measured records of 2^63 more bytes than predicted wrapped the sum back to the prediction's
// and check said PASS; the sums saturate, and an overflowed sum is never within tolerance.
TEST(TraceCompare, TrafficSumsBeyond2To64AreAnOverflowThatFails) {
  constexpr Bytes kHalf = Bytes{1} << 63;
  const Trace p = two_all_reduces(1000, 2000), m = two_all_reduces(kHalf + 1000, kHalf + 2000);
  auto r = compare_traces(p, "p.json", m, "m.json", Tolerances{});
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  ASSERT_EQ(r->bytes.size(), 1u);
  EXPECT_EQ(r->bytes[0].predicted_s, 3000u);
  EXPECT_EQ(r->bytes[0].measured_s, kBytesOverflow);
  EXPECT_EQ(r->bytes[0].measured_sent, kBytesOverflow);
  EXPECT_FALSE(r->bytes[0].within);
  EXPECT_FALSE(r->passed());
  std::ostringstream table, json;
  write_comparison_table(r.value(), table);
  write_comparison_json(r.value(), json);
  EXPECT_NE(table.str().find("overflow  DRIFT"), std::string::npos) << table.str();
  EXPECT_NE(json.str().find("\"measured_s\": null"), std::string::npos) << json.str();
  // Both sides overflowing agree on nothing either.
  auto both = compare_traces(m, "m.json", m, "m.json", Tolerances{});
  ASSERT_TRUE(both.ok());
  EXPECT_FALSE(both->passed());
}

}  // namespace
}  // namespace zerosim
