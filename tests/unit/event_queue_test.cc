// EventQueue: (time, insertion) order, ties, time never going backwards, lazy cancel, and a
// randomised comparison against a std::set reference model.
#include "zerosim/event_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <set>
#include <tuple>
#include <vector>

namespace zerosim {
namespace {

// Pops every live event and returns their `a` fields in pop order.
std::vector<std::uint32_t> drain(EventQueue& q) {
  std::vector<std::uint32_t> out;
  while (auto e = q.pop()) out.push_back(e->a);
  return out;
}

TEST(EventQueue, EmptyQueue) {
  EventQueue q;
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.size(), 0u);
  EXPECT_EQ(q.now(), 0);
  EXPECT_FALSE(q.pop().has_value());
  EXPECT_FALSE(q.next_time().has_value());
  EXPECT_EQ(q.scheduled_count(), 0u);
}

TEST(EventQueue, OrdersByTimeAndKeepsPayload) {
  EventQueue q;
  const EventId late = q.schedule(300, 7, 3, 0xdeadbeefcafeULL);
  q.schedule(100, 5, 1, 11);
  q.schedule(200, 6, 2, 22);
  EXPECT_EQ(q.size(), 3u);
  EXPECT_EQ(late.time(), 300);
  EXPECT_EQ(late.seq(), 1u);

  auto e = q.pop();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->t, 100);
  EXPECT_EQ(e->seq, 2u);
  EXPECT_EQ(e->kind, 5u);
  EXPECT_EQ(e->a, 1u);
  EXPECT_EQ(e->b, 11u);
  EXPECT_EQ(q.now(), 100);
  e = q.pop();
  EXPECT_EQ(e->t, 200);
  EXPECT_EQ(q.now(), 200);
  e = q.pop();
  EXPECT_EQ(e->t, 300);
  EXPECT_EQ(e->kind, 7u);
  EXPECT_EQ(e->b, 0xdeadbeefcafeULL);
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.now(), 300);
}

TEST(EventQueue, TiesRunInInsertionOrder) {
  EventQueue q;
  // Interleave two times so the heap has to move tied events past each other.
  for (std::uint32_t i = 0; i < 20; ++i) q.schedule(i % 2 == 0 ? 50 : 40, 0, i);
  EXPECT_EQ(drain(q), (std::vector<std::uint32_t>{1, 3, 5, 7, 9, 11, 13, 15, 17, 19,  //
                                                  0, 2, 4, 6, 8, 10, 12, 14, 16, 18}));
}

TEST(EventQueue, SchedulingInThePastIsRejected) {
  EventQueue q;
  q.schedule(100, 0, 1);
  ASSERT_TRUE(q.pop());
  const EventId past = q.schedule(99, 0, 2);
  EXPECT_FALSE(past.valid());
  EXPECT_FALSE(past);
  EXPECT_EQ(q.rejected_count(), 1u);
  EXPECT_EQ(q.size(), 0u);
  EXPECT_FALSE(q.schedule(-5, 0, 3).valid());
  EXPECT_EQ(q.rejected_count(), 2u);
  const EventId same_time = q.schedule(100, 0, 4);  // "now" is not the past
  EXPECT_TRUE(same_time.valid());
  EXPECT_EQ(q.scheduled_count(), 2u);
  EXPECT_EQ(drain(q), (std::vector<std::uint32_t>{4}));
}

TEST(EventQueue, InterleavedScheduleAndPop) {
  EventQueue q;
  q.schedule(10, 0, 1);
  q.schedule(30, 0, 2);
  EXPECT_EQ(q.pop()->a, 1u);  // now = 10
  q.schedule(20, 0, 3);
  q.schedule(10, 0, 4);  // at now: runs before everything later
  q.schedule(30, 0, 5);  // ties with 2, scheduled after it
  EXPECT_EQ(q.pop()->a, 4u);
  EXPECT_EQ(q.now(), 10);
  EXPECT_EQ(q.pop()->a, 3u);
  q.schedule(25, 0, 6);
  EXPECT_EQ(drain(q), (std::vector<std::uint32_t>{6, 2, 5}));
  EXPECT_EQ(q.now(), 30);
}

TEST(EventQueue, CancelIsLazyAndExact) {
  EventQueue q;
  const EventId a = q.schedule(10, 0, 1);
  const EventId b = q.schedule(20, 0, 2);
  const EventId c = q.schedule(30, 0, 3);
  EXPECT_TRUE(q.is_pending(b));
  EXPECT_TRUE(q.cancel(b));
  EXPECT_FALSE(q.is_pending(b));
  EXPECT_FALSE(q.cancel(b));  // already cancelled
  EXPECT_EQ(q.size(), 2u);
  EXPECT_FALSE(q.cancel(EventId{}));  // invalid id

  EXPECT_EQ(q.pop()->a, 1u);
  EXPECT_FALSE(q.cancel(a));  // already ran
  EXPECT_FALSE(q.is_pending(a));
  EXPECT_EQ(q.pop()->a, 3u);  // b is skipped
  EXPECT_EQ(q.now(), 30);
  EXPECT_FALSE(q.cancel(c));
  EXPECT_TRUE(q.empty());
  EXPECT_FALSE(q.pop());
}

TEST(EventQueue, NextTimeSkipsCancelledEvents) {
  EventQueue q;
  const EventId first = q.schedule(5, 0, 1);
  const EventId second = q.schedule(6, 0, 2);
  q.schedule(9, 0, 3);
  q.cancel(first);
  q.cancel(second);
  EXPECT_EQ(q.next_time(), 9);
  EXPECT_EQ(q.now(), 0);  // peeking does not advance the clock
  EXPECT_FALSE(q.is_pending(first));
  EXPECT_FALSE(q.cancel(second));
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(drain(q), (std::vector<std::uint32_t>{3}));
  EXPECT_FALSE(q.is_pending(first));
}

TEST(EventQueue, CancellingEverythingThenSchedulingEarlier) {
  EventQueue q;
  const EventId x = q.schedule(100, 0, 1);
  const EventId y = q.schedule(200, 0, 2);
  EXPECT_TRUE(q.cancel(x));
  EXPECT_TRUE(q.cancel(y));
  EXPECT_TRUE(q.empty());
  EXPECT_FALSE(q.pop());  // nothing live: the cancelled entries stay put, the clock stays at 0
  EXPECT_EQ(q.now(), 0);
  q.schedule(50, 0, 3);
  q.schedule(150, 0, 4);
  EXPECT_FALSE(q.cancel(y));
  EXPECT_EQ(drain(q), (std::vector<std::uint32_t>{3, 4}));
  EXPECT_FALSE(q.is_pending(x));
  EXPECT_FALSE(q.is_pending(y));
}

TEST(EventQueue, ClearResetsTheClockButNotTheSequence) {
  EventQueue q;
  const EventId old = q.schedule(42, 0, 1);
  q.schedule(43, 0, 2);
  ASSERT_TRUE(q.pop());
  q.clear();
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.now(), 0);
  EXPECT_FALSE(q.is_pending(old));
  EXPECT_FALSE(q.cancel(old));
  const EventId fresh = q.schedule(1, 0, 3);  // time may start again from 0
  EXPECT_EQ(fresh.seq(), 3u);                 // sequence numbers never repeat
  EXPECT_EQ(drain(q), (std::vector<std::uint32_t>{3}));
}

TEST(EventQueue, HundredThousandRandomEventsComeOutSorted) {
  constexpr std::uint32_t kN = 100000;
  std::mt19937_64 rng(20240611);
  std::uniform_int_distribution<SimTime> time(0, 50000);  // many ties
  std::vector<SimTime> times(kN);
  EventQueue q;
  for (std::uint32_t i = 0; i < kN; ++i) {
    times[i] = time(rng);
    ASSERT_TRUE(q.schedule(times[i], 0, i).valid());
  }
  std::vector<std::uint32_t> expected(kN);
  for (std::uint32_t i = 0; i < kN; ++i) expected[i] = i;
  std::stable_sort(expected.begin(), expected.end(),
                   [&](std::uint32_t l, std::uint32_t r) { return times[l] < times[r]; });
  EXPECT_EQ(drain(q), expected);
  EXPECT_EQ(q.now(), times[expected.back()]);
}

// Random schedule/pop/cancel/peek against a std::set keyed by (t, seq): same pops, same sizes.
// `delay` draws how far after now() each event is scheduled.
template <typename Delay>
void check_against_reference_model(std::uint64_t seed, Delay delay) {
  std::mt19937_64 rng(seed);
  EventQueue q;
  std::set<std::tuple<SimTime, std::uint64_t>> model;
  std::vector<EventId> ids;
  for (int step = 0; step < 50000; ++step) {
    const auto op = rng() % 10;
    if (op < 5) {
      const SimTime t = q.now() + delay(rng);
      const EventId id = q.schedule(t, 0, 0, static_cast<std::uint64_t>(step));
      ASSERT_TRUE(id.valid());
      model.emplace(id.time(), id.seq());
      ids.push_back(id);
    } else if (op < 8) {
      const auto e = q.pop();
      ASSERT_EQ(e.has_value(), !model.empty());
      if (e) {
        ASSERT_EQ(std::make_tuple(e->t, e->seq), *model.begin());
        model.erase(model.begin());
      }
    } else if (op < 9 && !ids.empty()) {
      const EventId id = ids[rng() % ids.size()];
      const bool pending = model.count({id.time(), id.seq()}) != 0;
      ASSERT_EQ(q.is_pending(id), pending);
      ASSERT_EQ(q.cancel(id), pending);
      model.erase({id.time(), id.seq()});
    } else if (!model.empty()) {
      ASSERT_EQ(q.next_time(), std::get<0>(*model.begin()));
    }
    ASSERT_EQ(q.size(), model.size());
  }
}

TEST(EventQueue, MatchesReferenceModelUnderRandomOperations) {
  check_against_reference_model(
      7, [](std::mt19937_64& rng) { return static_cast<SimTime>(rng() % 1000); });
}

// The radix heap's buckets are indexed by the highest bit in which t differs from the last popped
// time: delays of every magnitude (0 for ties, a few ns, microseconds, up to 2^50 ns) exercise
// every bucket and redistributions that leave ties behind in bucket 0.
TEST(EventQueue, MatchesReferenceModelAcrossEveryTimeScale) {
  check_against_reference_model(11, [](std::mt19937_64& rng) {
    const auto bits = static_cast<int>(rng() % 51);
    return bits == 0 ? SimTime{0} : static_cast<SimTime>(rng() >> (64 - bits));
  });
}

TEST(EventQueue, TimesNearTheLargestSimTime) {
  EventQueue q;
  const SimTime top = std::numeric_limits<SimTime>::max();
  q.schedule(top, 0, 1);
  q.schedule(top - 1, 0, 2);
  q.schedule(0, 0, 3);
  q.schedule(top, 0, 4);
  EXPECT_EQ(drain(q), (std::vector<std::uint32_t>{3, 2, 1, 4}));
  EXPECT_EQ(q.now(), top);
  EXPECT_TRUE(q.schedule(top, 0, 5).valid());
  EXPECT_EQ(drain(q), (std::vector<std::uint32_t>{5}));
}

}  // namespace
}  // namespace zerosim
