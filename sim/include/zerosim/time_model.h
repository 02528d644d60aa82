// The time model's sourced defaults (docs/time_model.md has the derivations and the sources):
//   * achieved compute efficiency per tensor-core generation as a function of the GEMM's hidden
//     size, eff(h) = e_max × h / (h + h_half), fitted to published end-to-end training
//     measurements, capped by the roofline of the micro-batch's GEMM (few tokens per micro-batch
//     make the GEMMs memory-bound);
//   * host-side costs that a GPU-only model misses: a kernel launch per kernel, the stage-3 module
//     fetch/release hooks, a collective launch;
//   * the speed a user reads: step time in human units, tokens/s and model FLOPs utilisation.
// Every parameter is an input (EngineOptions) and every output states which values were defaults,
// which were given on the command line and which were calibrated (nccl-tests).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "zerosim/gpu_catalog.h"
#include "zerosim/schedule.h"
#include "zerosim/trace.h"
#include "zerosim/units.h"

namespace zerosim {

/// The GEMMs of one transformer layer on one GPU: hidden size h and tokens M per micro-batch
/// (micro-batch × sequence length). 0: unknown (a schedule file, a model without a shape).
struct GemmShape {
  std::uint64_t hidden = 0;
  std::uint64_t tokens = 0;
};

/// eff(h) = e_max × h / (h + h_half): the fraction of the dense tensor-core rate that forward and
/// backward achieve at hidden size h with large micro-batches.
struct EfficiencyCurve {
  double e_max = 0;
  double h_half = 0;
  const char* basis = "";  ///< "measured (...)" or "assumed (...)", one line
};

/// The curve of a generation; nullopt for Unknown.
std::optional<EfficiencyCurve> efficiency_curve(GpuGeneration g);

/// Fraction of the dense rate used when neither a curve nor --efficiency applies (the old default).
inline constexpr double kFallbackComputeEfficiency = 0.5;

/// The compute rate of forward/backward and why.
struct ComputeRate {
  double dense_tflops = 0;  ///< the LP dtype's dense rate
  double efficiency = 0;    ///< in (0, 1]
  std::string basis;        ///< "default: hopper GEMM curve at hidden 4096 ..." / "given: ..."
};

/// A curve fitted by `zerosim calibrate` (calibration.h), replacing the generation's.
struct CalibratedCompute {
  double e_max = 0;
  double h_half = 0;
  std::string basis;  ///< "calibrated: FILE (...)"
};

/// The rate for `gpu` training in `lp` at `shape`; `given` (--efficiency) replaces the curve, and
/// `calibrated` (--calibration) replaces the generation's curve (the roofline cap still applies).
/// Roofline cap: a GEMM [M×h]·[h×h] in a d-byte dtype does 2Mh² FLOPs over d(2Mh + h²) bytes, so
/// below the ridge point (dense rate / HBM bandwidth) it is memory-bound.
ComputeRate compute_rate(const GpuSpec& gpu, DType lp, const GemmShape& shape,
                         std::optional<double> given,
                         const CalibratedCompute* calibrated = nullptr);

/// Host (CPU) work that issues the GPU work. A compute op takes max(GPU time, host time): in steady
/// state the host runs ahead of the GPU, unless issuing takes longer than the GPU needs.
struct HostCosts {
  double kernel_launch_us = 5.0;  ///< PyTorch eager dispatch + cudaLaunchKernel per kernel
  std::uint32_t kernels_per_layer_forward = 16;   ///< one transformer block, eager forward
  std::uint32_t kernels_per_layer_backward = 32;  ///< about twice the forward's
  double stage3_fetch_hook_us = 40.0;    ///< DeepSpeed's pre-forward/backward fetch, per module
  double stage3_release_hook_us = 20.0;  ///< its post-forward/backward release, per module
  double collective_launch_us = 10.0;    ///< torch.distributed + NCCL enqueue, per collective
  bool given = false;                    ///< set by the caller when not the defaults
  /// Non-empty: which values a calibration file set ("calibrated: FILE (kernel launch)").
  std::string calibrated;
  /// No host cost at all (GPU-only timing, as before host costs existed).
  static HostCosts none();
};

/// Host time of one compute op (ns): its share of the layer's kernel launches and, in stage 3,
/// one module fetch + release (`pieces`: compute ops the layer's pass is split into, >= 1).
double host_compute_ns(const HostCosts& h, OpKind kind, std::uint32_t pieces, bool stage3);

/// "812 µs", "51.3 ms", "5.14 s", "2.4 min", "1.7 h": three significant digits, unit by size.
std::string human_duration(SimTime ns);

// StepSpeed (the speed of the steady step) is in trace.h: the summary JSON writes it.

/// From the summary's last step and the schedule's compute ops of that step; tokens from `shape`,
/// else the schedule meta's tokens_per_micro_batch.
StepSpeed step_speed(const Summary& summary, const Schedule& schedule, const GpuSpec& gpu,
                     const GemmShape& shape);

}  // namespace zerosim
