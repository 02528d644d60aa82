// MemoryLedger: live bytes, peaks with their category breakdown, role-dependent buffers, the steady
// window, OOM as a result, and misuse reported as diagnostics. Hand-computed cases first, then a
// seeded random comparison of analyze() (interval maxima + range-max table) against replaying every
// role's curve event by event.
#include "zerosim/memory_ledger.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace zerosim {
namespace {

constexpr auto kDev = MemoryPool::Device;
std::size_t cat(BufferCategory c) { return static_cast<std::size_t>(c); }

TEST(MemoryLedger, CommonBuffersPeakAndBreakdown) {
  MemoryLedger l;
  const auto a = l.add_buffer("A", BufferCategory::Param16, kDev, 100);
  const auto b = l.add_buffer("B", BufferCategory::Grad, kDev, 50);
  const auto c = l.add_buffer("C", BufferCategory::Temp, kDev, 30);
  EXPECT_FALSE(l.allocate(a, 0));
  EXPECT_FALSE(l.allocate(b, 10));
  EXPECT_FALSE(l.release(a, 20));
  EXPECT_FALSE(l.allocate(c, 20));
  EXPECT_FALSE(l.release(b, 30));
  EXPECT_EQ(l.live_bytes(0, 5), 100u);
  EXPECT_EQ(l.live_bytes(0, 10), 150u);
  EXPECT_EQ(l.live_bytes(0, 20), 80u);
  EXPECT_EQ(l.live_bytes(0, 30), 30u);
  EXPECT_EQ(l.live_bytes(0, 30, MemoryPool::Host), 0u);
  const auto m = l.analyze(0);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].device.bytes, 150u);
  EXPECT_EQ(m[0].device.t, 10);
  EXPECT_EQ(m[0].device.event, 1u);
  EXPECT_EQ(m[0].device.by_category[cat(BufferCategory::Param16)], 100u);
  EXPECT_EQ(m[0].device.by_category[cat(BufferCategory::Grad)], 50u);
  EXPECT_EQ(m[0].device.by_category[cat(BufferCategory::Temp)], 0u);
  EXPECT_FALSE(m[0].oom);
  ASSERT_EQ(l.allocations().size(), 3u);
  EXPECT_EQ(l.allocations()[0].t_free, 20);
  EXPECT_EQ(l.allocations()[2].t_alloc, 20);
  EXPECT_EQ(l.allocations()[2].t_free, kNeverFreed);
  EXPECT_TRUE(l.is_live(c));
  EXPECT_FALSE(l.is_live(a));
}

// Three roles; R is 10 / 0 / 500 bytes. Role curves: 0: 100,110,310,300,550; 1: 100,100,300,300,
// 550; 2: 100,600,800,300,550.
MemoryLedger three_roles() {
  MemoryLedger l(3);
  const auto x = l.add_buffer("X", BufferCategory::Param16, kDev, 100);
  const auto r = l.add_role_buffer("R", BufferCategory::Grad, kDev, {10, 0, 500}).value();
  const auto y = l.add_buffer("Y", BufferCategory::Activation, kDev, 200);
  const auto z = l.add_buffer("Z", BufferCategory::CommBucket, kDev, 250);
  EXPECT_FALSE(l.allocate(x, 0));
  EXPECT_FALSE(l.allocate(r, 5));
  EXPECT_FALSE(l.allocate(y, 6));
  EXPECT_FALSE(l.release(r, 7));
  EXPECT_FALSE(l.allocate(z, 8));
  return l;
}

TEST(MemoryLedger, RoleBuffersGivePerRolePeaks) {
  const MemoryLedger l = three_roles();
  EXPECT_EQ(l.buffers()[1].bytes, 500u);  // the largest role's size
  EXPECT_EQ(l.buffers()[1].role_bytes, (std::vector<RoleBytes>{{0, 10}, {2, 500}}));
  const auto m = l.analyze(0);
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].device.bytes, 550u);
  EXPECT_EQ(m[0].device.t, 8);
  EXPECT_EQ(m[1].device.bytes, 550u);
  EXPECT_EQ(m[2].device.bytes, 800u);
  EXPECT_EQ(m[2].device.t, 6);
  EXPECT_EQ(m[2].device.event, 2u);
  EXPECT_EQ(m[2].device.by_category[cat(BufferCategory::Param16)], 100u);
  EXPECT_EQ(m[2].device.by_category[cat(BufferCategory::Grad)], 500u);
  EXPECT_EQ(m[2].device.by_category[cat(BufferCategory::Activation)], 200u);
  EXPECT_EQ(m[0].device.by_category[cat(BufferCategory::Grad)], 0u);  // R freed before Z
  EXPECT_EQ(m[0].device.by_category[cat(BufferCategory::CommBucket)], 250u);
  EXPECT_EQ(l.live_bytes(2, 5), 600u);
  EXPECT_EQ(l.live_bytes(0, 5), 110u);
  const auto alloc2 = l.allocations_for_role(2);
  EXPECT_EQ(alloc2[1].bytes, 500u);
  EXPECT_EQ(alloc2[1].role, 2u);
  EXPECT_EQ(l.allocations_for_role(1)[1].bytes, 0u);
}

TEST(MemoryLedger, SteadyWindowStartsWithWhatIsLive) {
  const MemoryLedger l = three_roles();
  EXPECT_EQ(l.analyze(0, 5)[2].steady.bytes, 800u);
  const auto at6 = l.analyze(0, 6);  // live at 6 (after the allocation at 6): 800
  EXPECT_EQ(at6[2].steady.bytes, 800u);
  EXPECT_EQ(at6[2].steady.t, 6);
  const auto at7 = l.analyze(0, 7);  // live at 7: 300 (R released at 7); then 550
  EXPECT_EQ(at7[2].steady.bytes, 550u);
  EXPECT_EQ(at7[2].steady.t, 8);
  EXPECT_EQ(at7[0].steady.bytes, 550u);
  EXPECT_EQ(at7[0].steady.by_category[cat(BufferCategory::Grad)], 0u);
  const auto at8 = l.analyze(0, 8);
  EXPECT_EQ(at8[2].steady.bytes, 550u);
  EXPECT_EQ(at8[2].steady.t, 8);
  EXPECT_EQ(at8[2].device.bytes, 800u);  // the whole-run peak is unchanged
  EXPECT_EQ(at8[0].steady.bytes, 550u);
}

TEST(MemoryLedger, OomIsReportedPerRoleNotThrown) {
  const MemoryLedger l = three_roles();
  const auto m = l.analyze(500);
  ASSERT_TRUE(m[2].oom);
  EXPECT_EQ(m[2].oom->t, 5);
  EXPECT_EQ(m[2].oom->buffer_name, "R");
  EXPECT_EQ(m[2].oom->category, BufferCategory::Grad);
  EXPECT_EQ(m[2].oom->bytes, 500u);
  EXPECT_EQ(m[2].oom->live_bytes, 600u);
  EXPECT_EQ(m[2].oom->capacity, 500u);
  ASSERT_TRUE(m[0].oom);
  EXPECT_EQ(m[0].oom->t, 8);
  EXPECT_EQ(m[0].oom->buffer_name, "Z");
  EXPECT_EQ(m[0].oom->live_bytes, 550u);
  ASSERT_TRUE(m[1].oom);
  EXPECT_EQ(m[1].oom->buffer_name, "Z");
  EXPECT_FALSE(l.analyze(800)[2].oom);  // exactly at capacity fits
  EXPECT_FALSE(l.analyze(0)[2].oom);    // 0: no limit
}

TEST(MemoryLedger, HostAndPinnedAreNotDeviceMemory) {
  MemoryLedger l;
  const auto h = l.add_buffer("host", BufferCategory::OptimState, MemoryPool::Host, 1000);
  const auto p = l.add_buffer("pinned", BufferCategory::Param32, MemoryPool::Pinned, 300);
  const auto d = l.add_buffer("dev", BufferCategory::Param16, kDev, 40);
  EXPECT_FALSE(l.allocate(h, 0));
  EXPECT_FALSE(l.allocate(p, 1));
  EXPECT_FALSE(l.allocate(d, 2));
  const auto m = l.analyze(100);
  EXPECT_EQ(m[0].device.bytes, 40u);
  EXPECT_EQ(m[0].host.bytes, 1300u);
  EXPECT_FALSE(m[0].oom);
  EXPECT_EQ(l.live_bytes(0, 5, MemoryPool::Pinned), 300u);
}

TEST(MemoryLedger, MisuseIsADiagnosticAndChangesNothing) {
  MemoryLedger l(2);
  const auto a = l.add_buffer("A", BufferCategory::Temp, kDev, 8);
  auto d = l.release(a, 0);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->to_string(),
            "memory ledger: buffer \"A\" released at 0 ns but it is not live (double free, or "
            "never allocated)");
  EXPECT_FALSE(l.allocate(a, 5));
  d = l.allocate(a, 6);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->message, "buffer \"A\" allocated at 6 ns while live since 5 ns");
  d = l.release(a, 4);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->message,
            "expected events in time order, got release of \"A\" at 4 ns after an event at 5 ns");
  d = l.allocate(7, 9);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->message, "expected a buffer id below 1 to allocate, got 7");
  EXPECT_EQ(l.event_count(), 1u);
  EXPECT_TRUE(l.is_live(a));
  const auto bad = l.add_role_buffer("R", BufferCategory::Grad, kDev, {1, 2, 3});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.diagnostics().items()[0].message,
            "expected 2 sizes for buffer \"R\" (one per role), got 3");
  const auto unordered =
      l.add_sparse_role_buffer("S", BufferCategory::Grad, kDev, {{1, 4}, {0, 4}});
  ASSERT_FALSE(unordered.ok());
  EXPECT_EQ(unordered.diagnostics().items()[0].message,
            "expected ascending roles below 2 for buffer \"S\", got role 0 at position 1");
}

// Replays role k's device curve event by event: the reference the fast analysis must match.
struct Reference {
  MemoryPeak peak;
  MemoryPeak steady;
  std::optional<std::pair<std::size_t, Bytes>> oom;  // event, live bytes
};

Reference replay(const MemoryLedger& l, std::uint32_t k, SimTime from, Bytes cap) {
  Reference ref;
  Bytes live = 0;
  CategoryBytes cats{};
  bool steady_any = false;
  const auto& ev = l.events();
  for (std::size_t i = 0; i < ev.size(); ++i) {
    const LedgerBuffer& b = l.buffers()[ev[i].buffer];
    if (b.pool == kDev) {
      const Bytes n = b.bytes_for(k);
      live = ev[i].alloc ? live + n : live - n;
      cats[cat(b.category)] = ev[i].alloc ? cats[cat(b.category)] + n : cats[cat(b.category)] - n;
    }
    if (i == 0 || live > ref.peak.bytes) ref.peak = {live, ev[i].t, i, cats};
    const bool in_window = i + 1 == ev.size() || ev[i + 1].t > from;
    if (in_window && (!steady_any || live > ref.steady.bytes)) {
      ref.steady = {live, ev[i].t, i, cats};
      steady_any = true;
    }
    if (!ref.oom && cap != 0 && live > cap) ref.oom = std::make_pair(i, live);
  }
  return ref;
}

TEST(MemoryLedger, AnalysisMatchesReplayOnRandomHistories) {
  std::mt19937_64 rng(20240607);
  for (int trial = 0; trial < 40; ++trial) {
    const std::uint32_t roles = 1 + static_cast<std::uint32_t>(rng() % 9);
    MemoryLedger l(roles);
    const int n_buf = 3 + static_cast<int>(rng() % 12);
    for (int b = 0; b < n_buf; ++b) {
      const auto c = kAllCategories[rng() % kCategoryCount];
      const auto pool = rng() % 5 == 0 ? MemoryPool::Pinned : kDev;
      if (rng() % 3 == 0) {
        std::vector<Bytes> sizes(roles);
        for (Bytes& s : sizes) s = rng() % 3 == 0 ? 0 : rng() % 1000;
        ASSERT_TRUE(l.add_role_buffer("r" + std::to_string(b), c, pool, sizes).ok());
      } else {
        l.add_buffer("c" + std::to_string(b), c, pool, rng() % 1000);
      }
    }
    SimTime t = 0;
    for (int e = 0; e < 60; ++e) {
      t += static_cast<SimTime>(rng() % 3);
      const auto b = static_cast<std::uint32_t>(rng() % static_cast<std::uint64_t>(n_buf));
      ASSERT_FALSE(l.is_live(b) ? l.release(b, t) : l.allocate(b, t));
    }
    const SimTime from = static_cast<SimTime>(rng() % static_cast<std::uint64_t>(t + 2));
    const Bytes cap = 500 + rng() % 3000;
    const auto m = l.analyze(cap, from);
    for (std::uint32_t k = 0; k < roles; ++k) {
      const Reference ref = replay(l, k, from, cap);
      SCOPED_TRACE("trial " + std::to_string(trial) + " role " + std::to_string(k));
      EXPECT_EQ(m[k].device.bytes, ref.peak.bytes);
      EXPECT_EQ(m[k].device.event, ref.peak.event);
      EXPECT_EQ(m[k].device.by_category, ref.peak.by_category);
      EXPECT_EQ(m[k].steady.bytes, ref.steady.bytes);
      EXPECT_EQ(m[k].steady.event, ref.steady.event);
      EXPECT_EQ(m[k].steady.by_category, ref.steady.by_category);
      ASSERT_EQ(m[k].oom.has_value(), ref.oom.has_value());
      if (!ref.oom) continue;
      EXPECT_EQ(m[k].oom->t, l.events()[ref.oom->first].t);
      EXPECT_EQ(m[k].oom->buffer, l.events()[ref.oom->first].buffer);
      EXPECT_EQ(m[k].oom->live_bytes, ref.oom->second);
    }
  }
}

}  // namespace
}  // namespace zerosim
