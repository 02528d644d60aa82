// --trainer-config FILE (LLaMA-Factory / axolotl YAML, TrainingArguments JSON): what it resolves
// for plan, simulate, schedule and validate, and in which order. Each value comes from the flag,
// then the trainer config (what it writes, then the trainer's documented default), and a ds_config
// "auto" nothing else resolves takes TrainingArguments' default, as the Trainer fills it
// (transformers integrations/deepspeed.py trainer_config_process). Every resolved value gets a
// note naming where it came from; a flag that contradicts a value the file writes, and a file value
// that contradicts a ds_config's explicit one (the Trainer refuses that), is one error naming both.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "args.h"
#include "zerosim/diagnostic.h"
#include "zerosim/ds_config.h"
#include "zerosim/gpu_catalog.h"
#include "zerosim/model_desc.h"
#include "zerosim/trainer_config.h"

namespace zerosim::cli {

/// The flag's help line.
FlagSpec trainer_config_flag();

/// Values for the ds_config loader and the training settings, each already checked.
struct ResolvedTraining {
  AutoValues autos;                      ///< world_size and hidden_size filled by the caller
  std::optional<std::string> ds_config;  ///< the ds_config to load (flag or the file's deepspeed)
  std::optional<std::uint64_t> seq_len;
  bool activation_checkpointing = false;
  std::vector<std::string> notes;  ///< where each value came from, one line each
};

/// Loads --trainer-config when given, with the trainer's defaults applied (nullopt without it;
/// errors into `d`). Its not_modelled lines are the caller's to report as warnings.
std::optional<TrainerConfig> load_trainer_flag(const ParsedArgs& a, Diagnostics& d);

/// The model when no model flag is given and the trainer config names one: a directory or file
/// holding config.json (loaded as --hf-config), else a zoo name (Hugging Face ids are zoo aliases).
std::optional<Result<ModelDesc>> trainer_model(const TrainerConfig& t);

/// Resolves batch, GAS, clipping, precision (for the ds_config's "auto" entries), the ds_config
/// path, sequence length and checkpointing. `micro`...`clip` are the parsed flags.
bool resolve_training(const ParsedArgs& a, const TrainerConfig* t, const GpuSpec& gpu,
                      std::optional<std::uint64_t> micro, std::optional<std::uint64_t> gas,
                      std::optional<DType> precision, std::optional<double> clip,
                      std::optional<std::uint64_t> seq, ResolvedTraining& out, Diagnostics& d);

/// The attention kind ("flash" or "eager", --attention's values) the trainer config's attention key
/// gives (LLaMA-Factory flash_attn, axolotl/TRL attn_implementation), with a note; a contradicting
/// --attention is an error. Leaves `attention` (the flag's or the default) without such a key.
bool resolve_attention(const ParsedArgs& a, const TrainerConfig* t, std::string& attention,
                       std::vector<std::string>& notes, Diagnostics& d);

/// Why a stage 3 model of this trainer config is built under deepspeed.zero.Init: one note line.
std::string trainer_zero_init_note(const TrainerConfig& t);

/// LoRA from the trainer config merged with the LoRA flags (a flag contradicting a written value
/// is an error); applied to `model`. Returns false on error.
bool apply_trainer_lora(const ParsedArgs& a, const TrainerConfig& t, ModelDesc& model, DType lp,
                        std::vector<std::string>& notes, Diagnostics& d);

}  // namespace zerosim::cli
