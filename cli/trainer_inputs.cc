// --trainer-config resolution (trainer_inputs.h). The order is the Hugging Face Trainer's: flags
// stand for TrainingArguments given on the command line, the file for the arguments it writes,
// then the trainer's defaults; the ds_config's "auto" entries take the result
// (transformers integrations/deepspeed.py at 0234833: trainer_config_process:132 fills
// train_micro_batch_size_per_gpu :140, gradient_accumulation_steps :146, train_batch_size :151,
// gradient_clipping :157, fp16.enabled :185, bf16.enabled :196), and an explicit ds_config value
// that differs is refused as fill_match does (:128, "Please correct the following DeepSpeed config
// values that mismatch TrainingArguments values").
#include "trainer_inputs.h"

#include <sys/stat.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "lora_flags.h"
#include "zerosim/input_file.h"
#include "zerosim/lora.h"
#include "zerosim/model_loader.h"

namespace zerosim::cli {

FlagSpec trainer_config_flag() {
  return {"--trainer-config", "FILE",
          "LLaMA-Factory, axolotl or TRL YAML, or a TrainingArguments (or TRL) JSON: model, "
          "precision, batch, "
          "GAS, clipping, sequence length, checkpointing, LoRA and the ds_config in one go"};
}

namespace {

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::string fmt(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

std::string dtype_word(DType t) {
  return t == DType::BFloat16 ? "bf16" : t == DType::Float16 ? "fp16" : "fp32";
}

template <class T>
std::string origin(const TrainerConfig& t, const TrainerValue<T>& v) {
  if (v.from_default) {
    const bool hf =
        v.key == "max_grad_norm" ||
        (t.format != TrainerFormat::Axolotl &&
         (v.key == "per_device_train_batch_size" || v.key == "gradient_accumulation_steps" ||
          v.key == "max_grad_norm" || v.key == "bf16/fp16" ||
          (v.key == "gradient_checkpointing" && t.format != TrainerFormat::Trl)));
    return (hf ? std::string("TrainingArguments") : trainer_format_name(t.format)) + " default " +
           v.key + " (the file does not set it)";
  }
  return v.where + (v.pointer.empty() || v.pointer[0] != '/' ? " " + v.key : " " + v.pointer);
}

/// origin() for a note: the trainer config's folder is left out (the first note names the file).
template <class T>
std::string noted(const TrainerConfig& t, const TrainerValue<T>& v) {
  std::string o = origin(t, v);
  const auto slash = t.path.find_last_of('/');
  if (slash != std::string::npos && o.compare(0, t.path.size(), t.path) == 0)
    o = t.path.substr(slash + 1) + o.substr(t.path.size());
  return o;
}

/// How a ds_config writes one key: absent, "auto", or a value.
struct DsKey {
  bool present = false;
  bool is_auto = false;
  nlohmann::json value;
};

DsKey ds_key(const nlohmann::json& root, const std::string& pointer) {
  DsKey k;
  const nlohmann::json::json_pointer p(pointer);
  if (!root.is_object() || !root.contains(p)) return k;
  k.present = true;
  k.value = root.at(p);
  k.is_auto = k.value.is_string() && k.value.get<std::string>() == "auto";
  return k;
}

/// One batch-like count: flag, then trainer value; a written trainer value that the flag
/// contradicts, or that contradicts an explicit ds_config value, is an error.
struct Count {
  const char* flag;
  const char* ds_pointer;
  std::uint64_t hf_default;
  const char* hf_key;
  const char* hf_line;
};

template <class T>
bool differs(const T& a, const T& b) {
  return a != b;
}

template <class T>
std::string show(const T& v) {
  if constexpr (std::is_same_v<T, double>)
    return fmt(v);
  else if constexpr (std::is_same_v<T, DType>)
    return dtype_word(v);
  else
    return std::to_string(v);
}

/// The flag against the trainer value: a written value that differs is refused.
template <class T>
bool flag_against_file(const TrainerConfig* t, const std::optional<TrainerValue<T>>& tv,
                       const std::string& flag, const std::optional<T>& fv, Diagnostics& d) {
  if (!t || !tv || !fv || tv->from_default || !differs(*fv, tv->value)) return true;
  d.error(flag, "",
          "conflicts with " + origin(*t, *tv) + " = " + show(tv->value) + " (got " + show(*fv) +
              "); change one of them");
  return false;
}

/// The trainer value against an explicit ds_config value (fill_match's mismatch).
template <class T>
bool file_against_ds(const TrainerConfig& t, const TrainerValue<T>& tv, const std::string& ds_path,
                     const std::string& pointer, const std::string& ds_shown, Diagnostics& d) {
  const std::string what = tv.from_default ? "TrainingArguments' default " + tv.key + " = " : "";
  d.error(tv.from_default ? t.path : tv.where, tv.from_default ? "" : tv.pointer,
          what + show(tv.value) + " mismatches " + ds_path + " " + pointer + " = " + ds_shown +
              "; the Trainer refuses DeepSpeed config values that mismatch TrainingArguments "
              "(transformers integrations/deepspeed.py:128)",
          "set it to \"auto\" in the ds_config or change one of them");
  return false;
}

std::string resolve_ds_path(const TrainerConfig& t, Diagnostics& d) {
  const std::string& p = t.deepspeed->value;
  if (!p.empty() && p[0] == '/') {
    if (exists(p)) return p;
  } else {
    // The trainers open it from the working directory (their repository root in their examples);
    // a copied config keeps the layout, so the config's own directory and its parents are tried
    // next, nearest first.
    if (exists(p)) return p;
    std::string dir = t.path;
    for (;;) {
      const auto slash = dir.find_last_of('/');
      if (slash == std::string::npos) break;
      dir = dir.substr(0, slash);
      std::string c = dir.empty() ? std::string("/") : dir + "/";
      c += p;
      if (exists(c)) return c;
      if (dir.empty()) break;
    }
  }
  d.error(t.deepspeed->where, t.deepspeed->pointer,
          "ds_config " + quote(p) +
              " not found (looked in the working directory, then beside the trainer config and in "
              "its parent directories)");
  return "";
}

}  // namespace

std::optional<TrainerConfig> load_trainer_flag(const ParsedArgs& a, Diagnostics& d) {
  if (!a.has("--trainer-config")) return std::nullopt;
  auto t = load_trainer_config_file(*a.get("--trainer-config"));
  d.append(t.diagnostics());
  if (!t.ok()) return std::nullopt;
  TrainerConfig c = std::move(t.value());
  trainer_defaults(c);
  return c;
}

std::optional<Result<ModelDesc>> trainer_model(const TrainerConfig& t) {
  if (!t.model) return std::nullopt;
  const std::string& name = t.model->value;
  if (exists(name)) return load_hf_config_file(name);
  auto m = load_zoo_model(name);
  if (m.ok()) return m;
  return fail<ModelDesc>(t.model->where, t.model->pointer,
                         quote(name) +
                             " is neither a local model directory nor in the zoo; pass --model "
                             "NAME (`zerosim models`) or --hf-config DIR for it");
}

std::string trainer_zero_init_note(const TrainerConfig& t) {
  // transformers' from_pretrained builds the model under deepspeed.zero.Init when
  // is_deepspeed_zero3_enabled() (the ds_config registered by a live HfTrainerDeepSpeedConfig) and
  // the model is not quantized (modeling_utils.py); each trainer registers it first.
  const char* who = t.format == TrainerFormat::Axolotl
                        ? "axolotl registers the ds_config (setup_deepspeed_env)"
                        : "its TrainingArguments register the ds_config";
  return std::string("stage 3: built under deepspeed.zero.Init, as ") +
         trainer_format_name(t.format) + " builds it: " + who +
         " before from_pretrained, which then constructs the model partitioned (--zero-init)";
}

bool resolve_training(const ParsedArgs& a, const TrainerConfig* t, const GpuSpec& gpu,
                      std::optional<std::uint64_t> micro, std::optional<std::uint64_t> gas,
                      std::optional<DType> precision, std::optional<double> clip,
                      std::optional<std::uint64_t> seq, ResolvedTraining& out, Diagnostics& d) {
  const std::size_t errors_before = d.items().size();
  const auto failed = [&] {
    for (std::size_t i = errors_before; i < d.items().size(); ++i)
      if (d.items()[i].severity == Severity::Error) return true;
    return false;
  };
  // The ds_config: the flag's, else the file's deepspeed key.
  if (a.has("--ds-config")) {
    out.ds_config = *a.get("--ds-config");
    if (t && t->deepspeed)
      out.notes.push_back("--ds-config " + *out.ds_config + " replaces " +
                          noted(*t, *t->deepspeed) + " " + quote(t->deepspeed->value));
  } else if (t && t->deepspeed) {
    const std::string p = resolve_ds_path(*t, d);
    if (p.empty()) return false;
    out.ds_config = p;
    out.notes.push_back("ds_config " + p + " from " + noted(*t, *t->deepspeed));
  }
  nlohmann::json ds;
  std::string ds_text;
  if (out.ds_config) {
    Diagnostics quiet;  // the ds_config loader reports a bad file, once
    if (read_input_file(*out.ds_config, ds_text, quiet))
      ds = nlohmann::json::parse(ds_text, nullptr, false);
  }
  const std::string ds_name = out.ds_config.value_or("");

  // axolotl's bf16: auto: bf16 where the GPU has it, else fp16 (config/__init__.py:156).
  std::optional<TrainerValue<DType>> tprec = t ? t->precision : std::nullopt;
  if (t && t->bf16_auto && !tprec) {
    TrainerValue<DType> v;
    v.value = gpu.bf16_tflops > 0 ? DType::BFloat16 : DType::Float16;
    v.key = "bf16";
    v.where = t->bf16_auto->where;
    v.pointer = t->bf16_auto->pointer;
    v.from_default = t->bf16_auto->from_default;
    tprec = v;
    out.notes.push_back("axolotl bf16: auto (" + noted(*t, *t->bf16_auto) + ") is " +
                        dtype_word(v.value) + " on " + gpu.name +
                        (gpu.bf16_tflops > 0 ? " (it has bf16)" : " (it has no bf16)"));
  }

  // One resolution for each of the four values the ds_config may leave "auto".
  const auto resolve = [&](const std::string& what, auto flag_value, const auto& tv,
                           const std::string& flag, const std::string& pointer, auto hf_default,
                           const std::string& hf_key, const std::string& hf_line, auto& dst) {
    using T = std::decay_t<decltype(hf_default)>;
    if (!flag_against_file<T>(t, tv, flag, flag_value, d)) return;
    const DsKey k = out.ds_config ? ds_key(ds, pointer) : DsKey{};
    std::optional<T> v = flag_value;
    std::string from = flag;
    if (!v && tv) {
      v = tv->value;
      from = noted(*t, *tv);
      if (k.present && !k.is_auto) {
        // An explicit ds_config value: the Trainer checks the argument against it.
        bool same = false;
        if constexpr (std::is_same_v<T, double>)
          same = k.value.is_number() && k.value.template get<double>() == *v;
        else
          same = k.value.is_number_integer() && k.value.template get<std::int64_t>() >= 0 &&
                 k.value.template get<std::uint64_t>() == *v;
        if (!same && k.value.is_number()) {
          file_against_ds(*t, *tv, ds_name, pointer, k.value.dump(), d);
          return;
        }
      } else if (!k.present && out.ds_config && pointer == "/gradient_clipping") {
        // fill_match leaves an absent key alone: DeepSpeed keeps its default 1.0.
        if (static_cast<double>(*v) != 1.0)
          out.notes.push_back(from + " = " + show(*v) + " is not used: " + ds_name +
                              " has no gradient_clipping, so DeepSpeed keeps its default 1");
        return;
      }
    }
    if (!v && k.is_auto) {
      v = hf_default;
      from = "TrainingArguments default " + hf_key +
             " (transformers integrations/deepspeed.py:" + hf_line + ")";
    }
    if (!v) return;
    dst = *v;
    if (k.is_auto)
      out.notes.push_back(pointer + " \"auto\" = " + show(*v) + " from " + from);
    else if (from != flag)
      out.notes.push_back(what + " " + show(*v) + " from " + from);
  };
  resolve("micro-batch", micro, t ? t->micro_batch : std::nullopt, "--micro-batch",
          "/train_micro_batch_size_per_gpu", std::uint64_t{8}, "per_device_train_batch_size", "140",
          out.autos.micro_batch);
  resolve("gradient accumulation steps", gas, t ? t->grad_accum : std::nullopt, "--grad-accum",
          "/gradient_accumulation_steps", std::uint64_t{1}, "gradient_accumulation_steps", "146",
          out.autos.grad_accum_steps);
  resolve("gradient clipping", clip, t ? t->max_grad_norm : std::nullopt, "--gradient-clipping",
          "/gradient_clipping", 1.0, "max_grad_norm", "157", out.autos.gradient_clipping);
  if (failed()) return false;

  // Precision: fp16.enabled / bf16.enabled; an explicit enabled: true is what the config trains in.
  if (!flag_against_file<DType>(t, tprec, "--precision", precision, d)) return false;
  const DsKey bf = ds_key(
      ds, ds.contains("bf16") || !ds.contains("bfloat16") ? "/bf16/enabled" : "/bfloat16/enabled");
  const DsKey fp = ds_key(ds, "/fp16/enabled");
  const bool any_auto = bf.is_auto || fp.is_auto;
  std::optional<DType> explicit_dtype;
  if (!any_auto && bf.present && bf.value.is_boolean() && bf.value.get<bool>())
    explicit_dtype = DType::BFloat16;
  else if (!any_auto && fp.present && fp.value.is_boolean() && fp.value.get<bool>())
    explicit_dtype = DType::Float16;
  std::optional<DType> p = precision;
  std::string from = "--precision";
  if (!p && tprec) {
    if (explicit_dtype && *explicit_dtype != tprec->value) {
      file_against_ds(*t, *tprec, ds_name,
                      *explicit_dtype == DType::BFloat16 ? "/bf16/enabled" : "/fp16/enabled",
                      "true", d);
      return false;
    }
    p = tprec->value;
    from = noted(*t, *tprec);
  }
  if (!p && any_auto) {
    p = DType::Float32;  // fp16 = bf16 = False (training_args.py): both "auto" become false
    from =
        "TrainingArguments defaults bf16 = fp16 = false (transformers "
        "integrations/deepspeed.py:185-196)";
  }
  out.autos.precision = p;
  if (p && any_auto)
    out.notes.push_back("fp16/bf16 \"enabled\": \"auto\" -> " + dtype_word(*p) + " from " + from);
  else if (p && from != "--precision" && !out.ds_config)
    out.notes.push_back("precision " + dtype_word(*p) + " from " + from);

  // Sequence length and checkpointing: the model's activations, not the ds_config.
  if (!flag_against_file<std::uint64_t>(t, t ? t->seq_len : std::nullopt, "--seq-len", seq, d))
    return false;
  out.seq_len = seq;
  if (!seq && t && t->seq_len) {
    out.seq_len = t->seq_len->value;
    out.notes.push_back("sequence length " + std::to_string(t->seq_len->value) + " tokens from " +
                        noted(*t, *t->seq_len));
  }
  out.activation_checkpointing = a.has("--activation-checkpointing");
  if (t && t->gradient_checkpointing) {
    const auto& g = *t->gradient_checkpointing;
    if (out.activation_checkpointing && !g.value && !g.from_default) {
      d.error(
          "--activation-checkpointing", "",
          "conflicts with " + origin(*t, g) + " (gradient checkpointing off); change one of them");
      return false;
    }
    if (!out.activation_checkpointing) {
      out.activation_checkpointing = g.value;
      out.notes.push_back(std::string("gradient checkpointing ") + (g.value ? "on" : "off") +
                          " from " + noted(*t, g));
    }
  }
  return !failed();
}

bool apply_trainer_lora(const ParsedArgs& a, const TrainerConfig& t, ModelDesc& model, DType lp,
                        std::vector<std::string>& notes, Diagnostics& d) {
  LoraFlagValues f;
  if (!parse_lora_flags(a, f, d)) return false;
  const bool lora = t.lora && t.lora->value;
  if (!lora) {
    if (t.quantization) {
      d.error(t.quantization->where, t.quantization->pointer,
              "a quantized base is frozen and cannot be trained alone; expected a LoRA adapter "
              "with it (QLoRA)");
      return false;
    }
    if (f.rank && t.lora && !t.lora->from_default) {
      d.error("--lora-rank", "",
              "conflicts with " + origin(t, *t.lora) + " (full fine-tuning); change one of them");
      return false;
    }
    return apply_lora_flags(a, model, lp, d);
  }
  if (!flag_against_file<std::uint64_t>(&t, t.lora_rank, "--lora-rank", f.rank, d) ||
      !flag_against_file<double>(&t, t.lora_alpha, "--lora-alpha", f.alpha, d) ||
      !flag_against_file<double>(&t, t.lora_dropout, "--lora-dropout", f.dropout, d))
    return false;
  if (f.targets && t.lora_targets && !t.lora_targets->from_default &&
      *f.targets != t.lora_targets->value) {
    d.error("--lora-targets", "",
            "conflicts with " + origin(t, *t.lora_targets) + "; change one of them");
    return false;
  }
  if (f.quantization && t.quantization && *f.quantization != t.quantization->value) {
    d.error("--base-quantization", "",
            "conflicts with " + origin(t, *t.quantization) + "; change one of them");
    return false;
  }
  LoraSpec spec;
  std::string source = t.lora->from_default ? t.path : t.lora->where;
  std::string said = "LoRA from " + noted(t, *t.lora);
  if (f.rank) {
    spec.rank = *f.rank;
  } else if (t.lora_rank) {
    spec.rank = t.lora_rank->value;
    said += ", rank " + std::to_string(spec.rank) + " from " + noted(t, *t.lora_rank);
  }
  if (f.targets) {
    spec.targets = *f.targets;
    source = "--lora-targets";
  } else if (t.lora_targets) {
    spec.targets = t.lora_targets->value;
    if (!t.lora_targets->from_default) source = t.lora_targets->where;
    std::string list;
    for (const auto& m : spec.targets) list += (list.empty() ? "" : ",") + m;
    said += ", targets " + list + " from " + noted(t, *t.lora_targets);
  }
  if (f.alpha)
    spec.alpha = *f.alpha;
  else if (t.lora_alpha)
    spec.alpha = t.lora_alpha->value;
  if (f.dropout)
    spec.dropout = *f.dropout;
  else if (t.lora_dropout)
    spec.dropout = t.lora_dropout->value;
  if (f.quantization) {
    spec.quantization = *f.quantization;
  } else if (t.quantization) {
    spec.quantization = t.quantization->value;
    said += std::string(", ") +
            (spec.quantization == BaseQuantization::Nf4 ? "4-bit (NF4)" : "8-bit (int8)") +
            " base from " + noted(t, *t.quantization);
  }
  auto adapted = apply_lora(model, spec, lp, source);
  d.append(adapted.diagnostics());
  if (!adapted.ok()) return false;
  model = std::move(adapted.value());
  notes.push_back(said);
  return true;
}

bool resolve_attention(const ParsedArgs& a, const TrainerConfig* t, std::string& attention,
                       std::vector<std::string>& notes, Diagnostics& d) {
  if (t == nullptr || !t->eager_attention) return true;
  const TrainerValue<bool>& e = *t->eager_attention;
  const std::string file = e.value ? "eager" : "flash";
  if (a.has("--attention")) {
    if (attention == file) return true;
    d.error("--attention", "",
            "conflicts with " + origin(*t, e) +
                (e.value ? " (eager attention)" : " (an attention kernel that stores no scores)") +
                "; change one of them");
    return false;
  }
  attention = file;
  notes.push_back("attention " + file + " from " + noted(*t, e));
  return true;
}

}  // namespace zerosim::cli
