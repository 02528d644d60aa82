// SlotValues (schedule.h): a rank role's slot values, read like a dense vector but stored as the
// non-zero (slot, value) pairs, and the places that read them (lookups, the JSON form, the
// lowering's timing maxima, the simulator's per-role buffer sizes).
#include <gtest/gtest.h>

#include <sstream>

#include "simulator_testlib.h"
#include "zerosim/engine.h"
#include "zerosim/schedule.h"
#include "zerosim/schedule_graph.h"
#include "zerosim/schedule_io.h"

namespace zerosim {
namespace {

TEST(SlotValues, ReadsLikeADenseVector) {
  const SlotValues v = {0, 7, 0, 0, 9};
  EXPECT_EQ(v.size(), 5u);
  EXPECT_EQ(v[0], 0u);
  EXPECT_EQ(v[1], 7u);
  EXPECT_EQ(v[3], 0u);
  EXPECT_EQ(v[4], 9u);
  EXPECT_EQ(v[5], 0u);  // past the end: 0, as Schedule::op_elements answered for a short role
  ASSERT_EQ(v.nonzero().size(), 2u);  // only the non-zero values are stored
  EXPECT_EQ(v.nonzero()[0].slot, 1u);
  EXPECT_EQ(v.nonzero()[1].slot, 4u);
  EXPECT_EQ(v.dense(), (std::vector<Elements>{0, 7, 0, 0, 9}));
}

TEST(SlotValues, SetKeepsSlotOrderAndDropsZeros) {
  SlotValues v = SlotValues::zeros(6);
  EXPECT_EQ(v.size(), 6u);
  EXPECT_TRUE(v.nonzero().empty());
  v.set(4, 40);
  v.set(1, 10);
  v.set(2, 20);
  EXPECT_EQ(v.dense(), (std::vector<Elements>{0, 10, 20, 0, 40, 0}));
  v.set(2, 0);  // a zero is not stored
  v.set(4, 44);
  EXPECT_EQ(v.nonzero().size(), 2u);
  EXPECT_EQ(v.dense(), (std::vector<Elements>{0, 10, 0, 0, 44, 0}));
  // Equality is the dense vectors' (same size, same values), whatever the order of the sets.
  SlotValues w = {0, 10, 0, 0, 44, 0};
  EXPECT_EQ(v, w);
  w.push_back(0);
  EXPECT_NE(v, w);  // one slot more
}

// A two-role schedule with a slot no role uses and one every role has: the JSON keeps the non-zero
// values with the slot count, the read-back roles compare equal, and the lowering's maxima, the
// per-role sizes and the simulated per-role peaks come from the sparse values.
TEST(SlotValues, RoundTripsAndSizesBuffersPerRole) {
  Schedule s = simtest::two_role_schedule();
  s.meta.slot_names = {"grads_in_partition", "unused", "everywhere"};
  s.roles[0].slots = {1000000, 0, 7};
  s.roles[1].slots = {3000000, 0, 7};
  // A buffer of the slot every role has the same value for (the ledger's one-size buffers).
  s.buffers.push_back(simtest::buffer("same on every role", BufferCategory::Temp, 0, true));
  s.buffers.back().slot = 2;
  s.ops.push_back(simtest::alloc(2));
  EXPECT_EQ(s.buffer_numel(1, 0), 1000000u);
  EXPECT_EQ(s.buffer_numel(1, 1), 3000000u);
  std::ostringstream os;
  write_schedule_json(s, os);
  EXPECT_NE(os.str().find("\"slots\":{\"count\":3,\"nonzero\":[[0,1000000],[2,7]]}"),
            std::string::npos)
      << os.str();
  auto back = read_schedule_json(os.str(), "test.json");
  ASSERT_TRUE(back.ok()) << back.diagnostics().to_string();
  ASSERT_EQ(back->roles.size(), 2u);
  EXPECT_EQ(back->roles[0].slots, s.roles[0].slots);
  EXPECT_EQ(back->roles[1].slots, s.roles[1].slots);
  EXPECT_EQ(back->roles[1].slots.dense(), (std::vector<Elements>{3000000, 0, 7}));
  auto g = lower_schedule(s, "test");
  ASSERT_TRUE(g.ok()) << g.diagnostics().to_string();
  EXPECT_EQ(g->max_slots, (std::vector<Elements>{3000000, 0, 7}));
  auto r = simulate(s, simtest::round_gpu(), simtest::round_options());
  ASSERT_TRUE(r.ok()) << r.diagnostics().to_string();
  ASSERT_EQ(r->memory.size(), 2u);
  // 500 fp16 params, the role's grads_in_partition and 7 fp16 elements, all fp16.
  EXPECT_EQ(r->memory[0].device.bytes, 1000u + 2000000u + 14u);
  EXPECT_EQ(r->memory[1].device.bytes, 1000u + 6000000u + 14u);
}

}  // namespace
}  // namespace zerosim
