// The enum counts (k...Count in ir_types.h and units.h) derive from each enum's last value: every
// value below the count has its own name, and the value at the count has none. The name functions
// switch over every enumerator (-Wswitch), so a value appended after the last one gets a name and
// fails here until its count follows.
#include "zerosim/ir_types.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <set>
#include <string>
#include <string_view>

#include "zerosim/units.h"

namespace zerosim {
namespace {

template <typename E, typename F>
void expect_count(const char* what, std::size_t count, F name, std::string_view fallback) {
  SCOPED_TRACE(what);
  std::set<std::string> seen;
  for (std::size_t v = 0; v < count; ++v) {
    const std::string n(name(static_cast<E>(v)));
    EXPECT_NE(n, fallback) << "value " << v;
    EXPECT_TRUE(seen.insert(n).second) << "value " << v << " repeats " << n;
  }
  EXPECT_EQ(name(static_cast<E>(count)), fallback) << "a value after the count has a name";
}

TEST(IrTypes, CountsDeriveFromTheEnums) {
  expect_count<Stream>("Stream", kStreamCount, stream_name, "unknown");
  expect_count<OpKind>("OpKind", kOpKindCount, op_kind_name, "unknown");
  expect_count<Phase>("Phase", kPhaseCount, phase_name, "unknown");
  expect_count<BufferCategory>("BufferCategory", kCategoryCount, category_name, "unknown");
  expect_count<MemoryPool>("MemoryPool", kMemoryPoolCount, memory_pool_name, "unknown");
  expect_count<CopyMode>("CopyMode", kCopyModeCount, copy_mode_name, "unknown");
  expect_count<CollectiveKind>("CollectiveKind", kCollectiveKindCount, collective_name, "unknown");
  expect_count<DType>("DType", kDTypeCount, dtype_name, "?");
  EXPECT_EQ(kAllCategories.size(), kCategoryCount);
  EXPECT_EQ(kAllCollectiveKinds.size(), kCollectiveKindCount);
  for (std::size_t k = 0; k < kCategoryCount; ++k)
    EXPECT_EQ(static_cast<std::size_t>(kAllCategories[k]), k);
  for (std::size_t k = 0; k < kCollectiveKindCount; ++k)
    EXPECT_EQ(static_cast<std::size_t>(kAllCollectiveKinds[k]), k);
}

}  // namespace
}  // namespace zerosim
