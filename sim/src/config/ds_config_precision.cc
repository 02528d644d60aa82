// Reads the precision blocks: fp16 and bf16 (DeepSpeedFP16Config / DeepSpeedBF16Config in
// deepspeed/runtime/precision_config.py, both pydantic with extra="forbid"), data_types
// (a plain dict, unknown keys ignored by DeepSpeed) and communication_data_type.
//
// fp16.enabled / bf16.enabled may be "auto" (Hugging Face Trainer): resolved from --precision.
// The fp16 validators and their messages are DeepSpeed's (_validate_loss_scale,
// _reject_non_integer_scale_params, _validate_dynamic_loss_scale_params).
#include <array>
#include <cctype>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "config/ds_config_internal.h"

namespace zerosim::dsconfig {
namespace {

using json::JsonReader;

constexpr const char* kPrecisionFile = "deepspeed/runtime/precision_config.py";

/// `enabled`: a bool, or "auto" resolved from --precision (HF fills fp16.enabled / bf16.enabled).
void read_enabled(JsonReader& b, DType block_dtype, bool& dst, std::optional<bool>& written,
                  Loader& ld) {
  if (!b.has("enabled")) return;
  if (b.is_auto("enabled")) {
    if (ld.autos.precision) {
      b.mark_used("enabled");
      dst = *ld.autos.precision == block_dtype;
    } else {
      auto_needs_value(b, "enabled", "--precision");
    }
    return;
  }
  if (auto v = b.get_bool("enabled")) {
    dst = *v;
    written = *v;
  }
}

void read_loss_scale(JsonReader& b, Loader& ld) {
  if (!b.has("loss_scale") || auto_keeps_default(b, "loss_scale", "0", ld)) return;
  auto c = b.child("loss_scale");
  const auto& v = c->value();
  if (v.is_boolean()) {
    c->error("fp16.loss_scale must be a number, not bool");
  } else if (!v.is_number()) {
    c->error("fp16.loss_scale must be a number");
  } else if (v.get<double>() < 0) {
    c->error("fp16.loss_scale must be >= 0 (0 enables dynamic loss scaling)");
  } else {
    ld.cfg.loss_scale = v.get<double>();
  }
}

/// loss_scale_window / min_loss_scale: integers, and DeepSpeed rejects a bool explicitly.
void read_scale_int(JsonReader& b, std::string_view key, std::int64_t& dst, Loader& ld) {
  if (b.has(key) && b.value().at(std::string(key)).is_boolean()) {
    b.mark_used(key);
    b.error("fp16." + std::string(key) + " must be an integer, not bool", key);
    return;
  }
  read_int(b, key, dst, ld);
}

void read_fp16(JsonReader& root, Loader& ld) {
  auto b = root.child("fp16");
  if (!b || !b->expect_object()) return;
  DsConfig& c = ld.cfg;
  ld.facts.fp16_block = true;
  read_enabled(*b, DType::Float16, c.fp16, ld.facts.fp16_enabled_written, ld);
  read_bool(*b, "auto_cast", c.fp16_auto_cast, ld);
  read_loss_scale(*b, ld);
  read_int(*b, "initial_scale_power", c.initial_scale_power, ld);
  read_scale_int(*b, "loss_scale_window", c.loss_scale_window, ld);
  read_int(*b, "hysteresis", c.hysteresis, ld);
  read_bool(*b, "consecutive_hysteresis", c.consecutive_hysteresis, ld);
  read_scale_int(*b, "min_loss_scale", c.min_loss_scale, ld);
  read_bool(*b, "fp16_master_weights_and_grads", c.fp16_master_weights_and_gradients, ld);
  // v0.14.4 reads the fp16 and bf16 blocks as dicts (runtime/config.py:159-190): an unknown key
  // is ignored there, refused by edaa722's pydantic models.
  b->reject_unknown(fp16_keys(),
                    c.version == DeepSpeedVersion::V0_14_4 ? Severity::Warning : Severity::Error);
  // Only dynamic loss scaling uses the window and the floor (DeepSpeedEngine.dynamic_loss_scale).
  if (c.fp16 && c.loss_scale == 0) {
    if (c.loss_scale_window <= 0)
      ld.refuse(
          b->child_pointer("loss_scale_window"),
          "fp16.loss_scale_window must be > 0 when dynamic loss scaling is enabled (loss_scale=0)",
          kPrecisionFile);
    if (c.min_loss_scale <= 0)
      ld.refuse(
          b->child_pointer("min_loss_scale"),
          "fp16.min_loss_scale must be > 0 when dynamic loss scaling is enabled (loss_scale=0)",
          kPrecisionFile);
  }
}

void read_bf16(JsonReader& root, Loader& ld) {
  // get_bfloat16_config: "bf16", else the old spelling "bfloat16".
  const bool has_new = root.has("bf16");
  if (has_new && root.has("bfloat16")) {
    root.mark_used("bfloat16");
    root.warning(
        "ignored: DeepSpeed reads \"bf16\" when both \"bf16\" and \"bfloat16\" are present",
        "bfloat16");
  }
  auto b = root.child(has_new ? "bf16" : "bfloat16");
  if (!b || !b->expect_object()) return;
  DsConfig& c = ld.cfg;
  ld.facts.bf16_block = true;
  read_enabled(*b, DType::BFloat16, c.bf16, ld.facts.bf16_enabled_written, ld);
  read_bool(*b, "immediate_grad_update", c.bf16_immediate_grad_update, ld);
  // v0.14.4 reads the block key by key (runtime/config.py:166-177) and has none of the later
  // keys: bf16_master_weights_and_grads there changes nothing, so it is not applied.
  const bool v0144 = c.version == DeepSpeedVersion::V0_14_4;
  for (const std::string& key : keys_after_v0_14_4("bf16")) {
    if (!v0144 || !b->has(key)) continue;
    b->mark_used(key);
    b->warning(
        "ignored: DeepSpeed v0.14.4 does not read bf16." + key + " (added in a later release)",
        key);
  }
  if (!v0144) {
    read_bool(*b, "check_grad_overflow", c.bf16_check_grad_overflow, ld);
    read_bool(*b, "bf16_master_weights_and_grads", c.bf16_master_weights_and_grads, ld);
    read_bool(*b, "bf16_optimizer_states", c.bf16_optimizer_states, ld);
  }
  if (b->has("check_overflow") && v0144) {
    b->mark_used("check_overflow");
    b->warning("ignored: DeepSpeed v0.14.4 does not read bf16.check_overflow", "check_overflow");
  } else if (b->has("check_overflow")) {
    // constants.py's BFLOAT16_FORMAT documents this spelling, but the pydantic model rejects it.
    b->mark_used("check_overflow");
    b->error("unknown key \"check_overflow\"", "check_overflow",
             "did you mean \"check_grad_overflow\"? DeepSpeed's BFLOAT16_FORMAT text spells it "
             "check_overflow, "
             "its config model does not");
  }
  b->reject_unknown(bf16_keys(), v0144 ? Severity::Warning : Severity::Error);
}

/// DtypeEnum (runtime/config.py): the spellings DeepSpeed accepts for data_types.grad_accum_dtype.
std::optional<DType> deepspeed_dtype(const std::string& s) {
  static constexpr std::array<std::pair<std::string_view, DType>, 11> kNames = {{
      {"torch.float16", DType::Float16},
      {"fp16", DType::Float16},
      {"float16", DType::Float16},
      {"half", DType::Float16},
      {"torch.float32", DType::Float32},
      {"fp32", DType::Float32},
      {"float32", DType::Float32},
      {"float", DType::Float32},
      {"torch.bfloat16", DType::BFloat16},
      {"bf16", DType::BFloat16},
      {"bfloat16", DType::BFloat16},
  }};
  for (const auto& [name, t] : kNames)
    if (s == name) return t;
  return std::nullopt;
}

void read_data_types(JsonReader& root, Loader& ld) {
  auto b = root.child("data_types");
  if (!b || !b->expect_object()) return;
  if (auto g = b->child("grad_accum_dtype"); g && !g->value().is_null()) {
    auto s = g->as_string();
    if (s && (*s == "int8" || *s == "torch.int8")) {
      g->error("int8 gradient accumulation is not modelled by zerosim");
    } else if (s) {
      if (auto t = deepspeed_dtype(*s))
        ld.cfg.grad_accum_dtype = *t;
      else
        g->error(
            "expected one of \"fp16\", \"bf16\", \"fp32\" (or \"float16\", \"half\", \"bfloat16\", "
            "\"float32\", \"float\", \"torch.<dtype>\"), got " +
            quote(*s));
    }
  }
  for (const char* k : {"param_dtype", "buffer_dtype"}) {
    if (auto p = b->child(k); p && !p->value().is_null() && p->as_string())
      ld.note(p->pointer() +
              " is accepted but not modelled (memory uses the precision of fp16/bf16)");
  }
  // DeepSpeed reads data_types with dict.get, so other keys are silently ignored there.
  b->reject_unknown(data_types_keys(), Severity::Warning);
}

void read_communication_dtype(JsonReader& root, Loader& ld) {
  auto c = root.child("communication_data_type");
  if (!c || c->value().is_null()) return;
  auto s = c->as_string();
  if (!s) return;
  // get_communication_data_type (runtime/config.py) lower-cases and accepts three names only.
  std::string low = *s;
  for (char& ch : low) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (low == "fp32")
    ld.cfg.communication_data_type = DType::Float32;
  else if (low == "fp16")
    ld.cfg.communication_data_type = DType::Float16;
  else if (low == "bf16")
    ld.cfg.communication_data_type = DType::BFloat16;
  else
    c->error(
        "Invalid communication_data_type. Supported data types: ['fp16', 'bf16', 'fp32']. Got: " +
        low);
}

std::string dtype_flag_name(DType t) {
  return t == DType::Float16 ? "fp16" : t == DType::BFloat16 ? "bf16" : "fp32";
}

/// --precision against the config, as Hugging Face Accelerate applies `mixed_precision` to a
/// ds_config (accelerate/utils/dataclasses.py, DeepSpeedPlugin.set_mixed_precision and
/// deepspeed_config_process): "auto" entries take the flag's value (read_enabled); a missing block
/// for the flag's dtype is added ({"enabled": true, "auto_cast": true} for fp16, {"enabled": true}
/// for bf16); an explicit enabled value that says otherwise is refused with Accelerate's reason.
/// Without this, `--precision bf16` with a config holding only `"fp16": {"enabled": "auto"}`
/// resolved fp16 off and bf16 absent, and the run became fp32 without a word.
void apply_precision_flag(Loader& ld) {
  if (!ld.autos.precision) return;
  const DType want = *ld.autos.precision;
  DsConfig& c = ld.cfg;
  const Facts& f = ld.facts;
  const auto refuse = [&](const std::string& key, bool written, const std::string& why) {
    ld.diags.error("--precision", "",
                   "conflicts with " + ld.source + " /" + key +
                       "/enabled = " + (written ? "true" : "false") + " (got " +
                       dtype_flag_name(want) + "): Accelerate refuses it: " + why,
                   "accelerate/utils/dataclasses.py DeepSpeedPlugin.set_mixed_precision");
  };
  const std::string mp = std::string("`--mixed_precision` arg cannot be set to `") +
                         dtype_flag_name(want) + "` when `";
  if (want != DType::Float16 && f.fp16_enabled_written.value_or(false))
    return refuse("fp16", true,
                  want == DType::Float32
                      ? "DeepSpeed config values that mismatch kwargs values (set it to \"auto\")"
                      : mp + "fp16` is set in the DeepSpeed config file");
  if (want != DType::BFloat16 && f.bf16_enabled_written.value_or(false))
    return refuse("bf16", true,
                  want == DType::Float32
                      ? "DeepSpeed config values that mismatch kwargs values (set it to \"auto\")"
                      : mp + "bf16` is set in the DeepSpeed config file");
  if (want == DType::Float16 && !f.fp16_enabled_written.value_or(true))
    return refuse("fp16", false,
                  "DeepSpeed config values that mismatch kwargs values (set it to \"auto\")");
  if (want == DType::BFloat16 && !f.bf16_enabled_written.value_or(true))
    return refuse("bf16", false,
                  "DeepSpeed config values that mismatch kwargs values (set it to \"auto\")");
  // A block without "enabled" stays off (DeepSpeedFP16Config / DeepSpeedBF16Config: enabled =
  // False) and Accelerate adds only missing blocks, so the flag would be dropped there: refused.
  const auto refuse_off = [&](const std::string& key) {
    ld.diags.error("--precision", "",
                   "conflicts with " + ld.source + " /" + key +
                       ", which has no \"enabled\" and so "
                       "stays off (DeepSpeed's default enabled = false; got " +
                       dtype_flag_name(want) + "): set /" + key + "/enabled to true or \"auto\"",
                   kPrecisionFile);
  };
  if (want == DType::Float16 && !c.fp16 && f.fp16_block) return refuse_off("fp16");
  if (want == DType::BFloat16 && !c.bf16 && f.bf16_block) return refuse_off("bf16");
  if (want == DType::Float16 && !c.fp16 && !f.fp16_block) {
    c.fp16 = true;
    c.fp16_auto_cast = true;
    ld.note("--precision fp16: " + ld.source +
            " has no fp16 block; added {\"enabled\": true, \"auto_cast\": true} as Hugging Face "
            "Accelerate does (DeepSpeedPlugin.set_mixed_precision)");
  } else if (want == DType::BFloat16 && !c.bf16 && !f.bf16_block) {
    c.bf16 = true;
    ld.note("--precision bf16: " + ld.source +
            " has no bf16 block; added {\"enabled\": true} as Hugging Face Accelerate does "
            "(DeepSpeedPlugin.set_mixed_precision)");
  }
}

}  // namespace

void read_precision(JsonReader& root, Loader& ld) {
  read_fp16(root, ld);
  read_bf16(root, ld);
  apply_precision_flag(ld);
  read_data_types(root, ld);
  read_communication_dtype(root, ld);
}

}  // namespace zerosim::dsconfig
