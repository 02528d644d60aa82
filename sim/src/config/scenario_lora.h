// The scenario file's "model": {"lora": {...}} block (scenarios/README.md), read into a LoraSpec.
#pragma once

#include <optional>

#include "base/json_reader.h"
#include "zerosim/lora.h"

namespace zerosim {

/// Reads `model`'s "lora" object when present: "rank" (required, 1..65536), "targets" (a list of
/// module names or the string "all-linear"; default peft's for the model type), "alpha",
/// "dropout" (0..1), "base_quantization" ("none" | "4bit" | "8bit"). Errors go to the reader's
/// diagnostics with their JSON pointers; nullopt when absent or broken.
std::optional<LoraSpec> read_scenario_lora(json::JsonReader& model);

}  // namespace zerosim
