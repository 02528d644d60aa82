// The capacity planner behind `zerosim plan`: for a model on a cluster, what every ZeRO stage (and
// offload variant) needs per GPU, whether it fits, the largest micro-batch, the smallest GPU count,
// the traffic per step, what DeepSpeed's own estimators say, and a recommendation.
//
// Pure computation: no I/O. Reporters (plan_report.h) turn a PlanResult into
// table/JSON/CSV/Markdown.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "zerosim/diagnostic.h"
#include "zerosim/ds_config.h"
#include "zerosim/ds_estimator.h"
#include "zerosim/gpu_catalog.h"
#include "zerosim/ir_types.h"
#include "zerosim/memory_model.h"
#include "zerosim/model_desc.h"
#include "zerosim/partition_plan.h"
#include "zerosim/saturating.h"
#include "zerosim/time_model_notes.h"

namespace zerosim {

struct Calibration;  // calibration.h

struct PlanRequest {
  ModelDesc model;
  Cluster cluster;
  DsConfig base;                 ///< --ds-config (or defaults); stage/offload are swept from it
  bool ds_config_given = false;  ///< rows matching base's stage and offload are marked
  TrainingSettings training;
  Accounting mode = Accounting::DeepSpeed;
  /// --deepspeed-version (or the scenario's): the release whose behaviour every row simulates.
  DeepSpeedVersion version = DeepSpeedVersion::Edaa722;
  std::uint64_t sweep_max_gpus = 4096;  ///< powers of two 1..this for min GPUs / the sweep
  bool full_sweep = false;              ///< also fill PlanResult::sweep (every variant x GPU count)
  OverheadParams overheads = default_overheads();
  /// Rows of stages above this are not planned (an 8-bit quantized base: stage 3 not modelled).
  int max_stage = 3;
  /// --cpu-memory-per-node: host RAM of one node; a row fits only when host_per_node of its host
  /// peak fits too (nullopt: the host side is not checked).
  std::optional<Bytes> cpu_memory_per_node;
  /// --calibration: fitted time-model values for every simulated row (its GPU checked by the
  /// caller, apply_calibration); null: the defaults.
  std::shared_ptr<const Calibration> calibration;
  /// What the cluster link flags replaced ("given: --network-gbps 25 ..."; empty: the GPU
  /// catalog's links), for the time-model notes (EngineOptions::links_basis).
  std::string links_basis;
};

/// Host RAM one node needs: `per_rank` (a rank's host peak, MemoryReport::host_bytes) times the
/// node's GPUs, one process each (saturating).
inline Bytes host_per_node(Bytes per_rank, const Cluster& c) {
  const std::uint64_t n = c.gpus_per_node;
  return n != 0 && per_rank > kBytesOverflow / n ? kBytesOverflow : per_rank * n;
}

/// The predicted speed of one configuration: a simulated steady step (plan_speed.cc).
struct RowSpeed {
  std::uint64_t micro_batch = 0;          ///< the micro-batch simulated (the largest that fits)
  bool activation_checkpointing = false;  ///< simulated with full activation checkpointing
  SimTime step_ns = 0;                    ///< the steady step
  double tokens_per_s = 0;                ///< all GPUs
  double mfu = 0;                         ///< model FLOPs utilisation of the dense peak
};

/// Why a row has no speed (or no checkpointed speed): what the plan's speed table says in its
/// place.
enum class SpeedSkip : std::uint8_t {
  None,       ///< simulated, or nothing to simulate
  NoFit,      ///< no micro-batch fits (checkpointed: none larger than without checkpointing)
  Dominated,  ///< a row of the same stage, with no more offload or recompute, runs at least its
              ///< micro-batch: never slower (predict_speeds' `dominated`)
  Bounded,    ///< even its compute alone is slower than the fastest configuration simulated
  Failed,     ///< its simulation failed (a note says why) or it has no partition plan
  NoShape,    ///< the model has no transformer shape (a parameter list): no GEMM size, no speed
};

/// "no_fit", "dominated", "bounded", "failed", "no_shape"; nullptr for None (JSON null).
const char* speed_skip_name(SpeedSkip s);

struct PlanRow {
  int stage = 0;
  OffloadVariant offload = OffloadVariant::None;
  std::string optimizer;  ///< wrapper DeepSpeed runs: "DeepSpeedZeroOptimizer", ...
  MemoryReport memory;
  bool fits = false;      ///< gpu_fits && host_fits
  bool gpu_fits = false;  ///< the GPU side: memory.total() within the GPU
  bool host_fits = true;  ///< the host side within PlanRequest::cpu_memory_per_node (if given)
  std::int64_t headroom_bytes = 0;        ///< capacity - total (negative when it does not fit)
  std::uint64_t max_micro_batch = 0;      ///< largest micro-batch that fits (0: none)
  std::optional<std::uint64_t> min_gpus;  ///< smallest power-of-two GPU count that fits
  /// Bytes each GPU sends in one steady optimizer step (ring formulas; the simulator's step
  /// traffic in deepspeed accounting; init broadcasts excluded, see init_bytes_sent).
  Bytes comm_bytes_per_step = 0;
  /// Deepspeed accounting: the numbers below come from simulating the row (row_simulation.h);
  /// memory is then the whole-run peak (init included) plus overheads, and memory.peak_phase says
  /// which phase decides ("init", "first step" or "steady").
  bool simulated = false;
  Bytes steady_total_bytes = 0;  ///< steady-state peak plus overheads
  SimTime first_step_ns = 0;     ///< the first step (stage 3 trace recording, lazy Adam states)
  SimTime steady_step_ns = 0;    ///< the steady step's predicted time
  Bytes init_bytes_sent = 0;     ///< bytes each GPU sends at init (parameter broadcasts)
  std::optional<EstimatorResult> ds_estimate;  ///< DeepSpeed's estimator for this stage/offload
  bool matches_ds_config = false;              ///< the row the user's ds_config selects
  /// Largest micro-batch with activation checkpointing when the request has it off (0: not
  /// searched, or none fits).
  std::uint64_t max_micro_batch_checkpointed = 0;
  /// Simulated at its largest micro-batch with the requested checkpointing; nullopt: nothing fits,
  /// or not simulated (predict_speeds: it cannot beat the recommended configuration).
  std::optional<RowSpeed> speed;
  /// With activation checkpointing at max_micro_batch_checkpointed, when that is larger than
  /// max_micro_batch (only then can it be faster: it recomputes the forward).
  std::optional<RowSpeed> speed_checkpointed;
  /// Why speed / speed_checkpointed is nullopt (None when it is set).
  SpeedSkip speed_skip = SpeedSkip::None;
  SpeedSkip speed_checkpointed_skip = SpeedSkip::None;
};

/// One cell of the full sweep.
struct SweepCell {
  std::uint64_t gpus = 0;
  int stage = 0;
  OffloadVariant offload = OffloadVariant::None;
  Bytes total_bytes = 0;
  bool fits = false;
  std::uint64_t max_micro_batch = 0;
  /// total_bytes is a floor, not simulated: the whole 16-bit model every GPU holds at init
  /// without zero.Init (plus overheads) already exceeds the GPU, at any GPU count.
  bool at_least = false;
};

struct PlanResult {
  PlanRequest request;                     ///< inputs, for the report header
  std::vector<PlanRow> rows;               ///< stage 0, 1, 1+opt, 2, 2+opt, 3, 3+opt, 3+opt+params
  std::optional<std::size_t> recommended;  ///< index into rows
  bool recommend_checkpointing = false;    ///< the recommended row's speed_checkpointed won
  std::string recommendation;              ///< one line: what and why
  std::vector<std::string> notes;          ///< one line each
  std::vector<SweepCell> sweep;            ///< when request.full_sweep
  /// The time model every timed row and speed uses, each figure with its basis (default, given
  /// or calibrated): the notes `zerosim simulate` prints for the request's micro-batch, with the
  /// stage-3 hook costs (time_model_notes.h). Empty when no row is timed.
  std::vector<TimeModelNote> time_model;
};

/// Simulates the steady step of one row's configuration `ds` at `micro_batch` on the request's
/// cluster (plan_speed.cc): its schedule through the engine with the default time model.
Result<RowSpeed> simulate_row_speed(const PlanRequest& request, const DsConfig& ds,
                                    const PartitionPlan& plan, std::uint64_t micro_batch,
                                    bool activation_checkpointing);

/// Simulates the rows' candidate configurations (largest micro-batch, without and with activation
/// checkpointing) as a branch and bound: candidates in order of an upper bound on their tokens/s
/// (their compute alone at the efficiency the engine uses), stopping once the best simulated one
/// beats every remaining bound; a candidate with more offload or recompute than another of its
/// stage at no larger micro-batch is never faster and is skipped. `plan_of(stage, offload)` gives
/// a row's partition plan. Simulation errors become notes. `window` candidates are simulated at
/// a time on parallel threads (0: one per core) and taken in order, so the speeds and notes are
/// those of one at a time, whatever the window.
void predict_speeds(PlanResult& out,
                    const std::function<const PartitionPlan*(const PlanRow&)>& plan_of,
                    std::size_t window = 0);

/// Picks the recommendation on predicted speed: the simulated configuration with the most
/// tokens/s; ties go to no offload, then the lower stage, then no recompute. Without any speed
/// (no transformer shape, nothing fits) the memory rule's recommendation stands. Fills
/// recommended, recommend_checkpointing and recommendation.
void recommend_on_speed(PlanResult& out);

/// Runs the planner. Fails only on inputs that make the plan meaningless (e.g. zero GPUs).
Result<PlanResult> make_plan(const PlanRequest& request);

/// The DsConfig for one row: base with stage and offload replaced.
DsConfig variant_config(const DsConfig& base, int stage, OffloadVariant offload);
/// DeepSpeed's refusal of the request's dtypes without ZeRO (DsConfig::stage0_dtype_problem;
/// deepspeed accounting only): then the plan has no stage 0 row, and a note says why.
std::string stage0_refusal(const PlanRequest& r);

/// Bytes one GPU sends per optimizer step (ring algorithms), from the collectives DeepSpeed issues
/// (deepspeed accounting) or the paper's schedule (paper accounting).
Bytes comm_bytes_per_step(const ModelDesc& model, const PartitionPlan& plan, const DsConfig& ds,
                          std::uint64_t world, Accounting mode);

}  // namespace zerosim
