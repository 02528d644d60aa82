// Calibration: the time model's parameters fitted to measured traces (`zerosim calibrate`), saved
// as versioned JSON and applied by `--calibration FILE` on plan, simulate and check.
//
// What is fitted, from the spans and comm records of one or more measured traces of one GPU:
//   * compute efficiency: each compute span's achieved rate flops / duration over the dense rate of
//     the run's 16-bit (or fp32) dtype. Spans are grouped in classes (kind, pieces per layer pass,
//     FLOPs); the fastest class is GPU-bound, the rate R of the GPU; a class slower than R by more
//     than kHostBoundTolerance is host-bound (its time is the host's). With two or more hidden
//     sizes e_max and h_half of eff(h) = e_max h / (h + h_half) are fitted; with one, the
//     efficiency of that GEMM size class (the default curve's h_half is kept for other sizes, and
//     the basis says so);
//   * host costs (time_model.h HostCosts), from the host-bound classes: a compute op's host time
//     is K × kernel_launch / pieces (+ the stage-3 fetch + release hooks), K = 16 forward and
//     recompute, 32 backward kernels per layer: least squares over the classes in kernel_launch
//     (and the hooks in stage 3). Where the spans carry host issue times (Span::issue_ns, measured
//     runs) a class's host time is the median gap between its issue and the next op's; otherwise
//     only host-bound classes tell (a value not observable keeps the default, and says so);
//   * collectives: per kind, NCCL's alpha-beta line through the comm records' (S, time), the
//     nccl-tests fit (collective_model.h); the collective launch is the trace's alpha minus the
//     device alpha of an nccl-tests table of that kind (--nccl-tests), else issue-time gaps, else
//     the default launch stays and the fitted alpha is net of it.
// Every fitted value carries a basis (one line: how, from what) and the residual of its fit.
#pragma once

#include <array>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "zerosim/collective_model.h"
#include "zerosim/diagnostic.h"
#include "zerosim/engine.h"
#include "zerosim/gpu_catalog.h"
#include "zerosim/trace.h"

namespace zerosim {

inline constexpr const char* kCalibrationFormat = "zerosim-calibration";
inline constexpr int kCalibrationVersion = 1;
/// A compute class this much slower than the GPU's rate is host-bound (relative).
inline constexpr double kHostBoundTolerance = 0.02;

/// One measured trace given to the fit.
struct CalibrationInput {
  std::string path;    ///< as given on the command line
  std::string digest;  ///< "fnv1a64:<16 hex>" of the file's bytes
  Trace trace;
  std::uint64_t hidden = 0;  ///< the model's hidden size (0: unknown)
};

/// One fitted host or compute parameter. `value` nullopt: not observable in the traces (the
/// default stays; basis says why).
struct FittedParam {
  std::optional<double> value;
  std::string basis;
  double residual = 0;  ///< largest relative residual of the fit's data points
};

/// One fitted collective kind.
struct FittedCollective {
  CollectiveKind kind = CollectiveKind::AllReduce;
  CalibratedCollective fit;            ///< alpha (device, net of the launch) and busBw
  Bytes min_bytes = 0, max_bytes = 0;  ///< the size range of the comm records fitted (S)
  std::uint64_t calls = 0;
  std::string basis;
};

struct Calibration {
  std::string gpu;  ///< GPU catalog name of the measured runs
  struct Source {
    std::string path, digest, clock, model;
    int stage = 0;
    std::uint32_t world = 0;
    std::uint64_t hidden = 0;
  };
  std::vector<Source> sources;
  // Compute. curve: e_max and h_half fitted (two or more hidden sizes); else the size class at
  // `hidden` with `efficiency` (e_max then follows from the default h_half).
  bool curve = false;
  FittedParam efficiency;  ///< at `hidden` (size class) or unused (curve)
  std::uint64_t hidden = 0;
  FittedParam e_max, h_half;
  // Host, µs.
  FittedParam kernel_launch_us;
  FittedParam stage3_hooks_us;  ///< fetch + release per module (split 2:1 as the defaults)
  FittedParam collective_launch_us;
  std::vector<FittedCollective> collectives;
  /// Set by read_calibration_file: the path, for "calibrated: FILE".
  std::string path;
};

/// Fits the calibration. Errors (one line each): no trace, a trace whose clock is "simulated", or
/// "host_steady" unless `allow_host_clock` (host time is not GPU time), traces of different GPUs,
/// a GPU not in the catalog, a trace without compute spans or without comm records.
/// `nccl_tests`: device-side collective fits (optional).
Result<Calibration> fit_calibration(const std::vector<CalibrationInput>& inputs,
                                    const CalibratedLinks* nccl_tests, bool allow_host_clock);

/// Writes the versioned JSON (deterministic).
void write_calibration_json(const Calibration& c, std::ostream& out);
/// The fitted values with units and residuals, one row each.
void write_calibration_table(const Calibration& c, std::ostream& out);
/// Reads and validates it (format, version, GPU, every value's range); `path` is recorded.
Result<Calibration> read_calibration_file(const std::string& path);
Result<Calibration> read_calibration_text(const std::string& text, const std::string& source);

/// One line for a report's notes: "time model calibrated: FILE (GPU, what was fitted)".
std::string calibration_note(const Calibration& c);

/// What a calibration cannot know about a run of `world` ranks, `gpus_per_node` to a node: one
/// line per fitted collective measured within one node when the run spans nodes (its busBw is
/// NVLink's, the run's rings cross the network), or across nodes when the run is one node. An
/// 8-GPU nccl-tests table timed a 64-GPU run's collectives at NVLink speed without a word.
std::vector<std::string> calibration_scope_warnings(const Calibration& c, std::uint64_t world,
                                                    std::uint64_t gpus_per_node);

/// Applies the fitted values to `o` for a run on `gpu` (a calibration of another GPU is refused:
/// one error). Values not fitted stay as they are. Provenance: "calibrated: FILE" in the notes.
Diagnostics apply_calibration(const Calibration& c, const GpuSpec& gpu, EngineOptions& o);

}  // namespace zerosim
