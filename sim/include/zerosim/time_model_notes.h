// The time model's basis notes: every cost figure a step time is built from, and whether it is a
// default (docs/time_model.md), given on the command line, or calibrated (--calibration,
// --nccl-tests). One builder serves `simulate` (its trace and summary notes) and `plan` (its
// "time model" block and JSON "time_model"), so the two commands cannot describe the same inputs
// differently (#13 item 4).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "zerosim/gpu_catalog.h"
#include "zerosim/time_model.h"
#include "zerosim/units.h"

namespace zerosim {

struct EngineOptions;

/// Where a note's figures come from; a note mixing several takes the strongest (calibrated over
/// given over default), and its `source` says which figure is which.
enum class TimeBasis { Default, Given, Calibrated };

/// "default", "given", "calibrated".
std::string_view time_basis_name(TimeBasis b);

struct TimeModelNote {
  std::string what;  ///< "compute", "host", "memory-bound ops", "collectives"
  TimeBasis basis = TimeBasis::Default;
  /// What the figures rest on, as the note's brackets say it ("default: GPU catalog", "given:
  /// --network-gbps 25 ...", "calibrated: FILE (...)"); a collectives note adds its calibrated
  /// collectives after "; calibrated: ".
  std::string source;
  /// The figures, each named with its unit ("tflops", "kernel_launch_us", "network_gbps", ...).
  std::vector<std::pair<std::string, double>> values;
  /// The whole note as `simulate` prints it ("compute: 494.5 TFLOP/s = bf16 dense 989 x ...").
  std::string text;
};

/// The four time-model notes (compute, host, memory-bound ops, collectives) for a run in `lp` of
/// ZeRO `stage` (3 lists the stage-3 hook costs) on `gpu` with `options`; `rate` is the compute
/// rate the cost model uses (CostModel::rate(), or compute_rate() for the same shape).
std::vector<TimeModelNote> time_model_notes(const GpuSpec& gpu, DType lp, int stage,
                                            const ComputeRate& rate, const EngineOptions& options);

}  // namespace zerosim
