// EventQueue: the deterministic future-event list of the discrete-event engine.
//
// A binary min-heap of small POD events keyed by (time, sequence number), modelled on ns-3's
// scheduler (src/core/model/scheduler.h, DefaultSimulatorImpl::Schedule): every accepted event gets
// a sequence number one larger than the previous one, so two events at the same time always run in
// the order they were scheduled, whatever the heap does internally. Events carry an integer kind
// and two integer arguments instead of a callback (style.md §4.3), which keeps them 32 bytes, makes
// the queue trivially copyable, and lets bench/event_queue_bench.cc measure the queue and nothing
// else.
//
// Comparator guarantees (what the engine may rely on):
//   * strict weak order on (t, seq); seq is unique, so the order is total and pop order is fully
//     determined by the schedule calls, never by heap layout, hashing or addresses;
//   * ties in t run in insertion (schedule-call) order;
//   * time never goes backwards: schedule(t, ...) with t < now() is rejected (an invalid EventId is
//     returned and rejected_count() grows), so the sequence of popped times is non-decreasing.
//
// Costs (n = entries in the heap: live events plus cancelled ones not yet dropped):
//   schedule        O(log n) worst case, O(1) on average for random future times
//   pop             O(log n), plus O(log n) for each cancelled entry dropped on the way
//   cancel          O(1) average (a hash-set insert); the entry stays until it reaches the top
//   next_time       O(1), plus O(log n) per cancelled entry dropped from the top
//   size/empty/now  O(1)
//   memory          32 bytes per heap entry, plus a hash-set node per cancelled entry
#pragma once

#include <cstddef>
#include <cstdint>
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
  /// Pre-allocates room for n events in the heap (no reallocation until it holds more).
  void reserve(std::size_t n) { heap_.reserve(n); }
  /// Events the heap can hold without reallocating.
  std::size_t capacity() const { return heap_.capacity(); }

  /// Schedules an event at absolute time t (ns). Returns its id, or an invalid id without
  /// scheduling anything when t < now() (a bug in the caller: time cannot go backwards) or when the
  /// 2^64-1 sequence numbers are exhausted. O(log n).
  EventId schedule(SimTime t, std::uint32_t kind, std::uint32_t a = 0, std::uint64_t b = 0) {
    if (t < now_ || next_seq_ == 0) {
      ++rejected_;
      return {};
    }
    const Event e{t, next_seq_++, kind, a, b};
    heap_.push_back(e);
    sift_up(heap_.size() - 1, e);
    ++live_;
    return EventId(e.t, e.seq);
  }

  /// Removes and returns the earliest live event (cancelled ones are dropped on the way) and sets
  /// now() to its time; nullopt, with nothing changed, when no live event is left. O(log n).
  std::optional<Event> pop() {
    if (live_ == 0) return std::nullopt;  // never drops cancelled events past the last live one
    for (;;) {
      const Event e = pop_top();
      if (!cancelled_.empty() && cancelled_.erase(e.seq) != 0) continue;
      --live_;
      now_ = e.t;
      last_seq_ = e.seq;
      if (!dropped_ahead_.empty()) forget_dropped();
      return e;
    }
  }

  /// Time of the next live event without removing it (drops cancelled events at the top), or
  /// nullopt.
  std::optional<SimTime> next_time();

  /// Cancels a pending event: it will never be returned by pop(). Returns false (and changes
  /// nothing) when the id is invalid or the event already ran or was already cancelled. O(1)
  /// average; the entry stays in the heap until it reaches the top (lazy cancel, like ns-3's
  /// Cancel).
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
  /// before clear() never match an event scheduled after it.
  void clear();

 private:
  // Moves the hole at index i up until e fits, then stores e there.
  void sift_up(std::size_t i, const Event& e) {
    while (i > 0) {
      const std::size_t parent = (i - 1) / 2;
      if (!event_before(e, heap_[parent])) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = e;
  }

  // Removes the heap's minimum. Bottom-up deletion: the hole at the root walks down along the
  // smaller child to a leaf (one comparison per level instead of two), then the former last element
  // is sifted up from there; it usually belongs near the bottom, so that walk is short.
  Event pop_top() {
    const Event top = heap_.front();
    const Event last = heap_.back();
    heap_.pop_back();
    const std::size_t n = heap_.size();
    if (n == 0) return top;
    std::size_t hole = 0;
    for (std::size_t child = 1; child < n; child = 2 * hole + 1) {
      child +=
          static_cast<std::size_t>(child + 1 < n && event_before(heap_[child + 1], heap_[child]));
      heap_[hole] = heap_[child];
      hole = child;
    }
    sift_up(hole, last);
    return top;
  }

  // Cancelled events dropped by next_time() sit before the next live event but after the frontier;
  // their seqs stay in cancelled_ (so is_pending stays false) until the next pop() passes them.
  void forget_dropped();

  std::vector<Event> heap_;
  // Seqs of cancelled events not yet passed by the frontier. Used for membership only, so its hash
  // order never reaches any result.
  std::unordered_set<std::uint64_t> cancelled_;
  std::vector<std::uint64_t> dropped_ahead_;
  std::size_t live_ = 0;
  SimTime now_ = 0;
  std::uint64_t last_seq_ = 0;  // seq of the last popped event: (now_, last_seq_) is the frontier
  std::uint64_t next_seq_ = 1;
  std::uint64_t first_seq_ = 1;  // ids below this predate the last clear()
  std::uint64_t rejected_ = 0;
};

}  // namespace zerosim
