// Trainer configs (zerosim/trainer_config.h): the format from the file, then each format's keys
// mapped onto one TrainerConfig. Keys a plan does not need (datasets, logging, output paths) are
// ignored, as a plan ignores them; keys that change memory or time but are not modelled become
// warnings (TrainerConfig::not_modelled), never a silent default.
#include "zerosim/trainer_config.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/json_reader.h"
#include "config/trainer_config_internal.h"
#include "zerosim/ds_config.h"

namespace zerosim {

std::string trainer_format_name(TrainerFormat f) {
  switch (f) {
    case TrainerFormat::LlamaFactory:
      return "LLaMA-Factory";
    case TrainerFormat::Axolotl:
      return "axolotl";
    case TrainerFormat::TrainingArgumentsJson:
      return "TrainingArguments JSON";
    case TrainerFormat::Trl:
      return "TRL";
  }
  return "?";
}

namespace {

using trainercfg::Entry;

constexpr std::uint64_t kMaxLoraRank = 65536;

/// The entries by key, and the typed reads that fill a TrainerValue with the entry's position.
struct Keys {
  std::map<std::string, const Entry*> by_key;
  Diagnostics& d;

  mutable std::set<std::string> asked;  ///< every key a reader looked for

  const Entry* find(const std::string& key) const {
    asked.insert(key);
    auto it = by_key.find(key);
    return it == by_key.end() || it->second->kind == Entry::Kind::Null ? nullptr : it->second;
  }
  template <class T>
  static TrainerValue<T> at(const Entry& e, T v) {
    TrainerValue<T> out;
    out.value = std::move(v);
    out.key = e.key;
    out.where = e.where;
    out.pointer = e.pointer;
    return out;
  }
  template <class T>
  void set(std::optional<TrainerValue<T>>& dst, const Entry& e, const std::optional<T>& v) const {
    if (v) dst = at(e, *v);
  }
  // A number key written as null (`~`, `null`, nothing): the trainer's dataclass gets None, not
  // its default, and zerosim planned the default without a word (found by a hostile-input pass).
  // Refused for the int fields None breaks (TrainingArguments' batch size and accumulation steps,
  // LLaMA-Factory's cutoff_len); an Optional field's null (lora_alpha: ~) is its default.
  bool refused_null(const std::string& key, const std::string& expected) const {
    static const std::set<std::string> kNotOptional = {"per_device_train_batch_size",
                                                       "gradient_accumulation_steps", "cutoff_len"};
    auto it = by_key.find(key);
    if (it == by_key.end() || it->second->kind != Entry::Kind::Null || !kNotOptional.count(key))
      return false;
    d.error(it->second->where, it->second->pointer,
            "expected " + expected + ", got null (the trainer would get None, not its default)");
    return true;
  }
  void uint(const std::string& key, std::uint64_t lo, std::uint64_t hi,
            std::optional<TrainerValue<std::uint64_t>>& dst) const {
    if (refused_null(key, "an integer " + std::to_string(lo) + ".." + std::to_string(hi))) return;
    if (const Entry* e = find(key)) set(dst, *e, trainercfg::as_uint(*e, lo, hi, d));
  }
  void number(const std::string& key, double lo, double hi, const std::string& range,
              std::optional<TrainerValue<double>>& dst) const {
    if (refused_null(key, "a number " + range)) return;
    if (const Entry* e = find(key)) set(dst, *e, trainercfg::as_number(*e, lo, hi, range, d));
  }
  std::optional<bool> boolean(const std::string& key) const {
    const Entry* e = find(key);
    return e ? trainercfg::as_bool(*e, d) : std::nullopt;
  }
  std::optional<std::string> string(const std::string& key) const {
    const Entry* e = find(key);
    return e ? trainercfg::as_string(*e, d) : std::nullopt;
  }
  bool is_true(const std::string& key) const {
    const Entry* e = find(key);
    if (!e) return false;
    Diagnostics quiet;
    auto v = trainercfg::as_bool(*e, quiet);
    return v.value_or(false);
  }
};

// Module names: a comma-separated string (LLaMA-Factory's lora_target, split at commas) or a list
// of names (axolotl's lora_target_modules).
std::optional<std::vector<std::string>> module_list(const Entry& e, Diagnostics& d) {
  std::vector<std::string> out;
  if (e.kind == Entry::Kind::Sequence && e.items_scalar && !e.items.empty()) {
    out = e.items;
  } else if (e.kind == Entry::Kind::Plain || e.kind == Entry::Kind::Quoted) {
    std::string cur;
    for (char c : e.text + ",") {
      if (c == ',') {
        if (!cur.empty()) out.push_back(cur);
        cur.clear();
      } else if (c != ' ') {
        cur += c;
      }
    }
  }
  // A name outside [A-Za-z0-9_.-] refuses the whole list (decided before clearing: clearing
  // `out` while iterating it freed the strings being read).
  const bool names_ok = std::all_of(out.begin(), out.end(), [](const std::string& m) {
    return std::all_of(m.begin(), m.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
    });
  });
  if (!names_ok) out.clear();
  if (out.empty()) {
    d.error(e.where, e.pointer,
            "expected module names such as q_proj,v_proj (a string or a list), got " + e.shown());
    return std::nullopt;
  }
  return out;
}

void precision(const Keys& k, TrainerConfig& c, bool bf16_may_be_auto) {
  const Entry* bf = k.find("bf16");
  const Entry* fp = k.find("fp16");
  std::optional<bool> bf16, fp16;
  if (bf && bf16_may_be_auto && bf->kind == Entry::Kind::Plain && bf->text == "auto") {
    c.bf16_auto = Keys::at(*bf, true);
  } else if (bf) {
    bf16 = trainercfg::as_bool(*bf, k.d);
  }
  if (fp) fp16 = trainercfg::as_bool(*fp, k.d);
  if (bf16.value_or(false) && fp16.value_or(false)) {
    // transformers training_args.py __post_init__: "At most one of fp16 and bf16 can be True".
    k.d.error(fp->where, fp->pointer,
              "expected at most one of bf16 and fp16 true (TrainingArguments refuses both), got "
              "both");
    return;
  }
  if (bf16.value_or(false))
    c.precision = Keys::at(*bf, DType::BFloat16);
  else if (fp16.value_or(false))
    c.precision = Keys::at(*fp, DType::Float16);
  else if (bf16 || fp16)
    c.precision = Keys::at(bf16 ? *bf : *fp, DType::Float32);
  if (fp16.value_or(false)) c.bf16_auto.reset();  // axolotl: fp16 with bf16 auto is fp16
}

// The optimizer the trainer builds when the ds_config has no "optimizer" block
// (TrainingArguments.optim; axolotl's optimizer): zerosim models AdamW's two fp32 states per
// parameter, so an 8-bit or a one-state optimizer (adamw_bnb_8bit, adafactor, sgd, lion_8bit)
// changes the memory. It was ignored without a word (found by a new-user pass).
void optimizer_name(const Keys& k, TrainerConfig& c) {
  static const char* const kAdamW32[] = {
      "adamw_torch",      "adamw_torch_fused", "adamw_torch_xla",   "adamw_torch_npu_fused",
      "adamw_apex_fused", "adamw_hf",          "paged_adamw_32bit", "adamw"};
  for (const char* key : {"optim", "optimizer"}) {
    const Entry* e = k.find(key);
    if (e == nullptr) continue;
    const auto v = trainercfg::as_string(*e, k.d);
    if (!v || std::find(std::begin(kAdamW32), std::end(kAdamW32), *v) != std::end(kAdamW32))
      continue;
    c.not_modelled.push_back(std::string(key) + ": " + e->shown() +
                             " (unless the ds_config has an optimizer block: zerosim models "
                             "AdamW's two fp32 states per parameter)");
  }
}

// An attn_implementation value (transformers' names; axolotl's and TRL's key): "eager" stores the
// attention scores, every other kernel (sdpa, flash_attention_2/3, flex_attention, xformers, sage,
// a hub kernel path) does not.
void attn_implementation(const Keys& k, TrainerConfig& c) {
  const Entry* e = k.find("attn_implementation");
  if (e == nullptr) return;
  if (auto v = trainercfg::as_string(*e, k.d)) c.eager_attention = Keys::at(*e, *v == "eager");
}

void common(const Keys& k, TrainerConfig& c) {
  optimizer_name(k, c);
  k.uint("gradient_accumulation_steps", 1, kMaxGradAccumSteps, c.grad_accum);
  k.number("max_grad_norm", 0, 1e9, "0..1e9", c.max_grad_norm);
  if (const Entry* e = k.find("deepspeed")) {
    if (e->kind == Entry::Kind::Mapping)
      k.d.error(e->where, e->pointer,
                "expected the path of a ds_config file, got a mapping (write the ds_config to a "
                "file and give its path)");
    else
      k.set(c.deepspeed, *e, trainercfg::as_string(*e, k.d));
  }
}

void llama_factory(const Keys& k, TrainerConfig& c) {
  if (auto m = k.string("model_name_or_path"))
    c.model = Keys::at(*k.find("model_name_or_path"), *m);
  precision(k, c, false);
  common(k, c);
  k.uint("per_device_train_batch_size", 1, kMaxMicroBatch, c.micro_batch);
  k.uint("cutoff_len", 1, kMaxTrainerSeqLen, c.seq_len);
  if (const Entry* e = k.find("disable_gradient_checkpointing"))
    if (auto v = trainercfg::as_bool(*e, k.d)) c.gradient_checkpointing = Keys::at(*e, !*v);
  // flash_attn (hparams/model_args.py:117, model/model_utils/attention.py:65): disabled loads the
  // model with eager attention; auto (transformers' default, sdpa), sdpa, fa2 and fa3 store no
  // scores. It was not read: flash_attn: disabled planned as flash (found by a new-user pass).
  if (const Entry* e = k.find("flash_attn")) {
    auto v = trainercfg::as_string(*e, k.d);
    if (v && *v != "auto" && *v != "disabled" && *v != "sdpa" && *v != "fa2" && *v != "fa3")
      k.d.error(e->where, e->pointer,
                "expected auto, disabled, sdpa, fa2 or fa3, got " + e->shown());
    else if (v)
      c.eager_attention = Keys::at(*e, *v == "disabled");
  }
  if (const Entry* e = k.find("finetuning_type")) {
    auto t = trainercfg::as_string(*e, k.d);
    if (t && *t != "lora" && *t != "full")
      k.d.error(e->where, e->pointer,
                "expected lora or full (freeze and oft are not modelled), got " + e->shown());
    else if (t)
      c.lora = Keys::at(*e, *t == "lora");
  }
  k.uint("lora_rank", 1, kMaxLoraRank, c.lora_rank);
  k.number("lora_alpha", 1e-9, 1e9, "> 0", c.lora_alpha);
  k.number("lora_dropout", 0, 0.999999, "0..1 (below 1)", c.lora_dropout);
  if (const Entry* e = k.find("lora_target"))
    if (auto t = module_list(*e, k.d)) {
      // LLaMA-Factory's "all": every Linear but the output layer, peft's all-linear
      // (model/adapter.py:229, find_all_linear_modules).
      if (t->size() == 1 && (*t)[0] == "all") *t = {"all-linear"};
      c.lora_targets = Keys::at(*e, *t);
    }
  if (const Entry* e = k.find("quantization_bit")) {
    auto bits = trainercfg::as_uint(*e, 0, 64, k.d);
    if (bits && *bits != 4 && *bits != 8)
      k.d.error(e->where, e->pointer,
                "expected 4 or 8 (bitsandbytes NF4 or int8; hqq's 2 and 3 bits are not "
                "modelled), got " +
                    e->shown());
    else if (bits)
      c.quantization = Keys::at(*e, *bits == 4 ? BaseQuantization::Nf4 : BaseQuantization::Int8);
  }
  if (auto m = k.string("quantization_method"); m && *m != "bnb")
    k.d.error(k.find("quantization_method")->where, "quantization_method",
              "expected bnb (bitsandbytes; hqq and eetq are not modelled), got " +
                  k.find("quantization_method")->shown());
  for (const char* key : {"pure_bf16", "fp8", "use_galore", "use_badam", "use_apollo", "use_dora",
                          "use_unsloth", "packing"})
    if (k.is_true(key)) c.not_modelled.push_back(std::string(key) + ": true");
  if (const Entry* e = k.find("additional_target"))
    c.not_modelled.push_back("additional_target: " + e->shown() + " (fully trained modules)");
}

// axolotl's attention (schemas/config.py:1527 normalize_attn_implementation, :1592
// validate_attn_implementation, enums.py:104-132): attn_implementation, a canonical name or a
// hub-kernel path, alone; else the first legacy flag set, in axolotl's priority order (eager last).
void axolotl_attention(const Keys& k, TrainerConfig& c) {
  static const char* const kLegacy[] = {"xformers_attention", "sage_attention", "flex_attention",
                                        "flash_attention",    "sdp_attention",  "eager_attention"};
  const Entry* first = nullptr;
  for (const char* flag : kLegacy)
    if (k.is_true(flag) && first == nullptr) first = k.find(flag);
  if (const Entry* e = k.find("attn_implementation")) {
    if (first != nullptr) {
      k.d.error(e->where, e->pointer,
                "attn_implementation cannot be combined with the legacy flag " + first->key +
                    " (axolotl refuses it: set only attn_implementation)");
      return;
    }
    const auto v = trainercfg::as_string(*e, k.d);
    static const char* const kCanonical[] = {
        "eager", "sdpa", "flash_attention_2", "flash_attention_3", "flex_attention", "xformers",
        "sage",  "fp8"};
    if (v && v->find('/') == std::string::npos &&
        std::find_if(std::begin(kCanonical), std::end(kCanonical),
                     [&](const char* n) { return *v == n; }) == std::end(kCanonical)) {
      k.d.error(e->where, e->pointer,
                "expected eager, sdpa, flash_attention_2, flash_attention_3, flex_attention, "
                "xformers, sage, fp8 or a hub-kernel path (axolotl refuses other names), got " +
                    e->shown());
      return;
    }
    if (v) c.eager_attention = Keys::at(*e, *v == "eager");
    return;
  }
  if (first != nullptr) c.eager_attention = Keys::at(*first, first->key == "eager_attention");
}

// load_in_4bit / load_in_8bit (axolotl's and TRL's ModelConfig keys): the base's quantization.
std::pair<std::optional<bool>, std::optional<bool>> load_in_bits(const Keys& k, TrainerConfig& c) {
  std::optional<bool> in4 = k.boolean("load_in_4bit");
  std::optional<bool> in8 = k.boolean("load_in_8bit");
  if (in4.value_or(false) && in8.value_or(false))
    k.d.error(k.find("load_in_8bit")->where, "load_in_8bit",
              "expected at most one of load_in_4bit and load_in_8bit true, got both");
  else if (in4.value_or(false))
    c.quantization = Keys::at(*k.find("load_in_4bit"), BaseQuantization::Nf4);
  else if (in8.value_or(false))
    c.quantization = Keys::at(*k.find("load_in_8bit"), BaseQuantization::Int8);
  return {in4, in8};
}

// axolotl's batch keys (src/axolotl at 067b021): at least two of micro_batch_size,
// gradient_accumulation_steps and batch_size (schemas/validation.py:220 check_batch_size_fields),
// not both of the last two (:274 check_gas_bsz), and the accumulation from batch_size //
// micro_batch_size when only batch_size is given (utils/config/__init__.py:202 normalize_config).
// batch_size was not read: a file with micro_batch_size 2 and batch_size 32 was planned with one
// micro-step instead of 16 (found by a new-user pass).
void axolotl_batch(const Keys& k, TrainerConfig& c) {
  std::optional<TrainerValue<std::uint64_t>> batch;
  k.uint("batch_size", 1, kMaxMicroBatch * kMaxGradAccumSteps, batch);
  const char* const fields[] = {"micro_batch_size", "gradient_accumulation_steps", "batch_size"};
  int set = 0;
  for (const char* f : fields) set += k.find(f) != nullptr ? 1 : 0;
  if (set < 2 && !k.d.has_errors()) {
    k.d.error(c.path, "",
              "expected at least two of micro_batch_size, gradient_accumulation_steps and "
              "batch_size, got " +
                  std::to_string(set) + " (axolotl refuses the file: check_batch_size_fields)");
    return;
  }
  if (!batch) return;
  if (c.grad_accum) {
    k.d.error(batch->where, batch->pointer,
              "expected only one of gradient_accumulation_steps and batch_size, got both "
              "(axolotl: \"please set only one of gradient_accumulation_steps or batch_size\")");
    return;
  }
  if (!c.micro_batch) return;  // an error already
  const std::uint64_t gas = batch->value / c.micro_batch->value;
  if (gas == 0 || gas > kMaxGradAccumSteps) {
    k.d.error(batch->where, batch->pointer,
              "expected batch_size // micro_batch_size in 1.." +
                  std::to_string(kMaxGradAccumSteps) + " (axolotl's gradient accumulation), got " +
                  std::to_string(batch->value) + " // " + std::to_string(c.micro_batch->value) +
                  " = " + std::to_string(gas));
    return;
  }
  c.grad_accum = *batch;
  c.grad_accum->value = gas;
  c.grad_accum->key = "batch_size " + std::to_string(batch->value) + " // micro_batch_size " +
                      std::to_string(c.micro_batch->value);
}

void axolotl(const Keys& k, TrainerConfig& c) {
  if (auto m = k.string("base_model")) c.model = Keys::at(*k.find("base_model"), *m);
  precision(k, c, true);
  common(k, c);
  k.uint("micro_batch_size", 1, kMaxMicroBatch, c.micro_batch);
  axolotl_batch(k, c);
  k.uint("sequence_len", 1, kMaxTrainerSeqLen, c.seq_len);
  if (const Entry* e = k.find("gradient_checkpointing")) {
    if (e->kind == Entry::Kind::Plain && (e->text == "offload" || e->text == "offload_disk")) {
      c.gradient_checkpointing = Keys::at(*e, true);
      c.not_modelled.push_back("gradient_checkpointing: " + e->text +
                               " (checkpoints kept on host or disk; planned as on GPU)");
    } else if (auto v = trainercfg::as_bool(*e, k.d)) {
      c.gradient_checkpointing = Keys::at(*e, *v);
    }
  }
  axolotl_attention(k, c);
  const auto [in4, in8] = load_in_bits(k, c);
  if (const Entry* e = k.find("adapter")) {
    auto a = trainercfg::as_string(*e, k.d);
    if (a && *a != "lora" && *a != "qlora") {
      k.d.error(e->where, e->pointer,
                "expected lora or qlora (other adapters are not modelled), got " + e->shown());
    } else if (a) {
      c.lora = Keys::at(*e, true);
      // axolotl refuses qlora without 4-bit loading (utils/schemas validation:
      // "Require cfg.load_in_4bit to be True for qlora").
      if (*a == "qlora" && !in4.value_or(false))
        k.d.error(e->where, e->pointer,
                  "qlora needs load_in_4bit: true (axolotl refuses it otherwise)");
    }
  }
  k.uint("lora_r", 1, kMaxLoraRank, c.lora_rank);
  k.number("lora_alpha", 1e-9, 1e9, "> 0", c.lora_alpha);
  k.number("lora_dropout", 0, 0.999999, "0..1 (below 1)", c.lora_dropout);
  if (k.is_true("lora_target_linear")) {
    c.lora_targets =
        Keys::at(*k.find("lora_target_linear"), std::vector<std::string>{"all-linear"});
  } else if (const Entry* e = k.find("lora_target_modules")) {
    if (auto t = module_list(*e, k.d)) c.lora_targets = Keys::at(*e, *t);
  }
  if (c.lora && !c.lora_rank)
    k.d.error(k.find("adapter")->where, "adapter",
              k.find("adapter")->text + " needs lora_r (the adapters' rank)");
  for (const char* key : {"sample_packing", "fp8", "unfrozen_parameters"})
    if (k.is_true(key)) c.not_modelled.push_back(std::string(key) + ": true");
  if (const Entry* e = k.find("lora_modules_to_save"))
    c.not_modelled.push_back("lora_modules_to_save: " + e->shown() +
                             " (fully trained copies of those modules)");
  if (k.find("fsdp") || k.find("fsdp_config"))
    c.not_modelled.push_back("fsdp (FSDP instead of DeepSpeed)");
}

void training_arguments(const Keys& k, TrainerConfig& c) {
  if (auto m = k.string("model_name_or_path"))
    c.model = Keys::at(*k.find("model_name_or_path"), *m);
  precision(k, c, false);
  common(k, c);
  k.uint("per_device_train_batch_size", 1, kMaxMicroBatch, c.micro_batch);
  if (const Entry* e = k.find("gradient_checkpointing"))
    if (auto v = trainercfg::as_bool(*e, k.d)) c.gradient_checkpointing = Keys::at(*e, *v);
  // TRL's SFTConfig extends TrainingArguments with the sequence length.
  k.uint("max_seq_length", 1, kMaxTrainerSeqLen, c.seq_len);
}

// TRL (`trl sft --config`, trl v1.9.0 f2cd577): SFTConfig is TrainingArguments plus max_length;
// ModelConfig (trainer/model_config.py) gives the adapters and the base's quantization, which
// get_peft_config / get_quantization_config (trainer/utils.py:235-277) hand to peft and
// bitsandbytes. Such a file was read as LLaMA-Factory (YAML: LoRA rank 8 and checkpointing from
// LLaMA-Factory's defaults, use_peft and max_length dropped) or as bare TrainingArguments (JSON:
// a QLoRA job planned as a full fine-tune), without a word (found by a new-user pass).
void trl(const Keys& k, TrainerConfig& c) {
  training_arguments(k, c);
  // bf16 not written is `not fp16` (base_config.py:105): fp16: false alone trains in bf16.
  if (!k.find("bf16") && c.precision && c.precision->value == DType::Float32) c.precision.reset();
  if (auto it = k.by_key.find("max_length");
      it != k.by_key.end() && it->second->kind == Entry::Kind::Null) {
    k.d.error(it->second->where, it->second->pointer,
              "expected an integer 1.." + std::to_string(kMaxTrainerSeqLen) +
                  ", got null (TRL then truncates nothing: the sequence length is the longest "
                  "sample's; write it)");
  }
  k.uint("max_length", 1, kMaxTrainerSeqLen, c.seq_len);
  attn_implementation(k, c);
  if (const Entry* e = k.find("use_peft"))
    if (auto v = trainercfg::as_bool(*e, k.d)) c.lora = Keys::at(*e, *v);
  k.uint("lora_r", 1, kMaxLoraRank, c.lora_rank);
  k.number("lora_alpha", 1e-9, 1e9, "> 0", c.lora_alpha);
  k.number("lora_dropout", 0, 0.999999, "0..1 (below 1)", c.lora_dropout);
  if (const Entry* e = k.find("lora_target_modules")) {
    if (auto t = module_list(*e, k.d)) c.lora_targets = Keys::at(*e, *t);
  }
  load_in_bits(k, c);
  // get_quantization_config (trainer/utils.py:235): double quantization only with
  // use_bnb_nested_quant (default false); zerosim plans double-quantized constants (as axolotl
  // and LLaMA-Factory build them).
  if (c.quantization && c.quantization->value == BaseQuantization::Nf4 &&
      !k.is_true("use_bnb_nested_quant"))
    c.not_modelled.push_back(
        "use_bnb_nested_quant not true: TRL keeps the 4-bit absmax constants in fp32 (about 0.06 "
        "bytes per weight; zerosim plans them double-quantized, about 0.02)");
  for (const char* key :
       {"use_dora", "packing", "padding_free", "activation_offloading", "use_liger_kernel"})
    if (k.is_true(key)) c.not_modelled.push_back(std::string(key) + ": true");
  for (const char* key : {"lora_modules_to_save", "lora_target_parameters"})
    if (const Entry* e = k.find(key))
      c.not_modelled.push_back(std::string(key) + ": " + e->shown() + " (more trained weights)");
}

// The keys that say which trainer reads a file that names its model with model_name_or_path:
// TRL's ModelConfig / SFTConfig / ScriptArguments, and LLaMA-Factory's own hparams.
bool has_any(const Keys& k, std::initializer_list<const char*> keys) {
  return std::any_of(keys.begin(), keys.end(),
                     [&](const char* key) { return k.by_key.count(key); });
}
const std::initializer_list<const char*> kTrlKeys = {
    "use_peft",     "lora_r",     "lora_target_modules", "load_in_4bit",
    "load_in_8bit", "max_length", "dataset_name",        "attn_implementation"};
const std::initializer_list<const char*> kLlamaFactoryKeys = {"finetuning_type",
                                                              "stage",
                                                              "template",
                                                              "cutoff_len",
                                                              "lora_rank",
                                                              "lora_target",
                                                              "quantization_bit",
                                                              "dataset",
                                                              "dataset_dir",
                                                              "flash_attn",
                                                              "disable_gradient_checkpointing"};

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

Result<TrainerConfig> load_trainer_config_text(const std::string& text, const std::string& path) {
  Diagnostics d;
  std::vector<Entry> entries;
  TrainerConfig c;
  c.path = path;
  const bool json = ends_with(path, ".json");
  if (!json && !ends_with(path, ".yaml") && !ends_with(path, ".yml"))
    return fail<TrainerConfig>(
        path, "",
        "unknown trainer config format: expected a .yaml/.yml file "
        "(LLaMA-Factory, axolotl, TRL) or a .json of TrainingArguments (or TRL's)");
  if (!(json ? trainercfg::read_json_entries(text, path, entries, d)
             : trainercfg::read_yaml_entries(text, path, entries, d)))
    return Result<TrainerConfig>(d);
  Keys k{{}, d, {}};
  for (const auto& e : entries) k.by_key[e.key] = &e;
  const bool trl_keys = has_any(k, kTrlKeys) && !has_any(k, kLlamaFactoryKeys);
  if (trl_keys && (json || k.by_key.count("model_name_or_path"))) {
    c.format = TrainerFormat::Trl;
  } else if (json) {
    c.format = TrainerFormat::TrainingArgumentsJson;
  } else if (k.by_key.count("model_name_or_path")) {
    c.format = TrainerFormat::LlamaFactory;
  } else if (k.by_key.count("base_model")) {
    c.format = TrainerFormat::Axolotl;
  } else {
    return fail<TrainerConfig>(path, "",
                               "unknown trainer config format: expected model_name_or_path "
                               "(LLaMA-Factory, TRL) or base_model (axolotl)");
  }
  switch (c.format) {
    case TrainerFormat::LlamaFactory:
      llama_factory(k, c);
      break;
    case TrainerFormat::Axolotl:
      axolotl(k, c);
      break;
    case TrainerFormat::TrainingArgumentsJson:
      training_arguments(k, c);
      break;
    case TrainerFormat::Trl:
      trl(k, c);
      break;
  }
  // A key one or two edits from a key zerosim reads, which the file does not set, is a typo: the
  // trainer refuses keys it does not know (HfArgumentParser, allow_extra_keys=False), while
  // zerosim took the default of the key meant (per_device_train_batchsize: 16 planned 8). The
  // other unknown keys are the trainer's own (dataset, output_dir, ...), which zerosim does not
  // list, so they pass.
  for (const Entry& e : entries) {
    if (k.asked.count(e.key) || e.key.size() < 6) continue;
    for (const std::string& key : k.asked)
      if (!k.by_key.count(key) && edit_distance(e.key, key) <= 2) {
        std::string m = "unknown key; did you mean " + key;
        m += "? (" + key + " takes its default here; the trainer refuses a key it does not know)";
        d.warning(e.where, e.pointer, m);
        break;
      }
  }
  if (d.has_errors()) return Result<TrainerConfig>(d);
  return Result<TrainerConfig>(std::move(c), d);
}

Result<TrainerConfig> load_trainer_config_file(const std::string& path) {
  Diagnostics d;
  std::string text;
  if (!json::read_file(path, text, d)) return Result<TrainerConfig>(d);
  return load_trainer_config_text(text, path);
}

namespace {

template <class T>
void fill(std::optional<TrainerValue<T>>& dst, T v, const std::string& key) {
  if (dst) return;
  TrainerValue<T> out;
  out.value = std::move(v);
  out.key = key;
  out.from_default = true;
  dst = std::move(out);
}

}  // namespace

void trainer_defaults(TrainerConfig& c) {
  switch (c.format) {
    case TrainerFormat::LlamaFactory:
      fill(c.lora, true, "finetuning_type");
      fill(c.seq_len, std::uint64_t{2048}, "cutoff_len");
      fill(c.gradient_checkpointing, true, "disable_gradient_checkpointing");
      if (c.lora->value) {
        fill(c.lora_rank, std::uint64_t{8}, "lora_rank");
        fill(c.lora_targets, std::vector<std::string>{"all-linear"}, "lora_target");
        fill(c.lora_alpha, 2.0 * static_cast<double>(c.lora_rank->value), "lora_alpha");
      }
      [[fallthrough]];
    case TrainerFormat::Trl:
      if (c.format == TrainerFormat::Trl) {
        fill(c.seq_len, std::uint64_t{1024}, "max_length");
        fill(c.gradient_checkpointing, true, "gradient_checkpointing");
        // bf16 = not fp16 when bf16 is not written (base_config.py:105).
        if (!c.precision) fill(c.precision, DType::BFloat16, "bf16");
        fill(c.lora, false, "use_peft");
        if (c.lora->value) {
          fill(c.lora_rank, std::uint64_t{16}, "lora_r");
          fill(c.lora_alpha, 32.0, "lora_alpha");
          fill(c.lora_dropout, 0.05, "lora_dropout");
        }
      }
      [[fallthrough]];
    case TrainerFormat::TrainingArgumentsJson:
      fill(c.micro_batch, std::uint64_t{8}, "per_device_train_batch_size");
      fill(c.grad_accum, std::uint64_t{1}, "gradient_accumulation_steps");
      fill(c.max_grad_norm, 1.0, "max_grad_norm");
      fill(c.precision, DType::Float32, "bf16/fp16");
      fill(c.gradient_checkpointing, false, "gradient_checkpointing");
      break;
    case TrainerFormat::Axolotl:
      fill(c.micro_batch, std::uint64_t{1}, "micro_batch_size");
      fill(c.grad_accum, std::uint64_t{1}, "gradient_accumulation_steps");
      fill(c.max_grad_norm, 1.0, "max_grad_norm");
      fill(c.seq_len, std::uint64_t{512}, "sequence_len");
      fill(c.gradient_checkpointing, false, "gradient_checkpointing");
      if (!c.precision) fill(c.bf16_auto, true, "bf16");  // schemas/config.py:559
      break;
  }
}

}  // namespace zerosim
