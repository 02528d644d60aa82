// The viewer's what-if mode, headless (issue #9 "What-if (live)"): the knobs a user changes on a
// scenario, applied through the core's public API only. The DeepSpeed knobs are written into a
// ds_config.json text and read back by load_ds_config_text, so a change is validated exactly as a
// ds_config.json with that value would be (and "save as ds_config.json" writes the same text);
// then plan_partition, build_schedule and simulate. The previous run is kept as the ghost. No
// ImGui here: the panel (ui/draw/what_if_panel) edits a Knobs and calls WhatIf::apply.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "zerosim/diagnostic.h"
#include "zerosim/scenario.h"
#include "zerosim/trace.h"

namespace zerosim::view {

/// What the panel edits. The DeepSpeed keys are named as ds_config.json names them; the last
/// four are not DeepSpeed config keys (the model's gradient checkpointing, the launcher's
/// cluster), so the saved config does not hold them.
struct Knobs {
  int stage = 0;  ///< zero_optimization.stage
  bool offload_optimizer =
      false;                      ///< zero_optimization.offload_optimizer on ("cpu", or the base's)
  bool offload_param = false;     ///< zero_optimization.offload_param on (stage 3)
  std::uint64_t micro_batch = 1;  ///< train_micro_batch_size_per_gpu
  std::uint64_t grad_accum = 1;   ///< gradient_accumulation_steps
  std::uint64_t reduce_bucket_size = 0;  ///< elements
  bool overlap_comm = false;             ///< as resolved (unset: stage == 3)
  bool contiguous_gradients = true;
  std::uint64_t prefetch_bucket_size = 0;         ///< stage3_prefetch_bucket_size, elements
  std::uint64_t param_persistence_threshold = 0;  ///< stage3_param_persistence_threshold
  std::uint64_t max_live_parameters = 0;          ///< stage3_max_live_parameters
  bool activation_checkpointing = false;          ///< training.activation_checkpointing
  std::string gpu;                                ///< GPU catalog name
  std::uint64_t nodes = 1;
  std::uint64_t gpus_per_node = 1;
  bool operator==(const Knobs&) const = default;
};

/// The GPU catalog's names, in catalog order (the panel's GPU list: the drawing layer reads no
/// core header itself).
std::vector<std::string> gpu_names();

/// The knobs of a loaded scenario.
Knobs knobs_of(const Scenario& s);
/// The DeepSpeed knobs of a config (the others from `rest`).
Knobs knobs_of(const DsConfig& ds, const Knobs& rest);

/// Sets the knob named `key` (the Knobs field name: stage, offload_optimizer, offload_param,
/// micro_batch, grad_accum, activation_checkpointing, reduce_bucket_size, overlap_comm,
/// contiguous_gradients, prefetch_bucket_size, param_persistence_threshold, max_live_parameters,
/// gpu, nodes, gpus_per_node) from text (integers in decimal, booleans true/false). Returns ""
/// or the problem as "expected ..., got ..." (`zerosim view --set`).
std::string set_knob(Knobs& k, const std::string& key, const std::string& value);

/// `base` with the DeepSpeed knobs of `k` written over it, as ds_config.json text (deterministic,
/// two-space indent). What the knobs do not cover keeps `base`'s values: precision and loss
/// scaling, clipping, the optimizer type, the other zero_optimization keys.
std::string ds_config_json(const DsConfig& base, const Knobs& k);

/// `base` with `k` applied: the config read back from ds_config_json (source names it in errors),
/// the training and cluster knobs set. Refuses what DeepSpeed or zerosim refuses, one line each.
Result<Scenario> apply_knobs(const Scenario& base, const Knobs& k, const std::string& source);

/// Partitions, builds (without the builder's self-check, as the planner does: simulate lowers
/// and checks what it runs) and simulates a scenario; the trace of the run.
Result<Trace> simulate_scenario(const Scenario& s);

/// A what-if session: the scenario, the current run and the previous one (the ghost).
class WhatIf {
 public:
  /// Loads and simulates a scenario file.
  static Result<std::unique_ptr<WhatIf>> open(const std::string& scenario_path);
  /// Simulates a scenario resolved elsewhere (`zerosim view --model M --gpus N --stage S`: the
  /// CLI's planner flags). `source` names it in errors; a file of that name is the one "save as
  /// ds_config.json" refuses to overwrite (none when the scenario came from flags).
  static Result<std::unique_ptr<WhatIf>> open(Scenario base, const std::string& source);

  const Knobs& knobs() const { return knobs_; }
  const Scenario& scenario() const { return scenario_; }
  const Trace& trace() const { return *trace_; }
  /// The previous configuration's run (nullptr until a change succeeded).
  const Trace* ghost() const { return ghost_ ? &*ghost_ : nullptr; }
  const std::optional<Knobs>& ghost_knobs() const { return ghost_knobs_; }
  /// Wall time of the last simulation (ms), for the panel.
  double last_simulation_ms() const { return last_ms_; }
  /// Re-simulates with `k`. Success: the current run becomes the ghost. Failure (a knob refused,
  /// the run cannot be built): nothing changes; the diagnostics say why.
  Diagnostics apply(const Knobs& k);
  /// Writes ds_config_json of the current knobs to `path`; false and `error` when it cannot.
  bool save_ds_config(const std::string& path, std::string& error) const;

 private:
  WhatIf() = default;
  std::string path_;
  Scenario base_;      // as loaded: every change starts from it
  Scenario scenario_;  // with knobs_ applied
  Knobs knobs_;
  std::optional<Trace> trace_;
  std::optional<Knobs> ghost_knobs_;
  std::optional<Trace> ghost_;
  double last_ms_ = 0;
};

}  // namespace zerosim::view
