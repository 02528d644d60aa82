// The LoRA / QLoRA flags of plan, simulate and schedule (zerosim/lora.h): parsed, checked and
// applied to the loaded model, after the DeepSpeed config fixed the LP dtype that packed 4-bit
// storage is counted in.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "args.h"
#include "zerosim/diagnostic.h"
#include "zerosim/lora.h"
#include "zerosim/model_desc.h"
#include "zerosim/units.h"

namespace zerosim::cli {

/// --lora-rank, --lora-targets, --lora-alpha, --lora-dropout, --base-quantization.
std::vector<FlagSpec> lora_flag_specs();

/// True when any of the LoRA flags is given.
bool has_lora_flags(const ParsedArgs& a);

/// The LoRA flags' values, each checked (one error naming its flag); absent flags stay nullopt.
struct LoraFlagValues {
  std::optional<std::uint64_t> rank;
  std::optional<std::vector<std::string>> targets;
  std::optional<double> alpha, dropout;
  std::optional<BaseQuantization> quantization;
};
bool parse_lora_flags(const ParsedArgs& a, LoraFlagValues& v, Diagnostics& d);

/// Replaces `model` with its LoRA-adapted form when --lora-rank is given; every flag problem (a
/// value, a flag without --lora-rank, a target matching nothing) is one error naming its flag.
/// Returns false on error. `lp` is the LP dtype.
bool apply_lora_flags(const ParsedArgs& a, ModelDesc& model, DType lp, Diagnostics& d);

/// What gave the base its quantization, for an error about it: --base-quantization when given,
/// else the trainer config or the scenario (/model/lora/base_quantization) that names it.
std::string base_quantization_source(const ParsedArgs& a);

}  // namespace zerosim::cli
