// EventQueue's cold paths: cancellation, peeking and reset. The hot paths (schedule, pop) are
// inline in event_queue.h so the engine loop and the hold benchmark compile them without a call.
#include "zerosim/event_queue.h"

namespace zerosim {

bool EventQueue::is_pending(EventId id) const {
  if (!id.valid() || id.seq() < first_seq_ || id.seq() >= next_seq_) return false;
  // Everything removed from the heap (popped, or cancelled and dropped) is ordered at or before the
  // last popped event, because pop() never drops cancelled events past the last live one. So an id
  // after that frontier is still in the heap, and it is live unless it was cancelled.
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

std::optional<SimTime> EventQueue::next_time() {
  if (live_ == 0) return std::nullopt;
  // live_ > 0 guarantees a live event below any cancelled ones, so this loop ends with one on top.
  while (!cancelled_.empty() && cancelled_.count(heap_.front().seq) != 0) {
    dropped_ahead_.push_back(pop_top().seq);
  }
  return heap_.front().t;
}

void EventQueue::forget_dropped() {
  for (const std::uint64_t seq : dropped_ahead_) cancelled_.erase(seq);
  dropped_ahead_.clear();
}

void EventQueue::clear() {
  heap_.clear();
  cancelled_.clear();
  dropped_ahead_.clear();
  live_ = 0;
  now_ = 0;
  last_seq_ = 0;
  first_seq_ = next_seq_;
}

}  // namespace zerosim
