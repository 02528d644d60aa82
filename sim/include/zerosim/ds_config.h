// DsConfig: the parts of a DeepSpeed ds_config.json that decide memory and communication, with
// DeepSpeed's defaults (shared/docs/deepspeed_zero.md §1, DeepSpeed commit edaa722).
//
// Field names follow DeepSpeed's JSON keys. Loading (sim/src/config/ds_config_*.cc) validates as
// DeepSpeed does: unknown keys inside blocks DeepSpeed validates strictly (pydantic extra="forbid")
// are errors with a "did you mean" hint; combinations DeepSpeed refuses are refused with
// DeepSpeed's reason; "auto" values are resolved from AutoValues (Hugging Face Trainer rules) or
// reported as needing a value. The loaded DsConfig describes what DeepSpeed really runs (deprecated
// spellings, aliases and silent reroutes already applied); `notes` says what was rerouted or is
// often misread.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "zerosim/diagnostic.h"
#include "zerosim/ir_types.h"
#include "zerosim/units.h"

namespace zerosim {

enum class OffloadDevice { None, Cpu, Nvme };

/// offload_optimizer / offload_param (deepspeed/runtime/zero/offload_config.py).
struct OffloadConfig {
  OffloadDevice device = OffloadDevice::None;
  std::string nvme_path;  ///< empty = unset
  bool pin_memory =
      false;           ///< as resolved: the release's default (default_pin_memory) unless written
  double ratio = 1.0;  ///< offload_optimizer.ratio, [0, 1]; < 1 only with stage 3
  std::uint64_t buffer_count = 5;  ///< nvme swap buffers (offload_param: 5; offload_optimizer: 4)
  std::uint64_t buffer_size = 100000000;  ///< offload_param.buffer_size (elements)
  std::uint64_t max_in_cpu = 1000000000;  ///< offload_param.max_in_cpu (elements)
  bool pipeline_read = false;             ///< offload_optimizer.pipeline_read
  bool pipeline_write = false;            ///< offload_optimizer.pipeline_write
  bool fast_init = false;                 ///< offload_optimizer.fast_init
  bool super_offload = false;             ///< offload_optimizer.super_offload (not modelled; noted)
  bool enabled() const { return device != OffloadDevice::None; }
  /// offload_optimizer's defaults (buffer_count 4 instead of 5).
  static OffloadConfig optimizer_defaults() {
    OffloadConfig c;
    c.buffer_count = 4;
    return c;
  }
};

/// zero_optimization, with DeepSpeed's defaults (deepspeed/runtime/zero/config.py).
struct ZeroConfig {
  int stage = 0;
  bool contiguous_gradients = true;
  bool reduce_scatter = true;
  std::uint64_t reduce_bucket_size = 500000000;  ///< R, elements
  bool use_multi_rank_bucket_allreduce = true;
  std::uint64_t allgather_bucket_size = 500000000;  ///< A, elements; a multiple of 2 for stage 1/2
  bool allgather_partitions = true;                 ///< read but unused by DeepSpeed
  std::optional<bool> overlap_comm_set;             ///< as written; nullopt = unset
  bool overlap_comm = false;                        ///< resolved: unset -> (stage == 3)
  bool round_robin_gradients = false;
  OffloadConfig offload_optimizer = OffloadConfig::optimizer_defaults();
  OffloadConfig offload_param;  ///< cleared (device None) below stage 3: ignored there
  std::uint64_t sub_group_size = 1000000000;
  std::uint64_t prefetch_bucket_size =
      50000000;  ///< stage3_prefetch_bucket_size (1 with allgather_sequential)
  std::uint64_t param_persistence_threshold = 100000;  ///< stage3_param_persistence_threshold
  std::uint64_t model_persistence_threshold =
      std::numeric_limits<std::int64_t>::max();     ///< sys.maxsize
  std::uint64_t max_live_parameters = 1000000000;   ///< stage3_max_live_parameters
  std::uint64_t max_reuse_distance = 1000000000;    ///< stage3_max_reuse_distance
  bool allgather_sequential = false;                ///< stage3_allgather_sequential
  bool use_all_reduce_for_fetch_params = false;     ///< stage3_use_all_reduce_for_fetch_params
  std::uint64_t module_granularity_threshold = 0;   ///< stage3_module_granularity_threshold
  bool gather_16bit_weights_on_model_save = false;  ///< checkpointing only
  bool ignore_unused_parameters = true;
  bool zero_quantized_weights = false;               ///< ZeRO++ (not modelled; noted)
  bool zero_quantized_nontrainable_weights = false;  ///< ZeRO++ (not modelled; noted)
  bool zero_quantized_gradients = false;             ///< ZeRO++ (not modelled; noted)
  std::uint64_t zero_hpz_partition_size = 1;         ///< ZeRO++ hpZ (not modelled; noted)
  std::int64_t mics_shard_size = -1;  ///< MiCS shard size; > 0 enables MiCS (not modelled; noted)
  bool mics = false;                  ///< mics_shard_size > 0
};

/// Which optimizer wrapper DeepSpeed really runs for this config (deepspeed_zero.md §0).
enum class OptimizerPath {
  Plain,           ///< stage 0 fp32: bare optimizer, engine all-reduces
  Fp16Optimizer,   ///< stage 0 fp16/bf16: FP16_Optimizer
  Bf16Optimizer,   ///< stage 1 + bf16 + grad_accum_dtype fp32, no CPU optimizer offload, and
                   ///< (v0.14.4) stage 0 + bf16: BF16_Optimizer
  ZeroStage1And2,  ///< DeepSpeedZeroOptimizer
  ZeroStage3,      ///< DeepSpeedZeroOptimizer_Stage3
};

/// gradient_allreduce_op: how data-parallel gradients are combined.
enum class GradientAllreduceOp { Mean, Sum };

struct DsConfig {
  /// The DeepSpeed whose rules resolve this config (AutoValues::version at load): the default
  /// gradient-accumulation dtype and the stage 0 wrapper differ between releases. It equals the
  /// version the run reproduces (ScheduleInput::version, PlanRequest::version; both check it).
  DeepSpeedVersion version = DeepSpeedVersion::Edaa722;
  ZeroConfig zero;
  // fp16 block (deepspeed/runtime/precision_config.py DeepSpeedFP16Config)
  bool fp16 = false;            ///< fp16.enabled
  bool fp16_auto_cast = false;  ///< fp16.auto_cast
  double loss_scale = 0;        ///< fp16.loss_scale (0 = dynamic)
  std::int64_t initial_scale_power = 16;
  std::int64_t loss_scale_window = 1000;
  std::int64_t hysteresis = 2;
  bool consecutive_hysteresis = false;
  std::int64_t min_loss_scale = 1;
  bool fp16_master_weights_and_gradients = false;  ///< fp16.fp16_master_weights_and_grads
  // bf16 block (DeepSpeedBF16Config; "bfloat16" is the old spelling of the block)
  bool bf16 = false;  ///< bf16.enabled
  bool bf16_immediate_grad_update = false;
  bool bf16_check_grad_overflow = true;  ///< bf16.check_grad_overflow (True at edaa722, PR #6976)
  bool bf16_master_weights_and_grads = false;
  bool bf16_optimizer_states = false;            ///< requires bf16_master_weights_and_grads
  std::optional<DType> grad_accum_dtype;         ///< data_types.grad_accum_dtype (unset = LP)
  std::optional<DType> communication_data_type;  ///< unset = LP-derived
  std::uint64_t micro_batch = 1;                 ///< train_micro_batch_size_per_gpu (resolved)
  std::uint64_t grad_accum_steps = 1;            ///< gradient_accumulation_steps (resolved)
  std::uint64_t train_batch_size = 1;            ///< resolved: micro * GAS * world
  bool managed_gradient_accumulation = true;
  double gradient_clipping = 1.0;  ///< default 1.0 since DeepSpeed PR #8068 (constants.py); 0 = off
  bool prescale_gradients = false;
  double gradient_predivide_factor = 1.0;
  GradientAllreduceOp gradient_allreduce_op = GradientAllreduceOp::Mean;
  std::string optimizer_type;  ///< optimizer.type as written ("AdamW", "Muon", ...), may be empty
  std::vector<std::string>
      not_modelled;                ///< top-level keys accepted but not modelled (--verbose lists)
  std::vector<std::string> notes;  ///< what DeepSpeed really does with this config, one line each
  /// Settings DeepSpeed runs that change the answer and zerosim does not model (tensor
  /// parallelism, ZeRO++, MiCS): plan and simulate print them on their first screen and in JSON.
  std::vector<std::string> warnings;
  /// What the config asks that zerosim refuses to plan rather than approximate (stage 3 NVMe
  /// offload): make_plan and build_schedule fail with these, each naming the file and key.
  std::vector<Diagnostic> refusals;

  DType lp_dtype() const { return fp16 ? DType::Float16 : bf16 ? DType::BFloat16 : DType::Float32; }
  /// MW: fp16 with fp16_master_weights_and_grads, bf16 with bf16_master_weights_and_grads, else
  /// fp32.
  DType master_dtype() const;
  /// GA: data_types.grad_accum_dtype, else LP; v0.14.4's get_data_types makes it fp32 for bf16
  /// without ZeRO (stage 0), which then runs BF16_Optimizer (DeepSpeed PR #7515 changed it).
  DType grad_accum() const;
  DType comm_dtype() const { return communication_data_type.value_or(lp_dtype()); }  ///< CD
  OptimizerPath optimizer_path() const;
  /// DeepSpeed's refusal of these dtypes without ZeRO, as `version` words it (engine.py
  /// _do_optimizer_sanity_check: edaa722 wants the accumulation dtype to be the model's, v0.14.4
  /// bf16 with fp32 accumulation), "" when stage 0 runs them. Whatever zero.stage says: plan asks
  /// it for its stage 0 row of a ZeRO config. (amp, refused with ZeRO, is the loader's to check.)
  std::string stage0_dtype_problem() const;
  /// Empty when `run` is the release this config was resolved for, else why (an internal error:
  /// a caller set one version and not the other); build_schedule and make_plan check it.
  std::string version_problem(DeepSpeedVersion run) const;
};

/// Values that resolve "auto" entries (Hugging Face Trainer configs) and fill in the batch rule.
/// How the loader's error for an "auto" entry only a flag can resolve begins (--micro-batch,
/// --precision, ...): a scenario whose only errors are these loads once the flags are written in.
inline constexpr const char* kAutoNeedsValue = "is \"auto\" and needs a value";

/// The largest micro batch and gradient accumulation count zerosim accepts, from a flag
/// (--micro-batch, --grad-accum) or a ds_config (written or derived from train_batch_size).
inline constexpr std::uint64_t kMaxMicroBatch = std::uint64_t{1} << 20;
inline constexpr std::uint64_t kMaxGradAccumSteps = std::uint64_t{1} << 20;

/// A batch key absent from the config is taken from here; a number written in the config wins
/// (callers decide whether a different flag value is a conflict).
struct AutoValues {
  std::uint64_t world_size = 1;                   ///< data-parallel ranks
  std::optional<std::uint64_t> micro_batch;       ///< --micro-batch
  std::optional<std::uint64_t> grad_accum_steps;  ///< --grad-accum
  std::optional<DType> precision;                 ///< --precision fp16|bf16|fp32
  std::optional<double> gradient_clipping;        ///< --gradient-clipping
  std::optional<std::uint64_t> hidden_size;       ///< model hidden size: HF's rule for bucket sizes
  /// --deepspeed-version or a scenario's deepspeed_version: whose rules resolve the config.
  DeepSpeedVersion version = DeepSpeedVersion::Edaa722;
};

/// Parses ds_config JSON text. `source` names the file in messages. Never throws.
Result<DsConfig> load_ds_config_text(const std::string& text, const std::string& source,
                                     const AutoValues& autos);
/// Reads and parses a ds_config.json file.
Result<DsConfig> load_ds_config_file(const std::string& path, const AutoValues& autos);
/// A default config for a stage 0..3 (what `plan` uses when no --ds-config is given): DeepSpeed's
/// defaults, fp16.enabled / bf16.enabled set from `precision`, micro batch 1, GAS 1.
DsConfig default_ds_config(int stage, DType precision,
                           DeepSpeedVersion version = DeepSpeedVersion::Edaa722);

/// offload_optimizer / offload_param pin_memory when the config does not write it: True at
/// edaa722 (offload_config.py:45, :75; PR #8207, 7dfa67a, "pinned offload buffers by default",
/// first in v0.19.5), False at v0.14.4 (offload_config.py:43, :70).
inline bool default_pin_memory(DeepSpeedVersion v) { return v == DeepSpeedVersion::Edaa722; }
/// Both offload blocks' pin_memory set to `v`'s default (a config that does not write them).
void set_default_pin_memory(DsConfig& c);

}  // namespace zerosim
