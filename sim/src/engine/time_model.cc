// time_model.h: the efficiency curves, the roofline cap, host costs and the step speed. Sources
// and derivations: docs/time_model.md.
#include "zerosim/time_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace zerosim {
namespace {

std::string fixed(double x, int digits) {
  char b[48];
  std::snprintf(b, sizeof b, "%.*f", digits, x);
  return b;
}

// Three significant digits.
std::string sig3(double x) {
  const int digits = x >= 100 ? 0 : x >= 10 ? 1 : 2;
  return fixed(x, digits);
}

double dense_tflops(const GpuSpec& gpu, DType lp) {
  switch (lp) {
    case DType::BFloat16:
      return gpu.bf16_tflops;
    case DType::Float16:
      return gpu.fp16_tflops;
    default:
      return gpu.fp32_tflops;
  }
}

}  // namespace

std::optional<EfficiencyCurve> efficiency_curve(GpuGeneration g) {
  // Fits of eff(h) = e_max h / (h + h_half) through two points of MosaicML llm-foundry's published
  // MPT training benchmarks (scripts/train/benchmarking/README.md, bf16, FSDP FULL_SHARD, 8 GPUs,
  // large micro-batches). HFU is used, not MFU: it counts the recomputed forward, which the
  // simulator runs as its own ops. MPT hidden sizes: 350m 1024, 760m 1536, 30b 7168, 70b 8192.
  // End-to-end HFU includes some exposed communication, so the curves are slight lower bounds.
  static constexpr EfficiencyCurve kAmpere{
      0.803, 557,
      "measured: llm-foundry A100-80GB bf16 HFU, 52% at hidden 1024 (MPT-350m) and 74% at 7168 "
      "(MPT-30b)"};
  static constexpr EfficiencyCurve kHopper{
      0.644, 1069,
      "measured: llm-foundry H100-80GB bf16 HFU, 38% at hidden 1536 (MPT-760m) and 57% at 8192 "
      "(MPT-70b)"};
  switch (g) {
    case GpuGeneration::Ampere:
      return kAmpere;
    case GpuGeneration::Hopper:
      return kHopper;
    case GpuGeneration::Blackwell:
      return EfficiencyCurve{kHopper.e_max, kHopper.h_half,
                             "assumed: Hopper's measured curve (no published Blackwell table)"};
    case GpuGeneration::Cdna3:
      return EfficiencyCurve{kHopper.e_max, kHopper.h_half,
                             "assumed: Hopper's measured curve (no published MI300X table)"};
    case GpuGeneration::Ada:
      return EfficiencyCurve{kAmpere.e_max, kAmpere.h_half,
                             "assumed: Ampere's measured curve (no published Ada table)"};
    case GpuGeneration::Volta:
      // Megatron-LM (Shoeybi et al. 2019, §5.1): the 1.2B baseline (hidden 1536) sustains 39
      // TFLOP/s on one V100, 30% of 125; Ampere's h_half with e_max scaled to that point.
      return EfficiencyCurve{0.41, 557,
                             "measured point: Megatron-LM 2019, 30% of peak at hidden 1536 on "
                             "V100; Ampere's curve shape"};
    case GpuGeneration::Unknown:
      break;
  }
  return std::nullopt;
}

ComputeRate compute_rate(const GpuSpec& gpu, DType lp, const GemmShape& shape,
                         std::optional<double> given, const CalibratedCompute* calibrated) {
  ComputeRate r;
  r.dense_tflops = dense_tflops(gpu, lp);
  if (given) {
    r.efficiency = *given;
    r.basis = "given: --efficiency " + fixed(*given, 3);
    return r;
  }
  auto curve = efficiency_curve(gpu.generation);
  if (calibrated) curve = EfficiencyCurve{calibrated->e_max, calibrated->h_half, ""};
  if (calibrated && shape.hidden == 0) {
    r.efficiency = calibrated->e_max;
    r.basis = calibrated->basis + ": GEMM shape unknown, e_max " + fixed(calibrated->e_max, 3);
    return r;
  }
  if (!curve || shape.hidden == 0) {
    r.efficiency = kFallbackComputeEfficiency;
    r.basis = std::string("default: fallback 0.5 (") +
              (!curve ? "the GPU names no generation" : "GEMM shape unknown") + ")";
    return r;
  }
  const auto h = static_cast<double>(shape.hidden);
  const double curve_eff = curve->e_max * h / (h + curve->h_half);
  r.efficiency = curve_eff;
  r.basis = calibrated ? calibrated->basis + ": GEMM curve at hidden " +
                             std::to_string(shape.hidden) + " -> " + fixed(curve_eff, 3)
                       : std::string("default: ") + gpu_generation_name(gpu.generation) +
                             " GEMM curve at hidden " + std::to_string(shape.hidden) + " -> " +
                             fixed(curve_eff, 3) + " (" + curve->basis + ")";
  if (shape.tokens > 0 && r.dense_tflops > 0 && gpu.hbm_gbps > 0) {
    const auto m = static_cast<double>(shape.tokens);
    const double bytes = static_cast<double>(dtype_size(lp));
    const double intensity = 2.0 * m * h / (bytes * (2.0 * m + h));  // FLOP per byte
    const double cap = intensity * gpu.hbm_gbps * 1e9 / (r.dense_tflops * 1e12);
    if (cap < curve_eff) {
      r.efficiency = cap;
      r.basis += "; memory-bound at " + std::to_string(shape.tokens) +
                 " tokens per micro-batch: roofline cap " + fixed(cap, 3);
    }
  }
  return r;
}

HostCosts HostCosts::none() {
  HostCosts h;
  h.kernel_launch_us = 0;
  h.stage3_fetch_hook_us = 0;
  h.stage3_release_hook_us = 0;
  h.collective_launch_us = 0;
  h.given = true;
  return h;
}

double host_compute_ns(const HostCosts& h, OpKind kind, std::uint32_t pieces, bool stage3) {
  const std::uint32_t kernels =
      kind == OpKind::Backward ? h.kernels_per_layer_backward : h.kernels_per_layer_forward;
  const double n = std::max<std::uint32_t>(pieces, 1);
  double us = kernels * h.kernel_launch_us / n;
  if (stage3) us += h.stage3_fetch_hook_us + h.stage3_release_hook_us;
  return us * 1e3;
}

std::string human_duration(SimTime ns) {
  const auto x = static_cast<double>(ns);
  if (ns == 0) return "0 ms";
  if (x < 1e6) return sig3(x / 1e3) + " us";
  if (x < 1e9) return sig3(x / 1e6) + " ms";
  if (x < 60e9) return sig3(x / 1e9) + " s";
  if (x < 3600e9) return sig3(x / 60e9) + " min";
  return sig3(x / 3600e9) + " h";
}

StepSpeed step_speed(const Summary& summary, const Schedule& schedule, const GpuSpec& gpu,
                     const GemmShape& shape) {
  StepSpeed s;
  if (summary.steps.empty()) return s;
  const StepSummary& last = summary.steps.back();
  s.step_ns = last.end_ns - last.start_ns;
  for (const Op& op : schedule.ops)
    if (op.step == last.step && (op.kind == OpKind::Forward || op.kind == OpKind::Backward))
      s.model_flops_per_gpu += op.flops;
  const double peak = dense_tflops(gpu, schedule.meta.lp) * 1e12;
  const double seconds = static_cast<double>(s.step_ns) / 1e9;
  if (seconds > 0 && peak > 0) s.mfu = s.model_flops_per_gpu / (seconds * peak);
  const std::uint64_t tokens =
      shape.tokens > 0 ? shape.tokens : schedule.meta.tokens_per_micro_batch;
  if (tokens > 0) {
    s.tokens_per_step = static_cast<double>(tokens) * schedule.meta.grad_accum *
                        static_cast<double>(schedule.meta.world);
    if (seconds > 0) s.tokens_per_s = s.tokens_per_step / seconds;
  }
  return s;
}

}  // namespace zerosim
