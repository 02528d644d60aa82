// The planner's pieces shared between its files: make_plan evaluates the rows (planner.cc), the
// words around them are written here (plan_words.cc).
#pragma once

#include "zerosim/diagnostic.h"
#include "zerosim/planner.h"
#include "zerosim/saturating.h"

namespace zerosim::plan {

// A row's total per GPU, saturating at kBytesOverflow: MemoryReport::total() adds its layers with
// plain +, and a wrapped sum of exabyte-sized terms read as a few GiB that "fit". The planner
// decides fits, headroom and sweep cells on this sum; refuse_saturated turns a saturated one into
// an input error, so printed totals are exact.
inline Bytes total_of(const MemoryReport& m) {
  Bytes t = 0;
  for (Bytes b : {m.params, m.grads, m.optimizer_states, m.buffers, m.activations, m.overhead})
    t = saturating_add(t, b);
  return t;
}

/// The memory rule's recommendation: the lowest stage that fits, without offload when one does
/// (recommend_on_speed replaces it when speeds were predicted).
void recommend(PlanResult& out);
/// The time model of the timed rows, as `zerosim simulate` states it for the request's
/// micro-batch, and the note on which rows each figure times.
void add_time_model(PlanResult& out);
/// The request's notes and those of its accounting.
void add_notes(PlanResult& out);
/// Refuses a plan with a size that saturated at kBytesOverflow (an error in `diags`, true).
bool refuse_saturated(const PlanResult& out, Diagnostics& diags);

}  // namespace zerosim::plan
