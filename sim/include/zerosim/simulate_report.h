// Reporter for `zerosim simulate`: one simulated run, as text for people or as the summary JSON
// (trace.h, "format": "zerosim-summary", "version": 1) for machines. Lives beside the plan's
// reporters (plan_report.h) so a front end only parses flags, simulates and calls it.
#pragma once

#include <ostream>

#include "zerosim/plan_report.h"
#include "zerosim/schedule.h"
#include "zerosim/time_model.h"
#include "zerosim/trace.h"

namespace zerosim {

/// Writes the report of a simulation of `schedule` whose summary is `summary`. Table: the run, time
/// per step (compute, exposed communication and offload), traffic per collective kind, peak and
/// steady device memory per rank role (the first eight roles and the largest), the OOM with a
/// zero.Init hint when it happens while the whole unpartitioned model is live, then the summary's
/// notes. Json: write_summary_json. Precondition: `format` is Table or Json.
/// `speed` (step_speed, time_model.h), when given, adds the steady step's speed to the table: step
/// time in human units, tokens/s and model FLOPs utilisation (the JSON summary carries the times).
void write_simulate_report(const Summary& summary, const Schedule& schedule, OutputFormat format,
                           std::ostream& out, const StepSpeed* speed = nullptr);

}  // namespace zerosim
