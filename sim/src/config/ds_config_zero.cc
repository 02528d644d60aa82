// Reads zero_optimization and its offload blocks as DeepSpeedZeroConfig does
// (deepspeed/runtime/zero/config.py, offload_config.py).
//
// What DeepSpeed's pydantic model does, and so this reader: unknown keys are errors
// (extra="forbid"); fields with an alias accept either spelling (populate_by_name) but not both;
// deprecated fields (cpu_offload, cpu_offload_param, stage3_gather_fp16_weights_on_model_save) are
// moved to their replacement, and giving both is refused; "auto" values are dropped (the default
// stays), except the three bucket keys Hugging Face's Trainer fills from the model's hidden size
// (transformers/integrations/deepspeed.py trainer_config_finalize).
#include <cstdint>
#include <optional>
#include <string>

#include "config/ds_config_internal.h"

namespace zerosim::dsconfig {
namespace {

using json::JsonReader;

/// The spelling of a field the config uses (name or pydantic alias); both at once is an error,
/// because pydantic reads the alias and then rejects the name as an extra input.
std::optional<std::string> spelling(JsonReader& z, const std::string& name,
                                    const std::string& alias, Loader& ld) {
  const bool has_name = z.has(name);
  const bool has_alias = !alias.empty() && z.has(alias);
  if (has_name || has_alias) ld.facts.zero_keys.insert(name);
  if (has_name && has_alias) {
    z.mark_used(name);
    z.error("duplicate of " + quote(alias) +
                " (the same DeepSpeed field under its other name); pydantic rejects it as an extra "
                "input",
            name);
    return alias;
  }
  if (has_alias) return alias;
  if (has_name) return name;
  return std::nullopt;
}

/// Hugging Face's hidden-size rule for an "auto" bucket key; false when `key` is not one of them.
bool hf_hidden_size_rule(JsonReader& z, const std::string& key, std::uint64_t& dst, Loader& ld) {
  const bool bucket = key == "reduce_bucket_size";
  const bool prefetch = key == "stage3_prefetch_bucket_size";
  const bool persist = key == "stage3_param_persistence_threshold";
  if (!bucket && !prefetch && !persist) return false;
  // HF fills the two stage-3 keys only for ZeRO-3; otherwise DeepSpeed drops "auto" (default
  // stays).
  if (!bucket && ld.cfg.zero.stage != 3) return false;
  z.mark_used(key);
  if (!ld.autos.hidden_size) {
    auto_needs_value(z, key, "a model with a known hidden size");
    return true;
  }
  const std::uint64_t h = *ld.autos.hidden_size;
  std::optional<std::uint64_t> v;
  std::string rule;
  if (bucket) {
    v = checked_mul(h, h);
    rule = "hidden_size^2";
  } else if (prefetch) {
    // int(0.9 * h * h) in Python; 9*h*h/10 in integers gives the same value without rounding.
    auto nine = checked_mul(h, h);
    if (nine) nine = checked_mul(*nine, 9);
    if (nine) v = *nine / 10;
    rule = "int(0.9 * hidden_size^2)";
  } else {
    v = checked_mul(h, 10);
    rule = "10 * hidden_size";
  }
  if (!v) {
    z.error("is \"auto\" and " + rule + " overflows 64 bits for hidden size " + std::to_string(h),
            key);
    return true;
  }
  dst = *v;
  ld.note(z.child_pointer(key) + " \"auto\" = " + rule + " = " + std::to_string(*v) +
          " (Hugging Face Trainer rule, hidden size " + std::to_string(h) + ")");
  return true;
}

struct UintField {
  std::string name;
  std::string alias;
  std::uint64_t* dst;
  std::uint64_t lo;  ///< smallest accepted value
};

void read_uint_field(JsonReader& z, const UintField& f, Loader& ld) {
  auto key = spelling(z, f.name, f.alias, ld);
  if (!key) return;
  if (z.is_auto(*key) && hf_hidden_size_rule(z, *key, *f.dst, ld)) return;
  read_uint(z, *key, *f.dst, f.lo, ld);
}

void read_bool_field(JsonReader& z, const std::string& name, const std::string& alias, bool& dst,
                     Loader& ld) {
  auto key = spelling(z, name, alias, ld);
  if (key) read_bool(z, *key, dst, ld);
}

void read_offload(JsonReader& z, const std::string& key, bool optimizer, Loader& ld) {
  auto b = z.child(key);
  if (!b) return;
  ld.facts.zero_keys.insert(key);
  if (b->value().is_null()) return;  // Optional[...] = None: no offload
  if (auto_keeps_default(z, key, "none", ld) || !b->expect_object()) return;
  OffloadConfig& o = optimizer ? ld.cfg.zero.offload_optimizer : ld.cfg.zero.offload_param;
  if (!auto_keeps_default(*b, "device", "\"none\"", ld)) {
    if (auto d = b->get_enum("device", {"none", "cpu", "nvme"}))
      o.device = *d == "cpu"    ? OffloadDevice::Cpu
                 : *d == "nvme" ? OffloadDevice::Nvme
                                : OffloadDevice::None;
  }
  if (b->has("nvme_path") && !b->value().at("nvme_path").is_null() &&
      !auto_keeps_default(*b, "nvme_path", "None", ld)) {
    if (auto p = b->get_string("nvme_path")) o.nvme_path = *p;
  }
  b->mark_used("nvme_path");
  read_uint(*b, "buffer_count", o.buffer_count, 0, ld);
  read_bool(*b, "pin_memory", o.pin_memory, ld);
  if (optimizer) {
    bool convert_grad_on_cpu = true;
    double cores = 0.8;
    read_bool(*b, "pipeline_read", o.pipeline_read, ld);
    read_bool(*b, "pipeline_write", o.pipeline_write, ld);
    read_bool(*b, "fast_init", o.fast_init, ld);
    read_bool(*b, "super_offload", o.super_offload, ld);
    read_bool(*b, "convert_grad_on_cpu", convert_grad_on_cpu, ld);
    read_number(*b, "ratio", o.ratio, 0.0, 1.0, ld);
    read_number(*b, "cpuadam_cores_perc", cores, 0.0, 1.0, ld);
    refuse_keys_after_v0_14_4(*b, "offload_optimizer", ld);
    b->reject_unknown(offload_optimizer_keys());
  } else {
    read_uint(*b, "buffer_size", o.buffer_size, 0, ld);
    read_uint(*b, "max_in_cpu", o.max_in_cpu, 0, ld);
    b->reject_unknown(offload_param_keys());
  }
}

/// A deprecated Optional[bool] field that sets an offload block (cpu_offload, cpu_offload_param).
void read_deprecated_offload(JsonReader& z, const std::string& key, const std::string& replacement,
                             OffloadConfig& target, Loader& ld) {
  if (!z.has(key)) return;
  ld.facts.zero_keys.insert(key);
  if (z.has(replacement)) {
    z.mark_used(key);
    ld.refuse(z.child_pointer(key),
              "Cannot provide deprecated parameter '" + key + "' and replacing parameter '" +
                  replacement + "' together",
              "deepspeed/runtime/config_utils.py");
    return;
  }
  if (z.value().at(key).is_null()) {
    z.mark_used(key);
    return;
  }
  bool on = false;
  if (!read_bool(z, key, on, ld)) return;
  if (on) target.device = OffloadDevice::Cpu;
  ld.note(key + " is deprecated: DeepSpeed reads it as " + replacement + ".device = \"" +
          (on ? "cpu" : "none") + "\"");
}

void read_deprecated_fields(JsonReader& z, Loader& ld) {
  ZeroConfig& c = ld.cfg.zero;
  read_deprecated_offload(z, "cpu_offload", "offload_optimizer", c.offload_optimizer, ld);
  read_deprecated_offload(z, "cpu_offload_param", "offload_param", c.offload_param, ld);
  if (z.has("cpu_offload_use_pin_memory")) {
    bool ignored = false;
    if (z.value().at("cpu_offload_use_pin_memory").is_null() ||
        read_bool(z, "cpu_offload_use_pin_memory", ignored, ld))
      ld.note(
          "cpu_offload_use_pin_memory is deprecated and has no effect: set pin_memory in "
          "offload_optimizer or offload_param");
    z.mark_used("cpu_offload_use_pin_memory");
  }
  const std::string old16 = "stage3_gather_fp16_weights_on_model_save";
  if (z.has(old16)) {
    if (z.has("gather_16bit_weights_on_model_save") ||
        z.has("stage3_gather_16bit_weights_on_model_save")) {
      z.mark_used(old16);
      ld.refuse(z.child_pointer(old16),
                "Cannot provide deprecated parameter '" + old16 +
                    "' and replacing parameter 'gather_16bit_weights_on_model_save' together",
                "deepspeed/runtime/config_utils.py");
    } else if (read_bool(z, old16, c.gather_16bit_weights_on_model_save, ld)) {
      ld.note(old16 + " is deprecated: DeepSpeed reads it as gather_16bit_weights_on_model_save");
    }
  }
}

void read_stage_and_overlap(JsonReader& z, Loader& ld) {
  ZeroConfig& c = ld.cfg.zero;
  if (z.has("stage")) ld.facts.zero_keys.insert("stage");
  if (!auto_keeps_default(z, "stage", "0", ld)) {
    if (auto s = z.get_int("stage", 0, 3)) c.stage = static_cast<int>(*s);
  }
  if (z.has("overlap_comm")) {
    ld.facts.zero_keys.insert("overlap_comm");
    if (z.value().at("overlap_comm").is_null()) {
      z.mark_used("overlap_comm");
    } else if (!auto_keeps_default(z, "overlap_comm", "None (stage == 3)", ld)) {
      if (auto v = z.get_bool("overlap_comm")) c.overlap_comm_set = *v;
    }
  }
  // Validator overlap_comm_valid (config.py): unset resolves to stage == 3.
  c.overlap_comm = c.overlap_comm_set.value_or(c.stage == 3);
}

void read_sizes(JsonReader& z, Loader& ld) {
  ZeroConfig& c = ld.cfg.zero;
  std::uint64_t chunk = 0;
  // The lower bounds are the schema's: reduce_bucket_size and allgather_bucket_size are
  // Field(pp_int(5e8), ge=0) (deepspeed/runtime/zero/config.py:113, :132), so 0 is a valid
  // config. With 0 every gradient is its own extra-large bucket in stage 1/2
  // (stage_1_and_2.py:1201 flushes when elements + numel > 0, :1221 keeps a param with numel > 0
  // out of the contiguous buffer) and in stage 3 (stage3.py:1533, :1548); the all-gather bucket
  // size is unused where all_gather_into_tensor exists (runtime/utils.py:1018).
  const UintField fields[] = {
      {"reduce_bucket_size", "", &c.reduce_bucket_size, 0},
      {"allgather_bucket_size", "", &c.allgather_bucket_size, 0},
      {"sub_group_size", "", &c.sub_group_size, 0},
      {"prefetch_bucket_size", "stage3_prefetch_bucket_size", &c.prefetch_bucket_size, 0},
      {"param_persistence_threshold", "stage3_param_persistence_threshold",
       &c.param_persistence_threshold, 0},
      {"model_persistence_threshold", "stage3_model_persistence_threshold",
       &c.model_persistence_threshold, 0},
      {"max_live_parameters", "stage3_max_live_parameters", &c.max_live_parameters, 0},
      {"max_reuse_distance", "stage3_max_reuse_distance", &c.max_reuse_distance, 0},
      {"partition_stream_chunk_size", "stage3_partition_stream_chunk_size", &chunk, 0},
      {"zero_hpz_partition_size", "", &c.zero_hpz_partition_size, 0},
  };
  for (const auto& f : fields) read_uint_field(z, f, ld);
  // module_granularity_threshold: int with no bound (config.py:258); only > 0 turns it on
  // (parameter_offload.py:198), so a negative value behaves as 0.
  if (auto key =
          spelling(z, "module_granularity_threshold", "stage3_module_granularity_threshold", ld)) {
    std::int64_t t = 0;
    if (read_int(z, *key, t, ld)) {
      c.module_granularity_threshold = t > 0 ? static_cast<std::uint64_t>(t) : 0;
      if (t < 0)
        ld.note(z.child_pointer(*key) + " = " + std::to_string(t) +
                ": DeepSpeed enables the threshold only when > 0, so this behaves as 0 (off)");
    }
  }
  if (auto key = spelling(z, "mics_shard_size", "", ld)) {
    read_int(z, *key, c.mics_shard_size, ld);
    c.mics = c.mics_shard_size > 0;
  }
}

void read_flags(JsonReader& z, Loader& ld) {
  ZeroConfig& c = ld.cfg.zero;
  bool unused = false;
  read_bool_field(z, "contiguous_gradients", "", c.contiguous_gradients, ld);
  read_bool_field(z, "reduce_scatter", "", c.reduce_scatter, ld);
  read_bool_field(z, "use_multi_rank_bucket_allreduce", "", c.use_multi_rank_bucket_allreduce, ld);
  read_bool_field(z, "allgather_partitions", "", c.allgather_partitions, ld);
  read_bool_field(z, "round_robin_gradients", "", c.round_robin_gradients, ld);
  read_bool_field(z, "ignore_unused_parameters", "", c.ignore_unused_parameters, ld);
  read_bool_field(z, "gather_16bit_weights_on_model_save",
                  "stage3_gather_16bit_weights_on_model_save", c.gather_16bit_weights_on_model_save,
                  ld);
  read_bool_field(z, "use_all_reduce_for_fetch_params", "stage3_use_all_reduce_for_fetch_params",
                  c.use_all_reduce_for_fetch_params, ld);
  read_bool_field(z, "allgather_sequential", "stage3_allgather_sequential", c.allgather_sequential,
                  ld);
  read_bool_field(z, "zero_quantized_weights", "", c.zero_quantized_weights, ld);
  read_bool_field(z, "zero_quantized_nontrainable_weights", "",
                  c.zero_quantized_nontrainable_weights, ld);
  read_bool_field(z, "zero_quantized_gradients", "", c.zero_quantized_gradients, ld);
  read_bool_field(z, "legacy_stage1", "", ld.facts.legacy_stage1, ld);
  // Accepted and type-checked; they do not change memory or communication.
  for (const char* k :
       {"load_from_fp32_weights", "elastic_checkpoint", "mics_hierarchical_params_gather",
        "memory_efficient_linear", "pipeline_loading_checkpoint", "override_module_apply",
        "log_trace_cache_warnings", "enable_sanity_checks", "save_muon_momentum_buffer_in_memory"})
    read_bool_field(z, k, "", unused, ld);
  for (const char* k : {"zeropp_loco_param", "leaf_module", "zenflow"}) {
    if (!z.has(k)) continue;
    ld.facts.zero_keys.insert(k);
    accept_object(z, k);
  }
  ld.facts.zenflow = z.has("zenflow") && !z.value().at("zenflow").is_null();
}

/// The deprecated form `"zero_optimization": true|false` (config.py read_zero_config_deprecated).
void read_deprecated_bool_form(JsonReader& root, bool on, Loader& ld) {
  ZeroConfig& c = ld.cfg.zero;
  c.stage = on ? 1 : 0;
  c.overlap_comm = false;
  if (on) read_uint(root, "allgather_size", c.allgather_bucket_size, 1, ld);
  ld.note("\"zero_optimization\": " + std::string(on ? "true" : "false") +
          " is DeepSpeed's deprecated form: stage " + std::to_string(c.stage) +
          (on ? ", allgather_bucket_size from top-level allgather_size" : ""));
}

}  // namespace

void read_zero(JsonReader& root, Loader& ld) {
  ZeroConfig& c = ld.cfg.zero;
  c.overlap_comm = c.overlap_comm_set.value_or(c.stage == 3);
  auto z = root.child("zero_optimization");
  if (!z) return;
  if (z->value().is_boolean()) {
    read_deprecated_bool_form(root, z->value().get<bool>(), ld);
    return;
  }
  if (!z->expect_object()) return;
  read_stage_and_overlap(*z, ld);
  read_sizes(*z, ld);
  read_flags(*z, ld);
  read_deprecated_fields(*z, ld);
  read_offload(*z, "offload_optimizer", true, ld);
  read_offload(*z, "offload_param", false, ld);
  refuse_keys_after_v0_14_4(*z, "zero_optimization", ld);
  z->reject_unknown(zero_keys());
}

}  // namespace zerosim::dsconfig
