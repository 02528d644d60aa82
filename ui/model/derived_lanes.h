// Rows the viewer derives rather than reads off one stream (issue #9 "lanes per rank"):
//   * the IPG bucket fill: per bucket flush, the CopyToBucket spans that filled it (which
//     parameters' gradients went in, how many bytes), when it flushed (the first other op of that
//     bucket: the flatten/staging copy or the collective), and the collective it fed, which the
//     drawing joins to the fill with a flow line (as the Chrome export's s/f flow does);
//   * stage 3 parameter gathers and releases: a gather is an all-gather of parameters (the
//     "fetch ..." collectives on the gather stream, the post-step gathers), marked where it ends
//     (the parameters are then usable); a release is a drop of the rank's gathered_param bytes in
//     its memory curve (the trace records no Free spans: the simulator folds allocations into the
//     memory counters, a measured run has only the allocator's curve), marked with the bytes freed
//     and the all-gathers whose parameters it frees: the rise of the gathered bytes in one instant
//     (a module's parameters) is the earliest unclaimed all-gather of that many bytes started by
//     then, and the drop in one instant frees the oldest gathered buffers of exactly that many
//     bytes (one, or a run of them), as DeepSpeed releases modules in the order it fetched them.
// Both are sorted by time so a frame finds the visible ones by binary search.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "zerosim/trace.h"

namespace zerosim::view {

/// One flush of an IPG bucket: spans of one (step, micro_step, bucket) key.
struct BucketFill {
  std::uint32_t step = 0;
  std::uint32_t micro_step = 0;
  std::uint32_t bucket = 0;           ///< Span::bucket (the flush number)
  SimTime start_ns = 0;               ///< first copy's start
  SimTime end_ns = 0;                 ///< last copy's end
  std::vector<std::uint32_t> copies;  ///< CopyToBucket spans (indices into Trace::spans), by start
  Bytes bytes = 0;                    ///< Σ the copies' bytes
  SimTime flush_ns = kNoTime;         ///< start of the bucket's first non-copy op (kNoTime: none)
  std::uint32_t collective = kNone;   ///< the bucket's first collective span (kNone: none)
};

/// The fills among `spans` (indices into trace.spans): one per key with at least one copy, by
/// start (then bucket). O(n log n).
std::vector<BucketFill> bucket_fills(const Trace& trace, const std::vector<std::uint32_t>& spans);

/// The parameter a CopyToBucket span copies, from its label: "copy NAME into ipg[0]" and
/// "grad NAME into IPG [a:b]" give NAME; any other label is returned whole.
std::string bucket_param_name(const Span& copy);

struct ParamEvent {
  enum class Kind : std::uint8_t { Gather, Release };
  Kind kind = Kind::Gather;
  SimTime t = 0;               ///< gather: the all-gather's end; release: the sample's time
  Bytes bytes = 0;             ///< gather: the collective's S; release: gathered bytes freed
  std::uint32_t span = kNone;  ///< gather: the all-gather span
  Bytes gathered_after = 0;    ///< release: gathered_param bytes left afterwards
  /// Release: the all-gather spans whose parameters it frees, oldest first (empty: no gathered
  /// buffers of exactly the bytes freed).
  std::vector<std::uint32_t> released;
};

/// The parameters an all-gather span fetches, from its label: "fetch fwd M: P" and "fetch bwd M: P"
/// give "M: P", "prefetch: P" gives P, "post-step gather of persistent P" gives P; any other label
/// is returned whole.
std::string gathered_params_name(const Span& gather);

/// Stage 3 only (trace.meta.stage == 3; otherwise empty): the gathers among `spans` (all-gather
/// collectives) and the releases in `rank`'s memory curve (the drops of the samples at one ns added
/// up), by time
/// (gathers before releases at the same ns).
std::vector<ParamEvent> param_events(const Trace& trace, const TraceRank& rank,
                                     const std::vector<std::uint32_t>& spans);

/// Index of the first element of `items` (sorted by `time_of`) at or after `t`.
template <typename T, typename F>
std::size_t first_at_or_after(const std::vector<T>& items, SimTime t, F time_of) {
  std::size_t lo = 0, hi = items.size();
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (time_of(items[mid]) < t) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

}  // namespace zerosim::view
