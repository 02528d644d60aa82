// The host backend's data path (host_ring.h, numerics.h): ring collectives between threads give
// the reference results on every rank and count exactly the bytes ring_bytes() predicts; a rank
// that never arrives ends the others' wait with a stall report; fp16/bf16 rounding is bit-exact.
#include "host_ring.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <thread>
#include <vector>

#include "numerics.h"

namespace zerosim::exec {
namespace {

// Runs body(rank) on n threads and collects each rank's status.
std::vector<Status> on_ranks(std::uint32_t n, const std::function<Status(std::uint32_t)>& body) {
  std::vector<Status> st(n);
  std::vector<std::thread> t;
  for (std::uint32_t r = 0; r < n; ++r) t.emplace_back([&, r] { st[r] = body(r); });
  for (auto& x : t) x.join();
  return st;
}

void expect_ok(const std::vector<Status>& st) {
  for (std::size_t r = 0; r < st.size(); ++r) EXPECT_FALSE(st[r]) << r << ": " << st[r]->message;
}

// Integer-valued floats: every partial sum is exact, so any summation order gives the same bits.
float value(std::uint32_t rank, Elements i) { return static_cast<float>((rank + 1) * 3 + i % 97); }
// Sums below 256 for 4 ranks: exact in bfloat16's 8-bit significand too.
float small(std::uint32_t rank, Elements i) { return static_cast<float>(rank + i % 13); }

TEST(HostRing, AllReduceMatchesTheSumAndCountsTheRingPlan) {
  for (std::uint32_t n : {2u, 3u, 4u, 8u}) {
    for (Elements count : {Elements{1}, Elements{7}, Elements{10007}}) {
      HostRing ring(n, 256, 2);  // 256-byte slots: many pieces, bounded channels
      std::vector<std::vector<float>> data(n, std::vector<float>(count));
      for (std::uint32_t r = 0; r < n; ++r)
        for (Elements i = 0; i < count; ++i) data[r][i] = value(r, i);
      expect_ok(on_ranks(n, [&](std::uint32_t r) {
        return ring.all_reduce(r, data[r].data(), count, DType::Float32, ReduceOp::Sum);
      }));
      for (std::uint32_t r = 0; r < n; ++r) {
        for (Elements i = 0; i < count; ++i) {
          float expect = 0;
          for (std::uint32_t q = 0; q < n; ++q) expect += value(q, i);
          ASSERT_EQ(data[r][i], expect) << "n " << n << " count " << count << " rank " << r;
        }
        const RingBytes plan = ring_bytes(CollectiveKind::AllReduce, count, count, 4, n, r, 0);
        EXPECT_EQ(ring.bytes(r).sent, plan.sent) << n << " " << count << " " << r;
        EXPECT_EQ(ring.bytes(r).received, plan.received) << n << " " << count << " " << r;
      }
    }
  }
}

TEST(HostRing, SixteenBitSumsAndMaxAreExactOnRepresentableValues) {
  const std::uint32_t n = 4;
  const Elements count = 513;
  HostRing ring(n, 128, 3);
  std::vector<std::vector<std::uint16_t>> bf(n, std::vector<std::uint16_t>(count)),
      half(n, std::vector<std::uint16_t>(count)), mx(n, std::vector<std::uint16_t>(count));
  for (std::uint32_t r = 0; r < n; ++r)
    for (Elements i = 0; i < count; ++i) {
      bf[r][i] = float_to_bf16(small(r, i));
      half[r][i] = float_to_fp16(value(r, i));
      mx[r][i] = float_to_fp16(static_cast<float>((i * 7 + r * 13) % 101) - 50.0f);
    }
  expect_ok(on_ranks(n, [&](std::uint32_t r) -> Status {
    if (Status e = ring.all_reduce(r, bf[r].data(), count, DType::BFloat16, ReduceOp::Sum))
      return e;
    if (Status e = ring.all_reduce(r, half[r].data(), count, DType::Float16, ReduceOp::Sum))
      return e;
    return ring.all_reduce(r, mx[r].data(), count, DType::Float16, ReduceOp::Max);
  }));
  for (Elements i = 0; i < count; ++i) {
    float sum = 0, bsum = 0, best = -1e9f;
    for (std::uint32_t q = 0; q < n; ++q) {
      sum += value(q, i);
      bsum += small(q, i);
      best = std::max(best, static_cast<float>((i * 7 + q * 13) % 101) - 50.0f);
    }
    for (std::uint32_t r = 0; r < n; ++r) {
      EXPECT_EQ(bf16_to_float(bf[r][i]), bsum) << i;  // integers below 256: exact in bf16
      EXPECT_EQ(fp16_to_float(half[r][i]), sum) << i;
      EXPECT_EQ(fp16_to_float(mx[r][i]), best) << i;
    }
  }
}

TEST(HostRing, ScatterGatherBroadcastReduce) {
  for (std::uint32_t n : {2u, 3u, 5u}) {
    const Elements m = 301;  // elements per rank block
    HostRing ring(n, 512, 2);
    std::vector<std::vector<float>> in(n, std::vector<float>(m * n)), out(n, std::vector<float>(m)),
        gathered(n, std::vector<float>(m * n)), bcast(n, std::vector<float>(m)),
        red_in(n, std::vector<float>(m)), red_out(n, std::vector<float>(m, -1));
    for (std::uint32_t r = 0; r < n; ++r) {
      for (Elements i = 0; i < m * n; ++i) in[r][i] = value(r, i);
      for (Elements i = 0; i < m; ++i) {
        bcast[r][i] = r == n - 1 ? value(r, i) : 0;
        red_in[r][i] = value(r, i + 5);
      }
    }
    std::vector<RingBytes> before(n);
    expect_ok(on_ranks(n, [&](std::uint32_t r) -> Status {
      if (Status e =
              ring.reduce_scatter(r, in[r].data(), out[r].data(), m, DType::Float32, ReduceOp::Sum))
        return e;
      if (Status e = ring.all_gather(r, out[r].data(), gathered[r].data(), m, DType::Float32))
        return e;
      if (Status e = ring.broadcast(r, bcast[r].data(), m, DType::Float32, n - 1)) return e;
      return ring.reduce(r, red_in[r].data(), red_out[r].data(), m, DType::Float32, ReduceOp::Sum,
                         1);
    }));
    for (std::uint32_t r = 0; r < n; ++r) {
      for (Elements i = 0; i < m; ++i) {
        float s = 0, rs = 0;
        for (std::uint32_t q = 0; q < n; ++q) {
          s += value(q, r * m + i);
          rs += value(q, i + 5);
        }
        ASSERT_EQ(out[r][i], s) << n << " rank " << r << " i " << i;
        ASSERT_EQ(bcast[r][i], value(n - 1, i));
        if (r == 1) {
          ASSERT_EQ(red_out[r][i], rs);
        }
      }
      for (Elements i = 0; i < m * n; ++i) {
        float s = 0;
        for (std::uint32_t q = 0; q < n; ++q) s += value(q, i);
        ASSERT_EQ(gathered[r][i], s) << n << " rank " << r << " i " << i;
      }
      // The four calls' bytes add up to the ring plan of each.
      Bytes sent = 0, received = 0;
      for (auto [kind, numel, out_numel, root] :
           {std::tuple{CollectiveKind::ReduceScatter, m * n, m, 0u},
            std::tuple{CollectiveKind::AllGather, m, m * n, 0u},
            std::tuple{CollectiveKind::Broadcast, m, m, n - 1},
            std::tuple{CollectiveKind::Reduce, m, m, 1u}}) {
        const RingBytes b = ring_bytes(kind, numel, out_numel, 4, n, r, root);
        sent += b.sent;
        received += b.received;
      }
      EXPECT_EQ(ring.bytes(r).sent, sent) << n << " " << r;
      EXPECT_EQ(ring.bytes(r).received, received) << n << " " << r;
    }
  }
}

TEST(HostRing, ARankThatNeverComesIsAStall) {
  HostRing ring(3, 256, 2, std::chrono::milliseconds(100));
  std::vector<float> a(1000, 1), b(1000, 1);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<Status> st(2);
  std::thread t1(
      [&] { st[0] = ring.all_reduce(0, a.data(), 1000, DType::Float32, ReduceOp::Sum); });
  st[1] = ring.all_reduce(1, b.data(), 1000, DType::Float32, ReduceOp::Sum);
  t1.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(1000));
  ASSERT_TRUE(st[0] || st[1]);
  const std::string msg = st[0] ? st[0]->message : st[1]->message;
  EXPECT_NE(msg.find("stalled"), std::string::npos) << msg;
}

TEST(Numerics, HalfAndBfloat16RoundToNearestEven) {
  EXPECT_EQ(float_to_fp16(1.0f), 0x3C00);
  EXPECT_EQ(float_to_fp16(-2.0f), 0xC000);
  EXPECT_EQ(float_to_fp16(65504.0f), 0x7BFF);                      // largest finite
  EXPECT_EQ(float_to_fp16(65519.0f), 0x7BFF);                      // below the halfway point
  EXPECT_EQ(float_to_fp16(65520.0f), 0x7C00);                      // halfway: to even = infinity
  EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -24)), 0x0001);         // smallest subnormal
  EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -25)), 0x0000);         // tie to even: zero
  EXPECT_EQ(float_to_fp16(std::ldexp(3.0f, -25)), 0x0002);         // tie to even: 2
  EXPECT_EQ(float_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);  // tie: stays even
  EXPECT_EQ(float_to_fp16(1.0f + std::ldexp(3.0f, -11)), 0x3C02);  // tie: rounds up to even
  EXPECT_EQ(float_to_fp16(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_TRUE(std::isnan(fp16_to_float(float_to_fp16(std::nanf("")))));
  // Every finite or infinite half survives the round trip through float bit for bit.
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const auto x = static_cast<std::uint16_t>(h);
    if ((x & 0x7C00) == 0x7C00 && (x & 0x3FF)) continue;  // NaN payloads
    ASSERT_EQ(float_to_fp16(fp16_to_float(x)), x) << std::hex << h;
  }
  EXPECT_EQ(float_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);  // tie: stays even
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(3.0f, -8)), 0x3F82);  // tie: up to even
  EXPECT_EQ(bf16_to_float(0x4049), 3.140625f);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::nanf("")))));
}

}  // namespace
}  // namespace zerosim::exec
