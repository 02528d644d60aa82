// Scenario files: one runnable training setup — a model, a DeepSpeed config, a cluster and training
// settings — as a user would hand it to `zerosim plan|simulate|schedule --scenario FILE`
// (DESIGN.md "Formats"; scenarios/README.md documents every key).
//
//   {"format": "zerosim-scenario", "version": 1, "name": "...", "description": "...",
//    "model": {"zoo": "llama2-7b"} | {"hf_config": "path"} | {"param_list": "path"} | {"params":
//    13e9}, "deepspeed": {...inline ds_config...} | "deepspeed_config": "path", "cluster": {"gpu":
//    "H100-SXM-80GB", "nodes": 1, "gpus_per_node": 8}, "training": {"seq_len": 4096,
//    "activation_checkpointing": false, "attention": "flash", "steps": 2}, "deepspeed_version":
//    "edaa722", "mode": "deepspeed"}
//
// Paths are relative to the scenario file. The DeepSpeed config is read by load_ds_config_text /
// load_ds_config_file with "auto" values resolved from the cluster's world size and the model's
// hidden size, so DeepSpeed keys are spelled exactly as DeepSpeed spells them. Every problem is a
// Diagnostic naming the scenario file and the JSON pointer (for an inline "deepspeed" block the
// pointer is /deepspeed/...; a referenced file's own errors name that file, followed by a note
// pointing at the scenario key that references it).
#pragma once

#include <cstdint>
#include <string>

#include "zerosim/diagnostic.h"
#include "zerosim/ds_config.h"
#include "zerosim/gpu_catalog.h"
#include "zerosim/memory_model.h"
#include "zerosim/model_desc.h"
#include "zerosim/schedule.h"

namespace zerosim {

/// Steps simulated when neither the scenario nor --steps says: one warm-up step, then the steady
/// step the reports use. The first step differs from training's steady state wherever the first
/// optimizer step creates Adam's states lazily (every DeepSpeed path but stage 0's FP16_Optimizer,
/// which runs a dummy step at init) and at stage 3, whose first iteration records the module trace
/// without prefetching; no configuration zerosim models needs more than one.
inline constexpr std::uint32_t kDefaultSteps = 2;

inline constexpr const char* kScenarioFormat = "zerosim-scenario";
inline constexpr int kScenarioVersion = 1;

/// Where the model comes from (exactly one of the four "model" keys).
struct ModelSource {
  enum class Kind { Zoo, HfConfig, ParamList, Params };
  Kind kind = Kind::Zoo;
  std::string zoo;    ///< Zoo: the name as written ("llama2-7b")
  std::string path;   ///< HfConfig/ParamList: the path as resolved against the scenario's folder
  double params = 0;  ///< Params: the requested parameter count (synthetic model)
};

struct Scenario {
  std::string name;         ///< "name", or the file's stem when absent
  std::string description;  ///< may be empty
  std::string source;       ///< the scenario file (or the source given to load_scenario_text)
  ModelSource model_source;
  ModelDesc model;             ///< the loaded model
  DsConfig ds;                 ///< the loaded, resolved DeepSpeed config
  std::string ds_config_path;  ///< resolved "deepspeed_config" path; empty for an inline block
  Cluster cluster;
  TrainingSettings training;  ///< micro_batch = ds.micro_batch (train_micro_batch_size_per_gpu)
  /// training.steps: optimizer steps to simulate, >= 1; default kDefaultSteps.
  std::uint32_t steps = kDefaultSteps;
  std::vector<std::uint32_t> overflow_steps;  ///< training.overflow_steps: steps whose check fails
  DeepSpeedVersion version = DeepSpeedVersion::Edaa722;
  Accounting mode = Accounting::DeepSpeed;
};

/// Parses scenario text. `source` names it in diagnostics; relative paths inside resolve against
/// `base_dir` (empty = the current directory). `version` (--deepspeed-version) replaces the
/// file's deepspeed_version before its DeepSpeed config is resolved (DsConfig::version: each
/// release refuses configs the other runs). Never throws.
Result<Scenario> load_scenario_text(const std::string& text, const std::string& source,
                                    const std::string& base_dir,
                                    std::optional<DeepSpeedVersion> version = std::nullopt);
/// Reads a scenario file; paths inside resolve against the file's folder.
Result<Scenario> load_scenario_file(const std::string& path,
                                    std::optional<DeepSpeedVersion> version = std::nullopt);

}  // namespace zerosim
