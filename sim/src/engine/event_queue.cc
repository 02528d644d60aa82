// EventQueue's cold paths: refilling the equal bucket, cancellation, peeking and reset. The hot
// paths (schedule, pop) are inline in event_queue.h so the engine loop and the hold benchmark
// compile them without a call.
#include "zerosim/event_queue.h"

#include <bit>
#include <limits>

namespace zerosim {

void EventQueue::refill() {
  mark_empty(equal_);
  head_ = 0;
  std::size_t from = 0;
  for (std::size_t w = 0; w < kMaskWords; ++w) {
    if (nonempty_[w] != 0) {
      from = 64 * w + static_cast<std::size_t>(std::countr_zero(nonempty_[w]));
      break;
    }
  }
  // Every entry of bucket `from` shares base_'s digits above its position and its own digit there,
  // and so does its earliest entry: against that new base they differ only in lower digits, so
  // they all move to lower buckets, which are empty (`from` was the lowest non-empty one).
  base_ = lowest_[from];
  equal_ = bucket_of(base_, base_);
  if (from < kRadix) {
    // A lowest-digit bucket: its entries share every digit, so they are all at the new base_ and
    // the bucket becomes the equal bucket as it stands (in seq order, nothing moves).
    head_ = 0;
    return;
  }
  // Every entry lands in a bucket below `from` (equal_ < kRadix <= from), so iterating over
  // buckets_[from] while pushing never touches it.
  for (const Event& e : buckets_[from]) push(e);
  mark_empty(from);
}

bool EventQueue::is_pending(EventId id) const {
  if (!id.valid() || id.seq() < first_seq_ || id.seq() >= next_seq_) return false;
  // Everything removed (popped, or cancelled and dropped) is ordered at or before the last popped
  // event, because pop() never drops cancelled events past the last live one. So an id after that
  // frontier is still held, and it is live unless it was cancelled.
  const Event probe{id.time(), id.seq(), 0, 0, 0};
  const Event frontier{now_, last_seq_, 0, 0, 0};
  if (!event_before(frontier, probe)) return false;
  return cancelled_.count(id.seq()) == 0;
}

bool EventQueue::cancel(EventId id) {
  if (!is_pending(id)) return false;
  cancelled_.insert(id.seq());
  --live_;
  return true;
}

std::optional<SimTime> EventQueue::next_time() const {
  if (live_ == 0) return std::nullopt;
  const auto live = [&](const Event& e) { return cancelled_.count(e.seq) == 0; };
  for (std::size_t i = head_; i < buckets_[equal_].size(); ++i) {
    if (live(buckets_[equal_][i])) return base_;
  }
  // Buckets are ordered: the first one holding a live entry holds the earliest live entry.
  for (std::size_t b = equal_ + 1; b < kBuckets; ++b) {
    std::optional<SimTime> lowest;
    for (const Event& e : buckets_[b]) {
      if (live(e) && (!lowest || e.t < *lowest)) lowest = e.t;
    }
    if (lowest) return lowest;
  }
  return std::nullopt;  // unreachable while live_ counts the held live entries
}

void EventQueue::clear() {
  for (std::size_t b = 0; b < kBuckets; ++b) mark_empty(b);
  base_ = 0;
  equal_ = 0;
  head_ = 0;
  cancelled_.clear();
  live_ = 0;
  now_ = 0;
  last_seq_ = 0;
  first_seq_ = next_seq_;
}

}  // namespace zerosim
