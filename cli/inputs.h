// Shared input handling for commands that take a model, a cluster and a DeepSpeed config
// (plan today; simulate and schedule later): the flags, their defaults, and how they combine.
#pragma once

#include <string>
#include <vector>

#include "args.h"
#include "zerosim/ds_config.h"
#include "zerosim/gpu_catalog.h"
#include "zerosim/memory_model.h"
#include "zerosim/model_desc.h"

namespace zerosim::cli {

/// The embedded default scenario, used when no model flag is given (and said so on stderr).
inline constexpr const char* kDefaultModel = "llama2-7b";
inline constexpr const char* kDefaultGpu = "H100-SXM-80GB";
inline constexpr std::uint64_t kDefaultGpus = 8;
inline constexpr std::uint64_t kMaxGpus = 16777216;  ///< 2^24: beyond any real cluster, no overflow

/// Flags for the model (--model/--hf-config/--params/--param-list), cluster and training.
std::vector<FlagSpec> model_cluster_flags();

struct Inputs {
  ModelDesc model;
  Cluster cluster;
  DsConfig ds;
  bool ds_config_given = false;
  TrainingSettings training;
  bool used_default_model = false;
  std::string links_basis;  ///< apply_cluster_link_flags: what the cluster link flags replaced
  /// --trainer-config given and its base not bitsandbytes-quantized: the trainer registers the
  /// ds_config before from_pretrained, so a stage 3 model is built under deepspeed.zero.Init
  /// (trainer_zero_init_note says why). The caller sets TrainingSettings::zero_init for stage 3.
  bool trainer_zero_init = false;
  std::string trainer_zero_init_note;
};

/// Loads and cross-checks everything the flags name. Every problem is collected.
Result<Inputs> load_inputs(const ParsedArgs& args);

}  // namespace zerosim::cli
