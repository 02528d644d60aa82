// HostRing's reduce_scatter and reduce read their input in place (no working copy of it): the
// results keep the ring's arithmetic order bit for bit (the fold below, rounded to fp16 after every
// hop as NCCL's half kernels do), whether the output is separate, the input's own block (in place,
// as torch allows), or overlaps the input elsewhere; a separate input is never written.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "host_ring.h"
#include "numerics.h"

namespace zerosim::exec {
namespace {

using Half = std::uint16_t;

std::vector<Status> on_ranks(std::uint32_t n, const std::function<Status(std::uint32_t)>& body) {
  std::vector<Status> st(n);
  std::vector<std::thread> t;
  for (std::uint32_t r = 0; r < n; ++r) t.emplace_back([&, r] { st[r] = body(r); });
  for (auto& x : t) x.join();
  return st;
}

// Values whose fp16 sums round (the order shows in the bits).
Half input(std::uint32_t rank, Elements i) {
  return float_to_fp16(0.1f * static_cast<float>(rank + 1) + 1e-3f * static_cast<float>(i % 101));
}

// The ring's sum of element i: the chain starts at rank `first` and each next rank adds its own
// value to what arrived, op(mine, received), rounded to fp16 per hop; n - 1 hops.
Half ring_fold(std::uint32_t n, std::uint32_t first, Elements i) {
  Half acc = input(first, i);
  for (std::uint32_t j = 1; j < n; ++j)
    acc = float_to_fp16(fp16_to_float(input((first + j) % n, i)) + fp16_to_float(acc));
  return acc;
}

enum class Out { Separate, OwnBlock, Overlapping };

TEST(HostRingInPlace, ReduceScatterKeepsTheRingOrderWhereverTheOutputIs) {
  for (std::uint32_t n : {2u, 3u, 4u}) {
    for (Out where : {Out::Separate, Out::OwnBlock, Out::Overlapping}) {
      SCOPED_TRACE(std::to_string(n) + " ranks, output " + std::to_string(static_cast<int>(where)));
      const Elements m = 777;  // per rank: several 256-byte pieces, a ragged last one
      HostRing ring(n, 256, 2);
      // Each rank's input has room after it, so an overlapping output stays inside the vector.
      std::vector<std::vector<Half>> in(n, std::vector<Half>(m * n + m)), sep(n);
      for (std::uint32_t r = 0; r < n; ++r)
        for (Elements i = 0; i < m * n; ++i) in[r][i] = input(r, i);
      const std::vector<std::vector<Half>> original = in;
      std::vector<Half*> out(n);
      for (std::uint32_t r = 0; r < n; ++r) {
        sep[r].assign(m, 0);
        out[r] = where == Out::Separate   ? sep[r].data()
                 : where == Out::OwnBlock ? in[r].data() + r * m
                                          : in[r].data() + 3;  // straddles blocks 0 and 1
      }
      // Overlapping: the input is what it held before the call (the ring copies it first).
      for (const Status& s : on_ranks(n, [&](std::uint32_t r) {
             return ring.reduce_scatter(r, in[r].data(), out[r], m, DType::Float16, ReduceOp::Sum);
           })) {
        ASSERT_FALSE(s) << s->message;
      }
      for (std::uint32_t r = 0; r < n; ++r) {
        // Block r's chain starts at rank r + 1 (step 0 sends each rank's left neighbour's block).
        for (Elements i = 0; i < m; ++i) {
          ASSERT_EQ(out[r][i], ring_fold(n, (r + 1) % n, r * m + i)) << "rank " << r << " i " << i;
        }
        if (where == Out::Separate) {
          EXPECT_EQ(in[r], original[r]) << "rank " << r;
        }
      }
    }
  }
}

TEST(HostRingInPlace, ReduceKeepsTheChainOrderInPlaceAndNot) {
  for (std::uint32_t n : {2u, 3u, 5u}) {
    for (bool in_place : {false, true}) {
      for (std::uint32_t root : {0u, n - 1}) {
        SCOPED_TRACE(std::to_string(n) + " ranks, root " + std::to_string(root) +
                     (in_place ? ", in place" : ""));
        const Elements count = 1001;
        HostRing ring(n, 256, 2);
        std::vector<std::vector<Half>> buf(n, std::vector<Half>(count)),
            out(n, std::vector<Half>(count, 0));
        for (std::uint32_t r = 0; r < n; ++r)
          for (Elements i = 0; i < count; ++i) buf[r][i] = input(r, i);
        const std::vector<std::vector<Half>> original = buf;
        for (const Status& s : on_ranks(n, [&](std::uint32_t r) {
               Half* dst = r != root ? nullptr : in_place ? buf[r].data() : out[r].data();
               return ring.reduce(r, buf[r].data(), dst, count, DType::Float16, ReduceOp::Sum,
                                  root);
             })) {
          ASSERT_FALSE(s) << s->message;
        }
        const std::vector<Half>& result = in_place ? buf[root] : out[root];
        for (Elements i = 0; i < count; ++i) {
          ASSERT_EQ(result[i], ring_fold(n, (root + 1) % n, i)) << i;  // starts right of the root
        }
        for (std::uint32_t r = 0; r < n; ++r) {
          if (r != root || !in_place) {
            EXPECT_EQ(buf[r], original[r]) << "rank " << r;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace zerosim::exec
