// ds_config loader entry points: parse, read every block, apply DeepSpeed's batch rule and
// refusals, add notes; plus the top-level training keys, the typed-field helpers shared by the
// block readers, and the two DsConfig queries (master dtype, optimizer path).
//
// Layering (style.md §4.4): syntax (json::parse) -> schema (each block reader; every problem is
// collected) -> meaning (batch rule, cross-field refusals, notes; run only on a schema-clean config
// so that a bad value is not reported twice under another name).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <utility>

#include "base/json_reader.h"
#include "config/ds_config_internal.h"
#include "zerosim/ds_config.h"

namespace zerosim {
namespace dsconfig {

using json::JsonReader;

bool auto_keeps_default(JsonReader& r, std::string_view key, const std::string& default_text,
                        Loader& ld) {
  if (!r.is_auto(key)) return false;
  r.mark_used(key);
  ld.note(r.child_pointer(key) +
          " is \"auto\": DeepSpeed drops \"auto\" here and keeps the default " + default_text);
  return true;
}

void auto_needs_value(JsonReader& r, std::string_view key, const std::string& what) {
  r.mark_used(key);
  r.error(std::string(kAutoNeedsValue) + ": pass " + what, key);
}

bool read_bool(JsonReader& r, std::string_view key, bool& dst, Loader& ld) {
  if (!r.has(key) || auto_keeps_default(r, key, dst ? "true" : "false", ld)) return false;
  auto v = r.get_bool(key);
  if (v) dst = *v;
  return v.has_value();
}

bool read_uint(JsonReader& r, std::string_view key, std::uint64_t& dst, std::uint64_t lo,
               Loader& ld) {
  if (!r.has(key) || auto_keeps_default(r, key, std::to_string(dst), ld)) return false;
  auto v = r.get_uint(key, lo, std::numeric_limits<std::uint64_t>::max());
  if (v) dst = *v;
  return v.has_value();
}

std::optional<std::int64_t> as_any_int(JsonReader& c) {
  const auto& v = c.value();
  // 2^63 as a double: the first integral double that no longer fits in int64.
  constexpr double kTwo63 = 9223372036854775808.0;
  if (v.is_number_unsigned()) {
    if (v.get<std::uint64_t>() <=
        static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      return static_cast<std::int64_t>(v.get<std::uint64_t>());
  } else if (v.is_number_integer()) {
    return v.get<std::int64_t>();
  } else if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && std::floor(d) == d && d >= -kTwo63 && d < kTwo63)
      return static_cast<std::int64_t>(d);
  }
  c.error("expected an integer, got " + json::describe(v));
  return std::nullopt;
}

bool read_int(JsonReader& r, std::string_view key, std::int64_t& dst, Loader& ld) {
  if (!r.has(key) || auto_keeps_default(r, key, std::to_string(dst), ld)) return false;
  auto c = r.child(key);
  auto v = as_any_int(*c);
  if (v) dst = *v;
  return v.has_value();
}

bool read_number(JsonReader& r, std::string_view key, double& dst, double lo, double hi,
                 Loader& ld) {
  if (!r.has(key) || auto_keeps_default(r, key, std::to_string(dst), ld)) return false;
  auto v = r.get_number(key, lo, hi);
  if (v) dst = *v;
  return v.has_value();
}

void accept_object(JsonReader& r, std::string_view key) {
  auto c = r.child(key);
  if (c && !c->value().is_null()) c->expect_object();
}

}  // namespace dsconfig

namespace {

using dsconfig::Loader;
using json::JsonReader;

/// "--gradient-clipping X" next to a config that decides otherwise: Hugging Face fills only an
/// "auto" gradient_clipping (transformers/integrations/deepspeed.py trainer_config_process,
/// fill_match), and Accelerate refuses an explicit value that differs (deepspeed_config_process:
/// "DeepSpeed config values that mismatch kwargs values"); without the key DeepSpeed keeps its
/// default (GRADIENT_CLIPPING_DEFAULT = 1.0, runtime/constants.py:261, read at config.py:258) and
/// a different flag would be dropped, so that is refused too.
void refuse_clipping_flag(JsonReader& root, Loader& ld, const std::string& why) {
  std::ostringstream flag;
  flag << *ld.autos.gradient_clipping;
  ld.diags.error("--gradient-clipping", "",
                 "conflicts with " + ld.source + " " + root.child_pointer("gradient_clipping") +
                     " (got " + flag.str() + "): " + why,
                 "write \"gradient_clipping\": \"auto\" to take the flag");
}

void read_clipping(JsonReader& root, Loader& ld) {
  if (!root.has("gradient_clipping")) {
    if (ld.autos.gradient_clipping && *ld.autos.gradient_clipping != ld.cfg.gradient_clipping) {
      std::ostringstream def;
      def << ld.cfg.gradient_clipping;
      refuse_clipping_flag(root, ld,
                           "the key is absent, so DeepSpeed keeps its default " + def.str());
    }
    return;
  }
  if (root.is_auto("gradient_clipping")) {
    // Hugging Face fills it from TrainingArguments.max_grad_norm.
    if (ld.autos.gradient_clipping) {
      root.mark_used("gradient_clipping");
      ld.cfg.gradient_clipping = *ld.autos.gradient_clipping;
    } else {
      dsconfig::auto_needs_value(root, "gradient_clipping", "--gradient-clipping");
    }
    return;
  }
  if (auto v = root.get_number("gradient_clipping", 0.0, std::numeric_limits<double>::infinity())) {
    ld.cfg.gradient_clipping = *v;
    if (ld.autos.gradient_clipping && *ld.autos.gradient_clipping != *v) {
      std::ostringstream written;
      written << *v;
      refuse_clipping_flag(root, ld,
                           "the config says " + written.str() +
                               "; Accelerate refuses DeepSpeed config values that mismatch its "
                               "arguments");
    }
  }
}

void read_training(JsonReader& root, Loader& ld) {
  DsConfig& c = ld.cfg;
  read_clipping(root, ld);
  if (auto v = root.get_bool("prescale_gradients")) c.prescale_gradients = *v;
  if (auto v = root.get_bool("managed_gradient_accumulation")) c.managed_gradient_accumulation = *v;
  if (auto v = root.get_number("gradient_predivide_factor", 0.0,
                               std::numeric_limits<double>::infinity())) {
    if (*v == 0.0)
      root.error("expected a number > 0, got 0", "gradient_predivide_factor");
    else
      c.gradient_predivide_factor = *v;
  }
  if (auto op = root.child("gradient_allreduce_op")) {
    // get_gradient_allreduce_op (runtime/config.py): lower-cased, "mean" or "sum".
    std::string s =
        op->value().is_string() ? op->value().get<std::string>() : json::describe(op->value());
    std::string low = s;
    for (char& ch : low) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (op->value().is_string() && (low == "mean" || low == "sum"))
      c.gradient_allreduce_op = low == "sum" ? GradientAllreduceOp::Sum : GradientAllreduceOp::Mean;
    else
      op->error("Invalid gradient_allreduce_op. Supported operations: ['mean', 'sum']. Got: '" + s +
                "'");
  }
}

void read_optimizer_and_amp(JsonReader& root, Loader& ld) {
  if (auto o = root.child("optimizer"); o && !o->value().is_null() && o->expect_object()) {
    if (o->has("type") && !o->value().at("type").is_null()) {
      if (auto t = o->get_string("type")) ld.cfg.optimizer_type = *t;
    }
    auto p = o->child("params");
    ld.facts.optimizer_has_max_grad_norm = p && p->value().is_object() && p->has("max_grad_norm");
  }
  // amp.enabled: only needed for the "Amp and ZeRO" refusal ("auto" means off under HF unless
  // apex).
  if (auto a = root.child("amp"); a && a->value().is_object() && a->has("enabled")) {
    const auto& e = a->value().at("enabled");
    ld.facts.amp_enabled = e.is_boolean() && e.get<bool>();
  }
}

/// Known top-level keys zerosim does not model go to not_modelled; unknown ones are warnings,
/// because DeepSpeed ignores top-level keys it does not read.
void classify_top_level(JsonReader& root, Loader& ld) {
  const auto& modelled = dsconfig::modelled_top_level_keys();
  const auto& known = dsconfig::known_top_level_keys();
  for (auto it = root.value().begin(); it != root.value().end(); ++it) {
    const std::string& k = it.key();
    if (std::find(modelled.begin(), modelled.end(), k) != modelled.end()) continue;
    root.mark_used(k);
    if (std::find(known.begin(), known.end(), k) != known.end()) {
      ld.cfg.not_modelled.push_back(k);
      // AutoTP shards the linear layers over autotp_size GPUs when it is above 1 (DeepSpeed
      // edaa722 runtime/engine.py:332, runtime/tensor_parallel/config.py:45 default 0): every
      // per-GPU number changes, so it is a warning, not a --verbose line.
      const auto& v = it.value();
      if (k == "tensor_parallel" && v.is_object() && v.contains("autotp_size") &&
          v.at("autotp_size").is_number_integer() && v.at("autotp_size").get<std::int64_t>() > 1)
        ld.cfg.warnings.push_back(
            "tensor_parallel.autotp_size = " +
            std::to_string(v.at("autotp_size").get<std::int64_t>()) +
            ": DeepSpeed shards every linear layer over that many GPUs (AutoTP), which zerosim "
            "does "
            "not model: the numbers are for pure data parallelism over all GPUs");
      continue;
    }
    std::string m = closest_match(k, known);
    root.warning("unknown key " + quote(k) + ": DeepSpeed ignores top-level keys it does not read",
                 k, m.empty() ? "" : "did you mean " + quote(m) + "?");
  }
}

}  // namespace

DType DsConfig::master_dtype() const {
  const OptimizerPath p = optimizer_path();
  if (p != OptimizerPath::ZeroStage1And2 && p != OptimizerPath::ZeroStage3) return DType::Float32;
  if (fp16_master_weights_and_gradients) return DType::Float16;
  if (bf16_master_weights_and_grads) return DType::BFloat16;
  return DType::Float32;
}

namespace {

// The accumulation dtype when data_types.grad_accum_dtype is unset. v0.14.4 engine.py
// get_data_types: "if model_dtype == torch.bfloat16 and not self.zero_optimization():
// grad_accum_dtype = torch.float32"; edaa722 takes the model dtype.
DType default_grad_accum(DeepSpeedVersion v, int stage, DType lp) {
  return v == DeepSpeedVersion::V0_14_4 && stage == 0 && lp == DType::BFloat16 ? DType::Float32
                                                                               : lp;
}

}  // namespace

DType DsConfig::grad_accum() const {
  return grad_accum_dtype.value_or(default_grad_accum(version, zero.stage, lp_dtype()));
}

OptimizerPath DsConfig::optimizer_path() const {
  // engine.py _do_optimizer_sanity_check: BF16_Optimizer needs zero_cpu_offload() false, which
  // tests offload_optimizer.device == cpu only (NVMe offload still takes the BF16_Optimizer path).
  // Without ZeRO, v0.14.4 runs BF16_Optimizer for bf16 with fp32 accumulation (its default) and
  // refuses bf16 accumulation (ds_config_rules.cc); edaa722 runs FP16_Optimizer in bf16 mode
  // ("DDP_BFLOAT16") and refuses fp32 accumulation.
  if (zero.stage == 0) {
    if (lp_dtype() == DType::Float32) return OptimizerPath::Plain;
    if (version == DeepSpeedVersion::V0_14_4 && lp_dtype() == DType::BFloat16 &&
        grad_accum() == DType::Float32)
      return OptimizerPath::Bf16Optimizer;
    return OptimizerPath::Fp16Optimizer;
  }
  if (zero.stage == 1 && lp_dtype() == DType::BFloat16 && grad_accum() == DType::Float32 &&
      zero.offload_optimizer.device != OffloadDevice::Cpu)
    return OptimizerPath::Bf16Optimizer;
  return zero.stage <= 2 ? OptimizerPath::ZeroStage1And2 : OptimizerPath::ZeroStage3;
}

std::string DsConfig::stage0_dtype_problem() const {
  const DType lp = lp_dtype();
  const bool v0144 = version == DeepSpeedVersion::V0_14_4;
  const DType ga = grad_accum_dtype.value_or(default_grad_accum(version, 0, lp));  // at stage 0
  // v0.14.4 wants bf16 with fp32 accumulation (BF16_Optimizer, its default) and refuses bf16
  // accumulation without ZeRO (pipeline parallelism, which allowed it, is not modelled).
  if (v0144) {
    if (lp == DType::BFloat16 && ga == DType::BFloat16)
      return "Bfloat16 wrapper must use a gradient accumulation type of fp32, enable ZeRO to use "
             "Bfloat16 gradient accumulation";
    if (lp != ga && !(lp == DType::BFloat16 && ga == DType::Float32))
      return "unsupported mix of model dtype and gradient accumulation type";
    return {};
  }
  if (lp != ga)
    return "unsupported mix of model_dtype=" + dsconfig::torch_dtype(lp) +
           " and grad_accum_dtype=" + dsconfig::torch_dtype(ga);
  return {};
}

std::string DsConfig::version_problem(DeepSpeedVersion run) const {
  if (run == version) return {};
  return "expected the DeepSpeed config resolved for DeepSpeed " +
         std::string(deepspeed_version_name(run)) + ", got one resolved for " +
         std::string(deepspeed_version_name(version)) + " (internal error)";
}

Result<DsConfig> load_ds_config_text(const std::string& text, const std::string& source,
                                     const AutoValues& autos) {
  Diagnostics diags;
  // Hugging Face's HfDeepSpeedConfig (integrations/deepspeed.py, what the Trainer, LLaMA-Factory
  // and axolotl pass the file through) reads it with Python's json.load, which refuses a byte
  // order mark ("Unexpected UTF-8 BOM"); zerosim's parser skipped it and planned a job that
  // cannot start.
  if (text.rfind("\xEF\xBB\xBF", 0) == 0)
    return fail<DsConfig>(source, "",
                          "expected JSON without a UTF-8 byte order mark, got one: Hugging Face's "
                          "json.load of the ds_config refuses it (\"Unexpected UTF-8 BOM\"); "
                          "save the file without it");
  auto j = json::parse(text, source, diags);
  if (!j) return Result<DsConfig>(std::move(diags));
  JsonReader root(*j, source, "", diags);
  if (!root.expect_object()) return Result<DsConfig>(std::move(diags));
  Loader ld(autos, source, diags);
  ld.cfg.version = autos.version;  // before the rules and notes, which depend on it
  set_default_pin_memory(ld.cfg);  // what the offload blocks read over
  if (autos.world_size == 0) diags.error(source, "", "expected a world size of at least 1, got 0");
  dsconfig::read_zero(root, ld);
  dsconfig::read_precision(root, ld);
  read_training(root, ld);
  read_optimizer_and_amp(root, ld);
  if (autos.world_size > 0) dsconfig::read_batch(root, ld);
  classify_top_level(root, ld);
  if (!diags.has_errors()) dsconfig::apply_rules(ld);
  if (!diags.has_errors()) dsconfig::add_notes(ld);
  DsConfig cfg = std::move(ld.cfg);
  return Result<DsConfig>(std::move(cfg), std::move(diags));
}

Result<DsConfig> load_ds_config_file(const std::string& path, const AutoValues& autos) {
  Diagnostics diags;
  std::string text;
  if (!json::read_file(path, text, diags)) return Result<DsConfig>(std::move(diags));
  return load_ds_config_text(text, path, autos);
}

void set_default_pin_memory(DsConfig& c) {
  c.zero.offload_optimizer.pin_memory = default_pin_memory(c.version);
  c.zero.offload_param.pin_memory = default_pin_memory(c.version);
}

DsConfig default_ds_config(int stage, DType precision, DeepSpeedVersion version) {
  DsConfig d;
  d.version = version;
  set_default_pin_memory(d);
  d.zero.stage = stage < 0 ? 0 : stage > 3 ? 3 : stage;
  d.zero.overlap_comm = d.zero.stage == 3;
  d.fp16 = precision == DType::Float16;
  d.bf16 = precision == DType::BFloat16;
  d.micro_batch = 1;
  d.grad_accum_steps = 1;
  d.train_batch_size = 1;
  return d;
}

}  // namespace zerosim
