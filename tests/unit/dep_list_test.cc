// DepList (zerosim/dep_list.h): one dependency in place, longer lists on the heap, the same
// behaviour as the std::vector it replaced in Op.
#include "zerosim/dep_list.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace zerosim {
namespace {

std::vector<std::uint32_t> items(const DepList& d) { return {d.begin(), d.end()}; }

TEST(DepList, HoldsWhatWasPushedInOrderPastTheInPlaceOne) {
  DepList d;
  EXPECT_TRUE(d.empty());
  std::vector<std::uint32_t> expected;
  for (std::uint32_t i = 0; i < 37; ++i) {
    d.push_back(i * 3 + 1);
    expected.push_back(i * 3 + 1);
    ASSERT_EQ(d.size(), expected.size());
    ASSERT_EQ(items(d), expected);
    ASSERT_EQ(d[i], i * 3 + 1);
  }
  d.clear();
  EXPECT_TRUE(d.empty());
  d.push_back(9);
  EXPECT_EQ(items(d), (std::vector<std::uint32_t>{9}));
}

TEST(DepList, CopiesMovesAndComparesByValue) {
  for (const std::vector<std::uint32_t>& v :
       {std::vector<std::uint32_t>{}, {4}, {4, 8}, {1, 2, 3, 4, 5}}) {
    const DepList a(v);
    EXPECT_EQ(items(a), v);
    DepList b = a;  // copy
    EXPECT_EQ(b, a);
    DepList c = std::move(b);  // move leaves the source empty
    EXPECT_EQ(c, a);
    EXPECT_TRUE(b.empty());  // NOLINT(bugprone-use-after-move): the moved-from state is specified
    DepList d{99, 98, 97};
    d = c;  // copy-assign over a heap list
    EXPECT_EQ(d, a);
    DepList e{7};
    e = std::move(d);  // move-assign over an in-place one
    EXPECT_EQ(e, a);
    const DepList& same = e;
    e = same;  // self-assignment keeps the list
    EXPECT_EQ(items(e), v);
  }
  EXPECT_NE(DepList({1, 2}), DepList({1, 3}));
  EXPECT_NE(DepList({1}), DepList({1, 1}));
  EXPECT_EQ(DepList{}, DepList(std::vector<std::uint32_t>{}));
}

TEST(DepList, IsTwoThirdsOfTheVectorItReplaced) {
  EXPECT_EQ(sizeof(DepList), 16u);
  EXPECT_LT(sizeof(DepList), sizeof(std::vector<std::uint32_t>));
}

}  // namespace
}  // namespace zerosim
