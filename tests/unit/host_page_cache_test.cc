// Data mode's page-reuse cache (host_storage.h BlockCache, up to 1 GiB a rank) lives under
// --data-memory-cap (DataOptions::memory_cap): the ranks share what the buffers' peaks leave under
// the cap, so buffers and caches together never exceed it. Before, the cap counted the buffers only
// and every rank kept up to 1 GiB of released pages on top.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>

#include "data_check.h"
#include "data_reference.h"
#include "host_data.h"
#include "zerosim/host_backend.h"
#include "zerosim/schedule_graph.h"
#include "zerosim/schedule_io.h"

namespace zerosim::exec {
namespace {

constexpr std::size_t kGiB = std::size_t{1} << 30;

TEST(HostPageCache, LimitIsAnEqualShareOfWhatThePeaksLeaveUnderTheCap) {
  const Schedule s = plain_dp_schedule({{1000, 37, 256}, 4, 1, DType::Float16});
  const auto peaks = static_cast<Bytes>(data_buffer_peaks(s));
  ASSERT_GT(peaks, 0u);
  EXPECT_EQ(page_cache_limit(s, 0), kGiB);                      // no cap
  EXPECT_EQ(page_cache_limit(s, Bytes{1} << 40), kGiB);         // room to spare: the default
  EXPECT_EQ(page_cache_limit(s, peaks + 4 * 1000), 1000u);      // 4 ranks share 4000 bytes
  EXPECT_EQ(page_cache_limit(s, peaks + 4 * 1000 + 3), 1000u);  // rounded down
  EXPECT_EQ(page_cache_limit(s, peaks), 0u);                    // the buffers fill the cap
  EXPECT_EQ(page_cache_limit(s, peaks / 2), 0u);                // (refused by data_mode_gap)
}

TEST(HostPageCache, ADataPathKeepsNoMoreReleasedBytesThanItsLimit) {
  const Schedule s = plain_dp_schedule({{8}, 1, 1, DType::Float16});
  DataOptions o;
  RingRegistry rings{std::chrono::milliseconds(2000)};
  const Bytes two_mib = Bytes{2} << 20;  // a mapping (from 1 MiB), which the cache keeps whole
  for (std::size_t limit : {std::size_t{0}, std::size_t{1} << 20, std::size_t{4} << 20}) {
    SCOPED_TRACE(limit);
    DataPath dp(s, o, 0, rings, limit);
    ASSERT_FALSE(dp.allocate(0, two_mib, true, false));
    ASSERT_FALSE(dp.release(0));
    EXPECT_LE(dp.cached_bytes(), limit);
    EXPECT_EQ(dp.cached_bytes(), limit >= two_mib ? two_mib : 0u);
    // The cached pages serve the next allocation of that size, zero-filled when asked.
    ASSERT_FALSE(dp.allocate(0, two_mib, true, false));
    EXPECT_EQ(dp.cached_bytes(), 0u);
    EXPECT_EQ(dp.bytes(0)[two_mib - 1], 0);
  }
}

// A cap the buffers fill exactly leaves no cache and changes no result: the same weights, bit for
// bit, as an uncapped run.
TEST(HostPageCache, ACapWithNoRoomForCachesRunsAndGivesTheSameWeights) {
  const Schedule s = plain_dp_schedule({{1000, 37, 256, 3, 513}, 4, 2, DType::Float16});
  auto g = lower_schedule(s);
  ASSERT_TRUE(g.ok());
  HostOptions o;
  o.data = true;
  o.stall_timeout = std::chrono::milliseconds(5000);
  o.data_options.keep_buffers = true;
  auto free_run = run_host(s, g.value(), o);
  ASSERT_TRUE(free_run.ok()) << free_run.diagnostics().to_string();
  o.data_options.memory_cap = static_cast<Bytes>(data_buffer_peaks(s));
  ASSERT_EQ(page_cache_limit(s, o.data_options.memory_cap), 0u);
  auto capped = run_host(s, g.value(), o);
  ASSERT_TRUE(capped.ok()) << capped.diagnostics().to_string();
  for (std::size_t r = 0; r < capped->ranks.size(); ++r)
    EXPECT_EQ(capped->ranks[r].buffers[0], free_run->ranks[r].buffers[0]) << "rank " << r;
}

}  // namespace
}  // namespace zerosim::exec
