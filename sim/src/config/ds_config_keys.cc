// Key tables for the ds_config loader: which keys DeepSpeed knows, per block.
//
// Sources (DeepSpeed, the versions read for commit edaa722): runtime/constants.py and
// runtime/config.py (top level), runtime/zero/config.py (DeepSpeedZeroConfig, with pydantic aliases
// and deprecated fields), runtime/zero/offload_config.py, runtime/precision_config.py, and the
// block configs the engine reads (monitor, comms, profiling, autotuning, elasticity, ...). The
// pydantic blocks forbid unknown keys, so their lists must be complete; the top-level list only
// feeds "did you mean" warnings, because DeepSpeed ignores top-level keys it does not read.
#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>

#include "config/ds_config_internal.h"

namespace zerosim::dsconfig {

const std::vector<std::string>& modelled_top_level_keys() {
  static const std::vector<std::string> k = {
      "train_batch_size",
      "train_micro_batch_size_per_gpu",
      "gradient_accumulation_steps",
      "managed_gradient_accumulation",
      "zero_optimization",
      "allgather_size",
      "fp16",
      "bf16",
      "bfloat16",
      "data_types",
      "communication_data_type",
      "gradient_clipping",
      "prescale_gradients",
      "gradient_predivide_factor",
      "gradient_allreduce_op",
  };
  return k;
}

const std::vector<std::string>& known_top_level_keys() {
  static const std::vector<std::string> k = [] {
    std::vector<std::string> v = modelled_top_level_keys();
    const std::vector<std::string> others = {
        "optimizer",
        "scheduler",
        "steps_per_print",
        "wall_clock_breakdown",
        "memory_breakdown",
        "dump_state",
        "tensorboard",
        "wandb",
        "csv_monitor",
        "comet",
        "flops_profiler",
        "activation_checkpointing",
        "checkpoint",
        "aio",
        "comms_logger",
        "zero_allow_untested_optimizer",
        "zero_force_ds_cpu_optimizer",
        "amp",
        "torch_autocast",
        "sparse_attention",
        "sparse_gradients",
        "graph_harvesting",
        "seq_parallel_communication_data_type",
        "seq_parallel_comm_data_type",
        "disable_allgather",
        "disable_python_gc",
        "vocabulary_size",
        "progressive_layer_drop",
        "dataloader_drop_last",
        "use_data_before_expert_parallelism",
        "log_level",
        "elasticity",
        "autotuning",
        "nebula",
        "datastates",
        "compression_training",
        "quantize_training",
        "data_efficiency",
        "curriculum_learning",
        "weight_quantization",
        "compile",
        "timers",
        "tensor_parallel",
        "expert_parallel",
        "hybrid_engine",
        "pipeline",
        "sequence_parallel_size",
    };
    v.insert(v.end(), others.begin(), others.end());
    return v;
  }();
  return k;
}

const std::vector<std::string>& zero_keys() {
  static const std::vector<std::string> k = {
      "stage",
      "contiguous_gradients",
      "reduce_scatter",
      "reduce_bucket_size",
      "use_multi_rank_bucket_allreduce",
      "allgather_partitions",
      "allgather_bucket_size",
      "overlap_comm",
      "load_from_fp32_weights",
      "elastic_checkpoint",
      "offload_param",
      "offload_optimizer",
      "zenflow",
      "sub_group_size",
      "cpu_offload_param",
      "cpu_offload_use_pin_memory",
      "cpu_offload",
      "prefetch_bucket_size",
      "stage3_prefetch_bucket_size",
      "param_persistence_threshold",
      "stage3_param_persistence_threshold",
      "model_persistence_threshold",
      "stage3_model_persistence_threshold",
      "max_live_parameters",
      "stage3_max_live_parameters",
      "max_reuse_distance",
      "stage3_max_reuse_distance",
      "gather_16bit_weights_on_model_save",
      "stage3_gather_16bit_weights_on_model_save",
      "module_granularity_threshold",
      "stage3_module_granularity_threshold",
      "use_all_reduce_for_fetch_params",
      "stage3_use_all_reduce_for_fetch_params",
      "allgather_sequential",
      "stage3_allgather_sequential",
      "partition_stream_chunk_size",
      "stage3_partition_stream_chunk_size",
      "stage3_gather_fp16_weights_on_model_save",
      "ignore_unused_parameters",
      "legacy_stage1",
      "round_robin_gradients",
      "zero_hpz_partition_size",
      "zero_quantized_weights",
      "zero_quantized_nontrainable_weights",
      "zero_quantized_gradients",
      "zeropp_loco_param",
      "mics_shard_size",
      "mics_hierarchical_params_gather",
      "memory_efficient_linear",
      "pipeline_loading_checkpoint",
      "override_module_apply",
      "log_trace_cache_warnings",
      "enable_sanity_checks",
      "save_muon_momentum_buffer_in_memory",
      "leaf_module",
  };
  return k;
}

const std::vector<std::string>& offload_param_keys() {
  static const std::vector<std::string> k = {"device",      "nvme_path",  "buffer_count",
                                             "buffer_size", "max_in_cpu", "pin_memory"};
  return k;
}

const std::vector<std::string>& offload_optimizer_keys() {
  static const std::vector<std::string> k = {
      "device",        "nvme_path",           "buffer_count",      "pin_memory",
      "pipeline_read", "pipeline_write",      "fast_init",         "ratio",
      "super_offload", "convert_grad_on_cpu", "cpuadam_cores_perc"};
  return k;
}

const std::vector<std::string>& fp16_keys() {
  static const std::vector<std::string> k = {"enabled",
                                             "auto_cast",
                                             "loss_scale",
                                             "initial_scale_power",
                                             "loss_scale_window",
                                             "hysteresis",
                                             "consecutive_hysteresis",
                                             "min_loss_scale",
                                             "fp16_master_weights_and_grads"};
  return k;
}

const std::vector<std::string>& bf16_keys() {
  static const std::vector<std::string> k = {"enabled", "immediate_grad_update",
                                             "check_grad_overflow", "bf16_master_weights_and_grads",
                                             "bf16_optimizer_states"};
  return k;
}

const std::vector<std::string>& data_types_keys() {
  static const std::vector<std::string> k = {"grad_accum_dtype", "param_dtype", "buffer_dtype"};
  return k;
}

// `git show v0.14.4:deepspeed/runtime/zero/config.py` (and offload_config.py) against edaa722's:
// the fields (with their aliases) edaa722 has and v0.14.4 does not. bf16 at v0.14.4 is read key
// by key from the dict (runtime/config.py get_bfloat16_enabled, :173 immediate_grad_update).
const std::vector<std::string>& keys_after_v0_14_4(std::string_view block) {
  static const std::vector<std::string> zero = {"allgather_sequential",
                                                "stage3_allgather_sequential",
                                                "module_granularity_threshold",
                                                "stage3_module_granularity_threshold",
                                                "enable_sanity_checks",
                                                "leaf_module",
                                                "log_trace_cache_warnings",
                                                "save_muon_momentum_buffer_in_memory",
                                                "zenflow",
                                                "zeropp_loco_param"};
  static const std::vector<std::string> offload = {"cpuadam_cores_perc", "super_offload"};
  static const std::vector<std::string> bf16 = {
      "check_grad_overflow", "bf16_master_weights_and_grads", "bf16_optimizer_states"};
  static const std::vector<std::string> none;
  return block == "zero_optimization"   ? zero
         : block == "offload_optimizer" ? offload
         : block == "bf16"              ? bf16
                                        : none;
}

void refuse_keys_after_v0_14_4(json::JsonReader& r, std::string_view block, const Loader& ld) {
  if (ld.cfg.version != DeepSpeedVersion::V0_14_4) return;
  for (const std::string& key : keys_after_v0_14_4(block)) {
    if (!r.has(key)) continue;
    r.mark_used(key);
    r.error("unknown key \"" + key + "\" at DeepSpeed v0.14.4: its " +
                (block == "zero_optimization" ? "DeepSpeedZeroConfig"
                                              : "DeepSpeedZeroOffloadOptimizerConfig") +
                " has no such field and refuses extra keys (added in a later release)",
            key);
  }
}

bool is_supported_optimizer(const std::string& type) {
  // DEEPSPEED_OPTIMIZERS (runtime/config.py), matched after lower-casing.
  static constexpr std::array<std::string_view, 12> kDeepSpeed = {
      "adagrad",     "adam",   "adamw",   "lamb",  "onebitadam", "onebitlamb",
      "zerooneadam", "muadam", "muadamw", "musgd", "lion",       "muon"};
  // Otherwise the engine looks the name up as an attribute of torch.optim (case-sensitive).
  static constexpr std::array<std::string_view, 15> kTorch = {
      "Adadelta", "Adafactor", "Adagrad", "Adam",  "Adamax", "AdamW",      "ASGD", "LBFGS",
      "NAdam",    "RAdam",     "RMSprop", "Rprop", "SGD",    "SparseAdam", "Muon"};
  std::string low = type;
  for (char& c : low) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return std::find(kDeepSpeed.begin(), kDeepSpeed.end(), low) != kDeepSpeed.end() ||
         std::find(kTorch.begin(), kTorch.end(), type) != kTorch.end();
}

std::string torch_dtype(DType t) { return "torch." + std::string(dtype_name(t)); }

}  // namespace zerosim::dsconfig
