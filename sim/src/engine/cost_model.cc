// CostModel (engine.h): how long one op of the Schedule IR takes on one GPU. Compute ops use the
// dense tensor-core rate of the model's dtype times an efficiency; memory-bound ops (copies,
// write-back, the optimizer update) use bytes over HBM or host bandwidth; offload copies use PCIe;
// collectives go through collective_model.h. The defaults and their sources are in engine.h.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "zerosim/engine.h"

namespace zerosim {
namespace {

// checked_mul (units.h), inline: it runs for every op and buffer.
std::optional<std::uint64_t> mul_checked(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

constexpr const char* kSource = "simulator";

bool positive(double x) { return std::isfinite(x) && x > 0; }

std::string num(double x) {
  std::string s = std::to_string(x);
  while (s.size() > 1 && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

// ns for `x` ns as a double, or -1 when it does not fit SimTime (9.2e18 ns is 292 years).
SimTime to_ns(double x) {
  if (!std::isfinite(x) || x < 0 || x >= 9.2e18) return -1;
  // std::llround (halves away from zero) without its libm call, one per costed op: for x >= 0 the
  // truncation is exact, and so is x - trunc(x) (Sterbenz: trunc(x) >= x / 2 once x >= 1).
  const auto whole = static_cast<SimTime>(x);
  return whole + (x - static_cast<double>(whole) >= 0.5 ? 1 : 0);
}

}  // namespace

LinkParams links_for_gpu(const GpuSpec& gpu) {
  LinkParams l;
  l.intra_gbps = gpu.intra_node_gbps * kDefaultIntraBusEfficiency;
  l.inter_gbps = gpu.network_gbps;
  if (gpu.nvswitch && gpu.generation == GpuGeneration::Hopper)
    l.nvls_algbw_gbps = gpu.intra_node_gbps * kHopperNvlsAlgbwFraction;
  if (gpu.nvswitch && gpu.generation == GpuGeneration::Blackwell)
    l.nvls_algbw_gbps = gpu.intra_node_gbps * kBlackwellNvlsAlgbwFraction;
  return l;
}

Result<CostModel> CostModel::make(const GpuSpec& gpu, const ScheduleMeta& meta,
                                  const EngineOptions& options) {
  Diagnostics d;
  // The schedule's own shape unless the caller gives one.
  const GemmShape gemm =
      options.gemm.hidden != 0 ? options.gemm : GemmShape{meta.hidden, meta.tokens_per_micro_batch};
  const ComputeRate cr =
      compute_rate(gpu, meta.lp, gemm, options.compute_efficiency,
                   options.calibrated_compute ? &*options.calibrated_compute : nullptr);
  const double rate = cr.dense_tflops;
  if (!positive(rate))
    d.error(kSource, "/gpu",
            "expected a dense " + std::string(dtype_name(meta.lp)) + " rate for " +
                quote(gpu.name) + ", got " + num(rate) +
                " TFLOP/s (the GPU does not support this dtype)");
  if (!positive(cr.efficiency) || cr.efficiency > 1.0)
    d.error(kSource, "/compute_efficiency",
            "expected a compute efficiency in (0, 1], got " + num(cr.efficiency));
  const HostCosts& h = options.host;
  for (const double us : {h.kernel_launch_us, h.stage3_fetch_hook_us, h.stage3_release_hook_us,
                          h.collective_launch_us})
    if (!std::isfinite(us) || us < 0 || us > 1e6)
      d.error(kSource, "/host", "expected host costs in [0, 1e6] us, got " + num(us));
  if (!positive(options.host_gbps))
    d.error(kSource, "/host_gbps",
            "expected a host bandwidth > 0 GB/s, got " + num(options.host_gbps));
  const auto bandwidth = [&](const char* what, double v) {
    if (!positive(v))
      d.error(
          kSource, std::string("/gpu/") + what,
          "expected " + std::string(what) + " > 0 GB/s for " + quote(gpu.name) + ", got " + num(v));
  };
  bandwidth("hbm_gbps", gpu.hbm_gbps);
  bandwidth("pcie_gbps", gpu.pcie_gbps);
  if (meta.world == 0 || meta.nodes == 0 || meta.gpus_per_node == 0 ||
      static_cast<std::uint64_t>(meta.nodes) * meta.gpus_per_node != meta.world)
    d.error(kSource, "/meta",
            "expected world = nodes × gpus_per_node, got " + std::to_string(meta.world) + " = " +
                std::to_string(meta.nodes) + " × " + std::to_string(meta.gpus_per_node));
  if (d.has_errors()) return d;
  CostModel m;
  m.flops_per_s_ = rate * 1e12 * cr.efficiency;
  m.rate_ = cr;
  m.host_ = options.host;
  m.hbm_gbps_ = gpu.hbm_gbps;
  m.pcie_gbps_ = gpu.pcie_gbps;
  m.host_gbps_ = options.host_gbps;
  m.master_ = meta.master;
  m.world_ = meta.world;
  m.nodes_ = meta.nodes;
  m.gpus_per_node_ = meta.gpus_per_node;
  m.links_ = options.links ? *options.links : links_for_gpu(gpu);
  m.calibration_ = options.calibration;
  m.algorithm_ = options.algorithm;
  return m;
}

SimTime CostModel::bytes_time(Bytes bytes, double gbps) const {
  // GB/s = bytes per ns.
  return to_ns(static_cast<double>(bytes) / gbps);
}

bool CostModel::try_cost(const Op& op, Elements elements, const CommGroup& comm, OpCost& c) const {
  c = OpCost{};
  std::optional<Bytes> bytes = 0;
  double gbps = op.stream == Stream::Host ? host_gbps_ : hbm_gbps_;
  switch (op.kind) {
    case OpKind::Forward:
    case OpKind::Backward:
    case OpKind::Recompute:
      c.duration_ns = to_ns(op.flops / flops_per_s_ * 1e9);
      return c.duration_ns >= 0;
    case OpKind::Copy:
    case OpKind::CopyToBucket: {
      const auto one = mul_checked(elements, dtype_size(op.dtype));
      bytes = one ? mul_checked(*one, 2) : std::nullopt;
      break;
    }
    case OpKind::WriteBack:
      bytes = mul_checked(elements, dtype_size(master_) + dtype_size(op.dtype));
      break;
    case OpKind::OptimizerStep:
      bytes = mul_checked(elements, kAdamTouchesPerElement * dtype_size(op.dtype));
      break;
    case OpKind::HostToDevice:
    case OpKind::DeviceToHost:
      bytes = mul_checked(elements, dtype_size(op.dtype));
      gbps = pcie_gbps_;
      break;
    case OpKind::Collective: {
      auto r = collective(op, comm);
      if (!r.ok()) return false;
      c = r.value();
      return true;
    }
    default:
      return true;  // Alloc, Free, GradReady, GradNorm, GradOverflow, Sync, Marker: no cost
  }
  if (!bytes) return false;
  c.bytes = *bytes;
  c.duration_ns = bytes_time(*bytes, gbps);
  return c.duration_ns >= 0;
}

Result<OpCost> CostModel::cost(const Op& op, Elements elements, const CommGroup& comm) const {
  OpCost c;
  if (try_cost(op, elements, comm, c)) return c;
  if (op.kind == OpKind::Collective) return collective(op, comm);
  const bool compute =
      op.kind == OpKind::Forward || op.kind == OpKind::Backward || op.kind == OpKind::Recompute;
  if (compute && std::isfinite(op.flops) && op.flops >= 0) {
    // Finite FLOPs whose time does not fit in int64 nanoseconds: say so, with the numbers (the old
    // "expected finite FLOPs" was false for them).
    char buf[96];
    std::snprintf(buf, sizeof buf, "%.3g FLOPs at %.3g FLOP/s", op.flops, flops_per_s_);
    return fail<OpCost>(kSource, "",
                        "expected a compute time below 2^63 ns (292 years), got " +
                            std::string(buf) + " for " + quote(op.label));
  }
  if (compute)
    return fail<OpCost>(kSource, "", "expected finite FLOPs >= 0 for " + quote(op.label));
  return fail<OpCost>(kSource, "", "the cost of op " + quote(op.label) + " overflows 64 bits");
}

Result<OpCost> CostModel::collective(const Op& op, const CommGroup& comm) const {
  CollectiveRequest r;
  r.kind = op.collective;
  r.dtype = op.dtype;
  r.algorithm = algorithm_;
  // NCCL's count: the whole buffer for all-reduce/reduce/broadcast, the per-rank send count for
  // all-gather, the per-rank receive count for reduce-scatter (collective_model.h).
  r.count = op.collective == CollectiveKind::ReduceScatter ? op.out_numel : op.numel;
  // The placement of the group's ranks is guessed from its size (stride is not used yet).
  const std::uint32_t n = comm.size;
  if (n == world_) {
    r.group = {n, nodes_, gpus_per_node_};
  } else if (n <= gpus_per_node_) {
    r.group = {n, 1, n};  // a sub-group inside one node
  } else if (n % gpus_per_node_ == 0) {
    r.group = {n, n / gpus_per_node_, gpus_per_node_};
  } else {
    return fail<OpCost>(kSource, "",
                        "expected a collective group that fills whole nodes of " +
                            std::to_string(gpus_per_node_) + " GPUs, got " + std::to_string(n) +
                            " ranks for " + quote(op.label));
  }
  auto cc = collective_cost(r, links_, calibration_.empty() ? nullptr : &calibration_);
  if (!cc.ok()) {
    Diagnostics d;
    for (Diagnostic x : cc.diagnostics().items()) {
      x.message += " (op " + quote(op.label) + ")";
      d.add(std::move(x));
    }
    return d;
  }
  OpCost c;
  // The host issues every call (torch.distributed + NCCL's enqueue) before it can run; a call that
  // moves nothing (n == 1) is returned at once and costs nothing.
  const SimTime launch = cc->duration_ns > 0 ? to_ns(host_.collective_launch_us * 1e3) : 0;
  c.duration_ns = cc->duration_ns + launch;
  c.bytes = cc->algbw_bytes;
  c.collective = cc.value();
  return c;
}

}  // namespace zerosim
