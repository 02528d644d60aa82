// Reporters for `zerosim plan`: one PlanResult, four formats. The table is for people; JSON is the
// stable machine interface (documented in README.md, "format": "zerosim-plan", "version": 1); CSV
// and Markdown carry the same rows as the table.
#pragma once

#include <optional>
#include <ostream>
#include <string_view>

#include "zerosim/planner.h"

namespace zerosim {

enum class OutputFormat { Table, Json, Csv, Markdown };

/// "table", "json", "csv", "markdown" (also "md").
std::optional<OutputFormat> parse_output_format(std::string_view s);

/// Writes the plan. `verbose` adds the itemised memory breakdown and the ds_config keys that are
/// accepted but not modelled.
void write_plan(const PlanResult& plan, OutputFormat format, std::ostream& out, bool verbose);

}  // namespace zerosim
