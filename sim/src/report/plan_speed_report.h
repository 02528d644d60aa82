// The plan's predicted-speed block (planner.h RowSpeed), shared by the text and JSON reporters,
// and the offload label every plan table prints.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

#include "zerosim/planner.h"

namespace zerosim::report {

/// A row's offload as the plan's tables print it ("none", "optimizer->cpu", "opt+params->cpu").
const char* offload_label(OffloadVariant v);

/// One line per row with a speed: micro-batch, step time, tokens/s per GPU, MFU, and the
/// checkpointed alternative when simulated. Nothing when no row has a speed.
void write_plan_speeds(const PlanResult& p, std::ostream& out, bool markdown);

/// The "time model" block: each of PlanResult::time_model's notes after its basis ("[default]
/// compute: ..."). Nothing when no row is timed.
void write_time_model(const PlanResult& p, std::ostream& out);

/// PlanResult::time_model as JSON: [{"what", "basis", "source", "values": {name: number}, "text"}].
nlohmann::ordered_json time_model_json(const PlanResult& p);

/// {"micro_batch", "activation_checkpointing", "step_ns", "tokens_per_s", "mfu"} or null.
nlohmann::ordered_json row_speed_json(const std::optional<RowSpeed>& s);

}  // namespace zerosim::report
