// EventQueue: the deterministic future-event list of the discrete-event engine.
//
// Ordered like ns-3's scheduler (src/core/model/scheduler.h, DefaultSimulatorImpl::Schedule):
// every accepted event gets a sequence number one larger than the previous one, so two events at
// the same time always run in the order they were scheduled. Events carry an integer kind and two
// integer arguments instead of a callback (style.md §4.3), which keeps them 32 bytes, makes the
// queue trivially copyable, and lets bench/event_queue_bench.cc measure the queue and nothing else.
//
// The structure is a radix heap (Ahuja, Mehlhorn, Orlin and Tarjan, "Faster algorithms for the
// shortest path problem", J. ACM 37(2), 1990) with base-16 digits, which applies because simulated
// time never goes backwards: every key is at least the last popped one (`base_`). An event lives in
// the bucket named by the highest 4-bit digit in which t differs from base_ and t's value of that
// digit; every event of a lower-numbered bucket is earlier than every event of a higher one, and
// the events at exactly base_ share one "equal" bucket. schedule() is an O(1) append; pop() takes
// the front of the equal bucket, or, when it is consumed, moves base_ to the earliest entry of the
// lowest non-empty bucket and redistributes that bucket into lower ones (each move goes to a lower
// digit position, so an event moves at most 15 times in its life, typically two or three). On the
// hold benchmark at 1024 events a binary heap measured 11 M events/s on the development machine;
// figures for this one are in the README.
//
// Why ties still come out in insertion order: every bucket's vector is sorted by seq. schedule()
// appends the largest seq so far; a redistribution moves a bucket, in order, into buckets that are
// all empty at that moment (it is the lowest non-empty one). So the equal bucket is a FIFO in seq
// order.
//
// Comparator guarantees (what the engine may rely on):
//   * pop order is the strict total order on (t, seq) (event_before), never dependent on memory
//     layout, hashing or addresses;
//   * ties in t run in insertion (schedule-call) order;
//   * time never goes backwards: schedule(t, ...) with t < now() is rejected (an invalid EventId is
//     returned and rejected_count() grows), so the sequence of popped times is non-decreasing.
//
// Costs (n = entries held: live events plus cancelled ones not yet dropped):
//   schedule        O(1)
//   pop             O(1) amortised per event moved; each event is moved at most 15 times
//   cancel          O(1) average (a hash-set insert); the entry stays until pop() reaches it
//   next_time       O(size of the lowest bucket holding a live event); the engine never peeks
//   size/empty/now  O(1)
//   memory          32 bytes per entry, plus a hash-set node per cancelled entry
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <unordered_set>
#include <vector>

#include "zerosim/units.h"

namespace zerosim {

/// One scheduled event. kind, a and b are opaque to the queue: the engine gives them meaning (for
/// example kind = op completion, a = rank, b = op index).
struct Event {
  SimTime t = 0;           ///< firing time, ns
  std::uint64_t seq = 0;   ///< insertion number, unique and strictly increasing per queue (first 1)
  std::uint32_t kind = 0;  ///< engine-defined event kind
  std::uint32_t a = 0;     ///< engine-defined argument
  std::uint64_t b = 0;     ///< engine-defined argument
};
static_assert(sizeof(Event) == 32, "Event must stay a 32-byte POD");

/// The queue's total order: earlier time first, then earlier insertion.
constexpr bool event_before(const Event& x, const Event& y) {
  // Bitwise, not short-circuit: no data-dependent branch, which matters when the heap compares
  // random keys (an unpredictable branch per level costs more than the comparison itself).
  return (x.t < y.t) | ((x.t == y.t) & (x.seq < y.seq));
}

/// Handle of a scheduled event, used to cancel it. Default-constructed (and returned for a rejected
/// schedule call) it is invalid. Only meaningful for the queue that returned it.
class EventId {
 public:
  constexpr EventId() = default;
  constexpr bool valid() const { return seq_ != 0; }
  constexpr explicit operator bool() const { return valid(); }
  /// The event's firing time, ns.
  constexpr SimTime time() const { return t_; }
  /// The event's sequence number (0: invalid).
  constexpr std::uint64_t seq() const { return seq_; }
  friend constexpr bool operator==(EventId, EventId) = default;

 private:
  friend class EventQueue;
  constexpr EventId(SimTime t, std::uint64_t seq) : t_(t), seq_(seq) {}
  SimTime t_ = 0;
  std::uint64_t seq_ = 0;
};

/// Deterministic future-event list. Not thread-safe; one queue per engine (no global state).
class EventQueue {
 public:
  /// Schedules an event at absolute time t (ns). Returns its id, or an invalid id without
  /// scheduling anything when t < now() (a bug in the caller: time cannot go backwards) or when the
  /// 2^64-1 sequence numbers are exhausted. O(1).
  EventId schedule(SimTime t, std::uint32_t kind, std::uint32_t a = 0, std::uint64_t b = 0) {
    if (t < now_ || next_seq_ == 0) {
      ++rejected_;
      return {};
    }
    const Event e{t, next_seq_++, kind, a, b};
    push(e);
    ++live_;
    return EventId(e.t, e.seq);
  }

  /// Removes and returns the earliest live event (cancelled ones are dropped on the way) and sets
  /// now() to its time; nullopt, with nothing changed, when no live event is left.
  std::optional<Event> pop() {
    if (live_ == 0) return std::nullopt;  // never drops cancelled events past the last live one
    for (;;) {
      if (head_ == buckets_[equal_].size()) refill();
      const Event e = buckets_[equal_][head_++];
      if (!cancelled_.empty() && cancelled_.erase(e.seq) != 0) continue;
      --live_;
      now_ = e.t;
      last_seq_ = e.seq;
      return e;
    }
  }

  /// Time of the next live event without removing it or changing any state, or nullopt.
  std::optional<SimTime> next_time() const;

  /// Cancels a pending event: it will never be returned by pop(). Returns false (and changes
  /// nothing) when the id is invalid or the event already ran or was already cancelled. O(1)
  /// average; the entry stays until pop() reaches it (lazy cancel, like ns-3's Cancel).
  bool cancel(EventId id);

  /// True when the event is scheduled, not cancelled and not yet popped.
  bool is_pending(EventId id) const;

  /// Live (scheduled, not cancelled, not popped) events.
  std::size_t size() const { return live_; }
  bool empty() const { return live_ == 0; }
  /// Time of the last popped event, ns (0 before the first pop).
  SimTime now() const { return now_; }
  /// Events accepted by schedule() so far.
  std::uint64_t scheduled_count() const { return next_seq_ - 1; }
  /// schedule() calls rejected because they were in the past. The engine asserts this stays 0.
  std::uint64_t rejected_count() const { return rejected_; }

  /// Drops every event and resets the clock to 0; sequence numbers keep growing, so ids handed out
  /// before clear() never match an event scheduled after it. Bucket storage is kept for reuse.
  void clear();

 private:
  // A bucket is (digit position g, digit value v) of the highest 4-bit digit in which t differs
  // from base_, numbered 16 g + v: 16 positions cover 64 bits, and a larger bucket number always
  // means a later time. An event at exactly base_ has number (base_ & 15), the "equal" bucket,
  // which no other event can share (it would need the lowest digit of t to be that of base_ and
  // every higher digit equal too). Base 16 rather than 2 moves each event about half as often.
  static constexpr int kDigitBits = 4;
  static constexpr std::size_t kRadix = std::size_t{1} << kDigitBits;
  static constexpr std::size_t kBuckets = kRadix * (64 / kDigitBits);
  static constexpr std::size_t kMaskWords = kBuckets / 64;

  static std::size_t bucket_of(SimTime t, SimTime base) {
    const auto ut = static_cast<std::uint64_t>(t);
    const auto diff = ut ^ static_cast<std::uint64_t>(base);
    if (diff == 0) return static_cast<std::size_t>(ut & (kRadix - 1));
    const auto shift = static_cast<unsigned>((std::bit_width(diff) - 1) & ~(kDigitBits - 1));
    return kRadix * (shift / kDigitBits) + static_cast<std::size_t>((ut >> shift) & (kRadix - 1));
  }

  static constexpr std::array<SimTime, kBuckets> empty_lowest() {
    std::array<SimTime, kBuckets> a{};
    a.fill(std::numeric_limits<SimTime>::max());
    return a;
  }

  void push(const Event& e) {
    const std::size_t b = bucket_of(e.t, base_);
    buckets_[b].push_back(e);
    lowest_[b] = std::min(lowest_[b], e.t);
    nonempty_[b / 64] |= std::uint64_t{1} << (b % 64);
  }

  void mark_empty(std::size_t b) {
    buckets_[b].clear();
    lowest_[b] = std::numeric_limits<SimTime>::max();
    nonempty_[b / 64] &= ~(std::uint64_t{1} << (b % 64));
  }

  // The equal bucket is consumed: moves base_ to the earliest entry of the lowest non-empty bucket
  // and redistributes that bucket (in order) into lower ones, all empty at that moment; the
  // entries at the new base_ land in the new equal bucket. Precondition: some entry is held
  // (live_ > 0 guarantees it).
  void refill();

  std::array<std::vector<Event>, kBuckets> buckets_;
  // lowest_[b]: the earliest time in buckets_[b] (SimTime max when empty), kept on every push so
  // that a refill needs one pass over the bucket, not two.
  std::array<SimTime, kBuckets> lowest_ = empty_lowest();
  std::array<std::uint64_t, kMaskWords> nonempty_{};  // bit b set: buckets_[b] holds entries
  SimTime base_ = 0;       // the radix heap's base: every held entry has t >= base_
  std::size_t equal_ = 0;  // bucket_of(base_, base_): the FIFO of entries at exactly base_
  std::size_t head_ = 0;   // next entry of the equal bucket to pop
  // Seqs of cancelled events not yet dropped by pop(). Used for membership only, so its hash order
  // never reaches any result.
  std::unordered_set<std::uint64_t> cancelled_;
  std::size_t live_ = 0;
  SimTime now_ = 0;
  std::uint64_t last_seq_ = 0;  // seq of the last popped event: (now_, last_seq_) is the frontier
  std::uint64_t next_seq_ = 1;
  std::uint64_t first_seq_ = 1;  // ids below this predate the last clear()
  std::uint64_t rejected_ = 0;
};

}  // namespace zerosim
