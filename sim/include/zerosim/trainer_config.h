// Trainer configs: what a LLaMA-Factory or axolotl YAML file, or a JSON of Hugging Face
// TrainingArguments, says about the values a plan needs (model, precision, batch, clipping,
// sequence length, gradient checkpointing, LoRA, the ds_config path). Only what the file writes is
// kept, each value with the key it came from (`TrainerValue::key`, `where`), so the CLI can say
// where every resolved number came from and refuse a flag that contradicts the file. The trainers'
// own defaults for what the file leaves out are applied by `trainer_defaults` (documented there).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zerosim/diagnostic.h"
#include "zerosim/lora.h"
#include "zerosim/units.h"

namespace zerosim {

enum class TrainerFormat {
  LlamaFactory,           ///< YAML with model_name_or_path (llamafactory-cli train FILE)
  Axolotl,                ///< YAML with base_model (axolotl train FILE)
  TrainingArgumentsJson,  ///< JSON of transformers.TrainingArguments fields (HfArgumentParser)
  Trl  ///< TRL's SFTConfig + ModelConfig (`trl sft --config FILE`), YAML or JSON with a TRL key
};
std::string trainer_format_name(TrainerFormat f);

/// One value and where it was written: `key` as the file spells it, `where` the position
/// ("file:12:5" for YAML, "file" for JSON, with `pointer` "/key").
template <class T>
struct TrainerValue {
  T value{};
  std::string key;
  std::string where;
  std::string pointer;        ///< JSON pointer (JSON files); empty for YAML
  bool from_default = false;  ///< the trainer's documented default, not written in the file
};

struct TrainerConfig {
  std::string path;
  TrainerFormat format = TrainerFormat::LlamaFactory;
  std::optional<TrainerValue<std::string>> model;  ///< model_name_or_path / base_model
  std::optional<TrainerValue<DType>> precision;    ///< bf16 / fp16 (true), else fp32
  /// axolotl bf16: auto (written or its default): bf16 where the GPU has it, else fp16.
  std::optional<TrainerValue<bool>> bf16_auto;
  std::optional<TrainerValue<std::uint64_t>> micro_batch;  ///< per_device_train_batch_size
  std::optional<TrainerValue<std::uint64_t>> grad_accum;   ///< gradient_accumulation_steps
  std::optional<TrainerValue<double>> max_grad_norm;       ///< max_grad_norm
  std::optional<TrainerValue<std::uint64_t>> seq_len;      ///< cutoff_len / sequence_len
  std::optional<TrainerValue<bool>> gradient_checkpointing;
  /// Eager attention (stores the scores): LLaMA-Factory flash_attn: disabled, axolotl
  /// eager_attention / attn_implementation: eager, TRL attn_implementation: eager. False for the
  /// others the file names (sdpa, flash, flex, ...), which store no scores; unset: not written.
  std::optional<TrainerValue<bool>> eager_attention;
  // LoRA (LLaMA-Factory finetuning_type: lora, axolotl adapter: lora|qlora).
  std::optional<TrainerValue<bool>> lora;
  std::optional<TrainerValue<std::uint64_t>> lora_rank;
  std::optional<TrainerValue<std::vector<std::string>>> lora_targets;
  std::optional<TrainerValue<double>> lora_alpha;
  std::optional<TrainerValue<double>> lora_dropout;
  std::optional<TrainerValue<BaseQuantization>> quantization;
  std::optional<TrainerValue<std::string>> deepspeed;  ///< the ds_config path as written
  /// Keys that change memory or time that zerosim does not model (one line each, shown as
  /// warnings), e.g. axolotl lora_modules_to_save, sample_packing.
  std::vector<std::string> not_modelled;
};

/// The largest sequence length a trainer config may give (as --seq-len).
inline constexpr std::uint64_t kMaxTrainerSeqLen = std::uint64_t{1} << 24;

/// Parses a trainer config. The format comes from the extension and the keys: TRL when the file
/// has one of TRL's own keys (use_peft, lora_r, lora_target_modules, load_in_4bit, load_in_8bit,
/// max_length, dataset_name, attn_implementation) and none of LLaMA-Factory's; else .json:
/// TrainingArguments JSON; .yaml/.yml: LLaMA-Factory when it has model_name_or_path, axolotl when
/// it has base_model.
/// Every problem is one error naming the file, the line and column (YAML) or JSON pointer, the
/// key, what was expected and what was found.
Result<TrainerConfig> load_trainer_config_text(const std::string& text, const std::string& path);
Result<TrainerConfig> load_trainer_config_file(const std::string& path);

/// Fills what the file leaves out with the trainer's documented defaults (from_default = true).
/// TrainingArguments (LLaMA-Factory and the JSON format run it as written; transformers
/// training_args.py): per_device_train_batch_size 8, gradient_accumulation_steps 1, max_grad_norm
/// 1.0, bf16 and fp16 false (fp32), gradient_checkpointing false. LLaMA-Factory on top
/// (src/llamafactory/hparams at ff6d4d1): finetuning_type lora (finetuning_args.py:464),
/// lora_rank 8 (:77), lora_target all (:81), lora_alpha = 2 x rank (:587), cutoff_len 2048
/// (data_args.py:46), gradient checkpointing on unless disable_gradient_checkpointing
/// (model_args.py:145, model/model_utils/checkpointing.py:184). axolotl (src/axolotl/utils at
/// 067b021): micro_batch_size 1 and gradient_accumulation_steps 1 (schemas/training.py:71-77),
/// max_grad_norm unset (:264, so TrainingArguments' 1.0), sequence_len 512 (schemas/config.py:665),
/// gradient_checkpointing false (:600), bf16 auto (:559; bf16_auto, resolved by the caller from
/// the GPU as config/__init__.py:156 resolve_dtype does). TRL (trl v1.9.0, f2cd577) on top of
/// TrainingArguments: gradient_checkpointing true and bf16 true unless fp16
/// (trainer/base_config.py:61, :105), max_length 1024 (sft_config.py:205), use_peft false, lora_r
/// 16, lora_alpha 32, lora_dropout 0.05, lora_target_modules None: peft's per-model default
/// (model_config.py:103-122).
void trainer_defaults(TrainerConfig& c);

}  // namespace zerosim
