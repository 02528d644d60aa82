// compare_sequences (trace_compare.h) at an edge a hostile-input pass found: a world of billions
// of ranks.
#include "zerosim/trace_compare.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>


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

}  // namespace
}  // namespace zerosim
