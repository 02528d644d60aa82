// One plan row simulated: what `zerosim simulate` gives for the same inputs (the schedule built
// with kDefaultSteps steps, run through the engine with its memory ledger), reduced to what the
// planner reports. `plan` and `simulate` then share one model of memory, one traffic definition and
// one step time: the plan adds only the overhead layer no schedule allocates (CUDA context, NCCL
// buffers, fragmentation; overhead.cc).
//
// Memory: the worst role's peak over the whole run (init included: e.g. stage 3 without zero.Init
// holds the whole 16-bit model before partitioning, stage 1/2 the module's params beside the flat
// buffer) decides the fit; the steady peak (the last step) is what training sees afterwards.
// The largest micro-batch is exact without rebuilding: only activation buffers grow with the
// micro-batch (their sizes come from layer_activation_bytes), so the recorded ledger events are
// replayed with those buffers resized.
#pragma once

#include <cstdint>
#include <string>

#include "zerosim/diagnostic.h"
#include "zerosim/ds_config.h"
#include "zerosim/engine.h"
#include "zerosim/memory_model.h"
#include "zerosim/model_desc.h"
#include "zerosim/partition_plan.h"
#include "zerosim/schedule.h"

namespace zerosim {

struct Calibration;  // calibration.h

struct RowInput {
  const ModelDesc* model = nullptr;
  const PartitionPlan* plan = nullptr;  ///< partitioned for ds at cluster.world_size()
  const DsConfig* ds = nullptr;
  Cluster cluster;
  TrainingSettings training;
  OverheadParams overheads = default_overheads();
  /// Paper: the textbook schedule (the planner takes only its traffic; its memory model is the
  /// paper's closed form).
  Accounting mode = Accounting::DeepSpeed;
  DeepSpeedVersion version = DeepSpeedVersion::Edaa722;  ///< PlanRequest::version
  /// Fitted time-model values (PlanRequest::calibration); null: the defaults.
  const Calibration* calibration = nullptr;
};

/// Where the whole-run peak is first reached.
enum class PeakPhase : std::uint8_t { Init, FirstStep, Steady };
/// "init", "first step", "steady".
const char* peak_phase_name(PeakPhase p);

struct RowSimulation {
  Schedule schedule;  ///< as `zerosim simulate` builds it for these inputs
  SimulationResult sim;
  MemoryPeak whole_run;  ///< worst role, init included (what the fit verdict uses)
  MemoryPeak steady;     ///< worst role, the last step
  PeakPhase phase = PeakPhase::Steady;
  Bytes host_peak = 0;
  SimTime first_step_ns = 0, steady_step_ns = 0, init_ns = 0;
  Bytes steady_bytes_sent = 0;  ///< bytes each GPU sends in the steady step
  Bytes init_bytes_sent = 0;    ///< bytes each GPU sends at init (broadcasts)
  /// Whole-run peak plus overheads, the plan's "total/GPU".
  Bytes total = 0;
  Bytes steady_total = 0;  ///< steady peak plus overheads
  /// The whole-run peak as a MemoryReport: one item per family of schedule buffers live at the
  /// worst role's peak (same spec id, category and name pattern: "bit16_groups_flat[0] (B1)",
  /// "grad:* (T1), 580 buffers"), adding up to it; then the overheads; then the buffers live at the
  /// largest host peak, adding up to it. peak_phase is peak_phase_name(phase).
  MemoryReport report;
};

/// Builds and simulates the row (no trace, no capacity limit). Errors: a schedule that cannot be
/// built or simulated (the builder's and engine's diagnostics).
Result<RowSimulation> simulate_row(const RowInput& in);

/// Overheads on `tensor_bytes` resident at a peak: CUDA context + NCCL buffers + fragmentation.
Bytes overhead_bytes(Bytes tensor_bytes, const OverheadParams& o);

/// The worst role's whole-run device peak of `row` with the activation buffers sized for
/// `micro_batch` (the rest of the schedule does not depend on it). O(ledger events).
Bytes whole_run_peak_at(const RowSimulation& row, const RowInput& in, std::uint64_t micro_batch);

/// Largest micro-batch in [1, max_micro_batch] whose whole-run peak plus overheads is at most
/// `capacity`; 0 when 1 does not fit.
std::uint64_t max_fitting_micro_batch(const RowSimulation& row, const RowInput& in, Bytes capacity,
                                      std::uint64_t max_micro_batch);

/// A row's memory alone, for the planner's cells that show no time (the sweep at other GPU counts,
/// the micro-batch search with activation checkpointing): the same schedule and the same ledger as
/// simulate_row, without the event loop (memory_ledger in engine.h: memory events follow program
/// order, so the whole-run peak is the simulation's to the byte; plan_simulate_test checks it).
struct RowMemory {
  Schedule schedule;
  MemoryLedger ledger;
  Bytes whole_run = 0;  ///< worst role, init included (RowSimulation::whole_run.bytes)
  Bytes total = 0;      ///< whole_run plus overheads (RowSimulation::total)
  Bytes host_peak = 0;  ///< the largest role's host peak, init included (host and pinned pools)
};

/// Builds the row's schedule and its ledger (no times). Errors: as simulate_row.
Result<RowMemory> simulate_row_memory(const RowInput& in);

/// max_fitting_micro_batch of the memory-only row (the same answer as from simulate_row).
std::uint64_t max_fitting_micro_batch(const RowMemory& row, const RowInput& in, Bytes capacity,
                                      std::uint64_t max_micro_batch);

}  // namespace zerosim
