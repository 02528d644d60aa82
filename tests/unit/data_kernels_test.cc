// Data mode's fast paths against their definitions: the branch-free fp16 conversions (numerics.h)
// equal the case-by-case ones on every half and on a dense sample of floats (all 2^32 were checked
// once, offline); the typed convert/write_grads loops equal the element-by-element load/store
// formula; BlockCache reuses blocks of any size (whole, a head, pages moved into a larger one),
// zero-fills on request and frees beyond its limit.
#include "data_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "host_storage.h"
#include "numerics.h"

namespace {

using namespace zerosim;        // NOLINT
using namespace zerosim::exec;  // NOLINT

// The case-by-case definitions numerics.h had before its branch-free ones (the reference).
float ref_fp16_to_float(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t{h & 0x8000u} << 16;
  const std::uint32_t exp = (h >> 10) & 0x1Fu;
  std::uint32_t mant = h & 0x3FFu;
  if (exp == 0x1F) return bits_float(sign | 0x7F800000u | (mant << 13));
  if (exp != 0) return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
  if (mant == 0) return bits_float(sign);
  std::uint32_t e = 113;
  while ((mant & 0x400u) == 0) {
    mant <<= 1;
    --e;
  }
  return bits_float(sign | (e << 23) | ((mant & 0x3FFu) << 13));
}

std::uint16_t ref_float_to_fp16(float f) {
  const std::uint32_t u = float_bits(f);
  const auto sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const std::uint32_t abs = u & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return static_cast<std::uint16_t>(sign | 0x7E00u);
  if (abs >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);
  if (abs >= 0x38800000u) {
    const std::uint32_t mant = abs & 0x7FFFFFu;
    const std::uint32_t exp = (abs >> 23) - 112u;
    std::uint32_t h = (exp << 10) | (mant >> 13);
    const std::uint32_t rest = mant & 0x1FFFu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
    return static_cast<std::uint16_t>(sign | h);
  }
  if (abs < 0x33000000u) return sign;
  const std::uint32_t exp = abs >> 23;
  const std::uint32_t mant = (abs & 0x7FFFFFu) | 0x800000u;
  const std::uint32_t shift = 126u - exp;
  std::uint32_t h = mant >> shift;
  const std::uint32_t rest = mant & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  if (rest > half || (rest == half && (h & 1u))) ++h;
  return static_cast<std::uint16_t>(sign | h);
}

TEST(DataKernels, BranchFreeFp16ConversionsEqualTheCaseByCaseOnes) {
  for (std::uint32_t h = 0; h < 65536; ++h)
    ASSERT_EQ(float_bits(fp16_to_float(static_cast<std::uint16_t>(h))),
              float_bits(ref_fp16_to_float(static_cast<std::uint16_t>(h))))
        << std::hex << h;
  // Every float of the fp16 range's edges (subnormals, the rounding ties, 65504..65536, inf,
  // NaN) bit by bit around each boundary, and a stride through all the others.
  const std::uint32_t edges[] = {0x00000000u, 0x33000000u, 0x38800000u, 0x477FE000u,
                                 0x477FF000u, 0x47800000u, 0x7F800000u, 0x7FC00000u};
  for (std::uint32_t e : edges)
    for (std::uint32_t d = 0; d < 8192; ++d)
      for (std::uint32_t sign : {0u, 0x80000000u}) {
        const float f = bits_float(((e - 4096u + d) & 0x7FFFFFFFu) | sign);
        ASSERT_EQ(float_to_fp16(f), ref_float_to_fp16(f)) << std::hex << float_bits(f);
      }
  for (std::uint64_t u = 0; u < (std::uint64_t{1} << 32); u += 251) {
    const float f = bits_float(static_cast<std::uint32_t>(u));
    ASSERT_EQ(float_to_fp16(f), ref_float_to_fp16(f)) << std::hex << u;
  }
}

// convert's typed loops against the element-by-element formula on odd lengths (vector tails) for
// every pair of 16/32-bit dtypes, scaled or not, accumulating or not.
TEST(DataKernels, TypedConvertEqualsTheElementwiseFormula) {
  const DType types[] = {DType::Float16, DType::BFloat16, DType::Float32};
  const Elements n = 1037;
  std::vector<unsigned char> src(4 * n), dst(4 * n), want(4 * n);
  for (DType st : types)
    for (DType dt : types)
      for (double scale : {1.0, 0.25, 1.0 / 3})
        for (bool acc : {false, true}) {
          for (Elements i = 0; i < n; ++i) {
            store(st, src.data(), i, std::ldexp(static_cast<double>(i) - 500.0, -8) / 3.0);
            store(dt, dst.data(), i, 1.0 / (1.0 + static_cast<double>(i)));
          }
          want = dst;
          for (Elements i = 0; i < n; ++i) {
            float v = static_cast<float>(load(st, src.data(), i));
            if (scale != 1.0) v *= static_cast<float>(scale);
            if (acc) v = static_cast<float>(load(dt, want.data(), i)) + v;
            store(dt, want.data(), i, v);
          }
          convert(dst.data(), dt, src.data(), st, n, scale, acc);
          ASSERT_EQ(std::memcmp(dst.data(), want.data(), n * dtype_size(dt)), 0)
              << dtype_name(st) << " -> " << dtype_name(dt) << " x" << scale << " acc " << acc;
        }
}

TEST(DataKernels, GradientWritesEqualTheElementwiseFormula) {
  DataOptions o;
  const StandInGrads g(o, 1, 2, 0, 7);
  const Elements n = 515, first = 3;
  for (DType t : {DType::Float16, DType::BFloat16, DType::Float32})
    for (bool acc : {false, true}) {
      std::vector<unsigned char> d(4 * n), want(4 * n);
      for (Elements i = 0; i < n; ++i) store(t, d.data(), i, 0.001 * static_cast<double>(i));
      want = d;
      std::vector<unsigned char> one(4);
      for (Elements i = 0; i < n; ++i) {
        const float v = g(first + i) * 65536.0f * 0.5f;
        store(t, one.data(), 0, v);  // autograd's gradient as stored in t
        const auto as_stored = static_cast<float>(load(t, one.data(), 0));
        store(t, want.data(), i, acc ? static_cast<float>(load(t, want.data(), i)) + as_stored : v);
      }
      write_grads(t, d.data(), n, acc, g, first, 65536.0f, 0.5f, false);
      ASSERT_EQ(std::memcmp(d.data(), want.data(), n * dtype_size(t)), 0)
          << dtype_name(t) << " acc " << acc;
      // An injected inf lands on the param's element 0 only.
      write_grads(t, d.data(), n, false, g, 0, 1.0f, 1.0f, true);
      EXPECT_TRUE(std::isinf(load(t, d.data(), 0)));
      EXPECT_TRUE(std::isfinite(load(t, d.data(), 1)));
    }
}

// The local norm's and overflow check's loops: the same sum, in the same order, as adding
// load()^2 one by one; inf or NaN anywhere (first, middle, last element) in every dtype.
TEST(DataKernels, SquaredNormAndNonFiniteEqualTheElementwiseFormula) {
  const Elements n = 1029;
  for (DType t : {DType::Float16, DType::BFloat16, DType::Float32, DType::Float64, DType::Int64,
                  DType::UInt8}) {
    std::vector<unsigned char> d(8 * n);
    const SyntheticGrads w(5, 0, 0, 0, 1);
    for (Elements i = 0; i < n; ++i) store(t, d.data(), i, 100.0 * w(i));
    double want = 0.25;
    for (Elements i = 0; i < n; ++i) want += load(t, d.data(), i) * load(t, d.data(), i);
    EXPECT_EQ(sum_squares(t, d.data(), n, 0.25), want) << dtype_name(t);
    EXPECT_FALSE(any_nonfinite(t, d.data(), n)) << dtype_name(t);
    if (t == DType::Int64 || t == DType::UInt8) continue;  // always finite
    for (Elements at : {Elements{0}, n / 2, n - 1})
      for (double bad : {INFINITY, -INFINITY, NAN}) {
        std::vector<unsigned char> e = d;
        store(t, e.data(), at, bad);
        EXPECT_TRUE(any_nonfinite(t, e.data(), n)) << dtype_name(t) << " at " << at;
        EXPECT_FALSE(any_nonfinite(t, e.data(), at)) << dtype_name(t) << " before " << at;
      }
  }
}

TEST(BlockCache, ReusesBySizeZeroFillsOnRequestAndKeepsToItsLimit) {
  BlockCache cache(std::size_t{8} << 20);
  Block a = cache.take(std::size_t{3} << 20, true);
  ASSERT_TRUE(a);
  EXPECT_EQ(a.data()[12345], 0);
  std::memset(a.data(), 7, std::size_t{3} << 20);
  unsigned char* const first = a.data();
  cache.give(std::move(a));
  Block b = cache.take(std::size_t{3} << 20, false);  // the same block back, contents as left
  EXPECT_EQ(b.data(), first);
  EXPECT_EQ(b.data()[12345], 7);
  cache.give(std::move(b));
  Block c = cache.take(std::size_t{3} << 20, true);  // zero-filled when asked
  EXPECT_EQ(c.data(), first);
  EXPECT_EQ(c.data()[12345], 0);
  EXPECT_EQ(cache.held(), 0u);
  cache.give(std::move(c));
  EXPECT_EQ(cache.held(), std::size_t{3} << 20);
  // A larger request gets the cached pages moved into its head (contents as left), the rest fresh
  // (zeros); zero-filled when asked.
  Block d = cache.take(std::size_t{6} << 20, false);
  ASSERT_TRUE(d);
  EXPECT_EQ(cache.held(), 0u);
  std::memset(d.data(), 9, std::size_t{1} << 20);
  EXPECT_EQ(d.data()[(std::size_t{3} << 20) + 12345], 0);
  cache.give(std::move(d));
  Block z = cache.take(std::size_t{7} << 20, true);
  EXPECT_EQ(z.data()[12345], 0);
  EXPECT_EQ(z.data()[(std::size_t{7} << 20) - 1], 0);
  EXPECT_EQ(cache.held(), 0u);
  cache.give(std::move(z));
  // A smaller request is the head of a larger cached block; its tail stays cached.
  Block e = cache.take(std::size_t{2} << 20, false);
  EXPECT_EQ(cache.held(), std::size_t{5} << 20);
  e = Block();
  // Beyond the limit a released block is freed, not kept.
  cache.give(Block::make(std::size_t{4} << 20, false));
  EXPECT_EQ(cache.held(), std::size_t{5} << 20);
  // A request no machine can map fails as a null block, not an exception.
  EXPECT_FALSE(Block::make(std::size_t{1} << 62, false));
}

}  // namespace
