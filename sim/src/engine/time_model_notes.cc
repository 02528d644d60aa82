// time_model_notes (time_model_notes.h): the basis notes simulate and plan both print.
#include "zerosim/time_model_notes.h"

#include "zerosim/engine.h"

namespace zerosim {
namespace {

// Shortest decimal form of `x` ("989", "0.5", "494.5"): the notes' numbers as simulate has always
// printed them (std::to_string, trailing zeros dropped).
std::string num(double x) {
  std::string s = std::to_string(x);
  while (s.size() > 1 && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

// A basis text's kind by its prefix ("calibrated: ...", "given: ..."); anything else is a default.
TimeBasis basis_of(const std::string& text) {
  if (text.rfind("calibrated", 0) == 0) return TimeBasis::Calibrated;
  if (text.rfind("given", 0) == 0) return TimeBasis::Given;
  return TimeBasis::Default;
}

TimeModelNote compute_note(DType lp, const ComputeRate& rate) {
  // The cost model's rate, evaluated as CostModel::make does (dense x 1e12 x efficiency).
  const double tflops = rate.dense_tflops * 1e12 * rate.efficiency / 1e12;
  TimeModelNote n;
  n.what = "compute";
  n.basis = basis_of(rate.basis);
  n.source = rate.basis;
  n.values = {
      {"tflops", tflops}, {"dense_tflops", rate.dense_tflops}, {"efficiency", rate.efficiency}};
  n.text = "compute: " + num(tflops) + " TFLOP/s = " + std::string(dtype_name(lp)) + " dense " +
           num(rate.dense_tflops) + " x efficiency " + num(rate.efficiency) + " [" + rate.basis +
           "]";
  return n;
}

TimeModelNote host_note(int stage, const HostCosts& h) {
  TimeModelNote n;
  n.what = "host";
  n.source = !h.calibrated.empty() ? h.calibrated
             : h.given             ? std::string("given")
                                   : std::string("default: assumed, docs/time_model.md");
  n.basis = !h.calibrated.empty() ? TimeBasis::Calibrated
            : h.given             ? TimeBasis::Given
                                  : TimeBasis::Default;
  n.values = {{"kernel_launch_us", h.kernel_launch_us},
              {"kernels_per_layer_forward", static_cast<double>(h.kernels_per_layer_forward)},
              {"kernels_per_layer_backward", static_cast<double>(h.kernels_per_layer_backward)}};
  if (stage == 3) {
    n.values.emplace_back("stage3_fetch_hook_us", h.stage3_fetch_hook_us);
    n.values.emplace_back("stage3_release_hook_us", h.stage3_release_hook_us);
  }
  n.values.emplace_back("collective_launch_us", h.collective_launch_us);
  n.text = "host: " + num(h.kernel_launch_us) + " us per kernel launch (" +
           std::to_string(h.kernels_per_layer_forward) + " forward, " +
           std::to_string(h.kernels_per_layer_backward) + " backward kernels per layer), " +
           (stage == 3 ? "stage-3 hooks " + num(h.stage3_fetch_hook_us) + " us fetch + " +
                             num(h.stage3_release_hook_us) + " us release per module, "
                       : std::string()) +
           num(h.collective_launch_us) + " us per collective launch [" + n.source +
           "]; a compute op takes max(GPU time, host time)";
  return n;
}

TimeModelNote memory_note(const GpuSpec& gpu, const EngineOptions& o) {
  const bool host_given = o.host_gbps != kDefaultHostGbps;
  const bool gpu_given = gpu.source == "flags";
  TimeModelNote n;
  n.what = "memory-bound ops";
  n.basis = host_given || gpu_given ? TimeBasis::Given : TimeBasis::Default;
  n.source = std::string(host_given ? "given: host" : "default: host assumed") +
             (gpu_given ? ", HBM and PCIe from the GPU flags" : ", HBM and PCIe: GPU catalog") +
             "; docs/time_model.md";
  n.values = {{"hbm_gbps", gpu.hbm_gbps}, {"host_gbps", o.host_gbps}, {"pcie_gbps", gpu.pcie_gbps}};
  n.text = "memory-bound ops: HBM " + num(gpu.hbm_gbps) + " GB/s, host " + num(o.host_gbps) +
           " GB/s, PCIe " + num(gpu.pcie_gbps) +
           " GB/s; Adam touches 7 x master dtype per element [" + n.source + "]";
  return n;
}

TimeModelNote collectives_note(const GpuSpec& gpu, const EngineOptions& o) {
  const LinkParams links = o.links ? *o.links : links_for_gpu(gpu);
  std::string calibrated;
  for (const CollectiveKind k : kAllCollectiveKinds)
    if (const CalibratedCollective* c = o.calibration.find(k))
      // A calibration file's fits name the file ("calibrated: FILE ..."); nccl-tests' their table.
      calibrated +=
          (calibrated.empty() ? "" : ", ") + std::string(collective_name(k)) + " (" +
          (c->source.rfind("calibrated: ", 0) == 0 ? c->source : "from nccl-tests " + c->source) +
          ")";
  const std::string links_source = o.links                 ? std::string("given links")
                                   : o.links_basis.empty() ? std::string("default: GPU catalog")
                                                           : o.links_basis;
  TimeModelNote n;
  n.what = "collectives";
  n.basis = !calibrated.empty() ? TimeBasis::Calibrated : basis_of(links_source);
  n.source = links_source + (calibrated.empty() ? std::string() : "; calibrated: " + calibrated);
  n.values = {{"intra_node_busbw_gbps", links.intra_gbps},
              {"network_gbps", links.inter_gbps},
              {"efficiency", links.efficiency},
              {"nvls_algbw_gbps", links.nvls_algbw_gbps}};
  n.text = "collectives: busBw intra-node " + num(links.intra_gbps) + " GB/s, network " +
           num(links.inter_gbps) + " GB/s per GPU, efficiency " + num(links.efficiency) +
           (links.nvls_algbw_gbps > 0
                ? ", NVLS all-reduce algbw " + num(links.nvls_algbw_gbps) + " GB/s in a node"
                : std::string(", no NVLS")) +
           " [" + links_source + "]" +
           (calibrated.empty() ? std::string() : "; calibrated: " + calibrated);
  return n;
}

}  // namespace

std::string_view time_basis_name(TimeBasis b) {
  switch (b) {
    case TimeBasis::Default:
      return "default";
    case TimeBasis::Given:
      return "given";
    case TimeBasis::Calibrated:
      return "calibrated";
  }
  return "default";
}

std::vector<TimeModelNote> time_model_notes(const GpuSpec& gpu, DType lp, int stage,
                                            const ComputeRate& rate, const EngineOptions& options) {
  return {compute_note(lp, rate), host_note(stage, options.host), memory_note(gpu, options),
          collectives_note(gpu, options)};
}

}  // namespace zerosim
