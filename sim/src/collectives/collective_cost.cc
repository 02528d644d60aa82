// The alpha–beta time model of one collective call (NCCL's tuning model for the Simple protocol,
// shared/docs/ecosystem.md §4.3), and the byte counts that go with it.
//
//   ring:  alpha = base + (nsteps − nInterSteps) × intraHop + nInterSteps × interHop
//          t     = alpha + S × factor / busBw                 (factor: nccl-tests' busbw factor)
//   tree:  alpha = base + 2 × ((ppn − 1) × intraHop + log2(nodes) × interHop)       (all-reduce)
//          t     = alpha + S / (busBw × 0.92 × 0.5)  (NCCL: tree busBw × 0.92, algBw = busBw / 2)
//
// busBw: one node → the intra-node link; several nodes → also bounded by the network. NCCL spreads
// a node's channels over all its NICs, so a multi-node ring or tree moves data at up to the node's
// NIC bandwidth summed over the group's GPUs on that node (ppn × per-GPU NIC) — this is why
// nccl-tests reports multi-node busbw near 8 × NIC bandwidth on 8-GPU nodes, not 1 ×.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "collectives/collective_table.h"

namespace zerosim {
namespace {

// NCCL tuning.cc: tree all-reduce busBw × 0.92 (Simple); tree algBw = busBw × 0.5.
constexpr double kTreeBusBwEfficiency = 0.92;
constexpr double kTreeAlgBwRatio = 0.5;

// NCCL's log2i: floor(log2(n)) for n >= 1.
std::uint64_t log2_floor(std::uint64_t n) {
  std::uint64_t r = 0;
  while (n > 1) {
    n >>= 1;
    ++r;
  }
  return r;
}

bool positive(double x) { return std::isfinite(x) && x > 0; }
bool non_negative(double x) { return std::isfinite(x) && x >= 0; }

std::string num(double x) {
  std::string s = std::to_string(x);
  while (s.size() > 1 && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

void check_inputs(const CollectiveRequest& r, const LinkParams& l, Diagnostics& d) {
  const auto err = [&](const std::string& message) {
    d.error(std::string(collective_name(r.kind)), "", message);
  };
  const CollectiveGroup& g = r.group;
  if (g.size < 1 || g.size > kMaxCollectiveRanks) {
    err("expected a group size in 1.." + std::to_string(kMaxCollectiveRanks) + ", got " +
        std::to_string(g.size));
  } else if (g.nodes < 1 || g.gpus_per_node < 1 ||
             static_cast<std::uint64_t>(g.nodes) * g.gpus_per_node != g.size) {
    err("expected group size = nodes × gpus_per_node = " + std::to_string(g.nodes) + " × " +
        std::to_string(g.gpus_per_node) + ", got " + std::to_string(g.size));
  }
  if (!positive(l.intra_gbps)) {
    err("expected intra_gbps > 0, got " + num(l.intra_gbps));
  }
  if (!positive(l.inter_gbps)) {
    err("expected inter_gbps > 0, got " + num(l.inter_gbps));
  }
  if (!positive(l.efficiency) || l.efficiency > 1.0) {
    err("expected efficiency in (0, 1], got " + num(l.efficiency));
  }
  for (const auto& [name, a] : {std::pair{"ring", &l.ring}, std::pair{"tree", &l.tree}}) {
    if (!non_negative(a->base_us) || !non_negative(a->intra_hop_us) ||
        !non_negative(a->inter_hop_us)) {
      err(std::string("expected ") + name +
          " latencies (base, intra hop, inter hop) >= 0 us, got " + num(a->base_us) + ", " +
          num(a->intra_hop_us) + ", " + num(a->inter_hop_us));
    }
  }
  if (r.algorithm == CollectiveAlgorithm::Tree && !collectives::traits(r.kind).has_tree) {
    err("expected algorithm ring: NCCL runs only all_reduce as a tree");
  }
  if (!non_negative(l.nvls_algbw_gbps) || !non_negative(l.nvls_latency_us)) {
    err("expected NVLS algbw >= 0 GB/s and latency >= 0 us, got " + num(l.nvls_algbw_gbps) +
        " and " + num(l.nvls_latency_us));
  }
  if (r.algorithm == CollectiveAlgorithm::Nvls &&
      (r.kind != CollectiveKind::AllReduce || g.nodes != 1 || l.nvls_algbw_gbps <= 0)) {
    err("expected NVLS only for an all_reduce inside one NVSwitch node (nvls algbw > 0), got " +
        std::string(collective_name(r.kind)) + " over " + std::to_string(g.nodes) +
        " node(s), nvls algbw " + num(l.nvls_algbw_gbps) + " GB/s");
  }
}

// busBw available to the collective, GB/s (numerically bytes per ns).
double bus_bandwidth(const CollectiveGroup& g, const LinkParams& l) {
  double bw = l.intra_gbps;
  if (g.nodes > 1) bw = std::min(bw, l.inter_gbps * g.gpus_per_node);
  return bw * l.efficiency;
}

double ring_time_ns(const collectives::CollectiveTraits& t, const CollectiveGroup& g,
                    const LinkParams& l, double bus_bytes) {
  const auto steps = static_cast<double>(t.ring_steps(g.size));
  const auto inter = static_cast<double>(t.ring_inter_steps(g.nodes));
  const double alpha_us =
      l.ring.base_us + (steps - inter) * l.ring.intra_hop_us + inter * l.ring.inter_hop_us;
  return alpha_us * 1e3 + bus_bytes / bus_bandwidth(g, l);
}

double tree_time_ns(const CollectiveGroup& g, const LinkParams& l, Bytes s) {
  const double hops = static_cast<double>(g.gpus_per_node - 1) * l.tree.intra_hop_us +
                      static_cast<double>(log2_floor(g.nodes)) * l.tree.inter_hop_us;
  const double alpha_us = l.tree.base_us + 2.0 * hops;
  const double alg_bw = bus_bandwidth(g, l) * kTreeBusBwEfficiency * kTreeAlgBwRatio;
  return alpha_us * 1e3 + static_cast<double>(s) / alg_bw;
}

// ceil(s × num / den) without overflowing the intermediate product.
std::optional<Bytes> scaled_bytes(Bytes s, collectives::BusFactor f) {
  const auto whole = checked_mul(s / f.den, f.num);
  const Bytes rest = ceil_div((s % f.den) * f.num, f.den);  // < den × num <= 2^49
  return whole ? checked_add(*whole, rest) : std::nullopt;
}

}  // namespace

Result<CollectiveCost> collective_cost(const CollectiveRequest& request, const LinkParams& links,
                                       const CalibratedLinks* calibration) {
  Diagnostics diags;
  check_inputs(request, links, diags);
  if (diags.has_errors()) return diags;
  const auto src = [&] { return std::string(collective_name(request.kind)); };  // errors only
  const auto& t = collectives::traits(request.kind);
  const CollectiveGroup& g = request.group;

  CollectiveCost cost;
  const auto s = collective_algbw_bytes(request.kind, request.count, request.dtype, g.size);
  if (!s) {
    return fail<CollectiveCost>(
        src(), "",
        "byte count of " + std::to_string(request.count) + " elements overflows 64 bits");
  }
  cost.algbw_bytes = *s;
  cost.busbw_factor = collective_busbw_factor(request.kind, g.size);
  cost.algorithm = "none";
  if (g.size == 1 || *s == 0) return cost;  // NCCL returns at once: no launch, nothing on the wire

  const auto sent = scaled_bytes(*s, t.bus_factor(g.size));
  if (!sent) return fail<CollectiveCost>(src(), "", "bytes sent per rank overflow 64 bits");
  cost.bytes_sent_per_rank = *sent;
  const double bus_bytes = static_cast<double>(*s) * cost.busbw_factor;

  double ns = 0;
  if (const CalibratedCollective* c = calibration ? calibration->find(request.kind) : nullptr) {
    if (!non_negative(c->alpha_us) || !positive(c->busbw_gbps)) {
      return fail<CollectiveCost>(src(), "",
                                  "expected a calibration with alpha >= 0 and busBw > 0, got " +
                                      num(c->alpha_us) + " us and " + num(c->busbw_gbps) + " GB/s");
    }
    ns = c->alpha_us * 1e3 + bus_bytes / c->busbw_gbps;
    cost.algorithm = "calibrated";
  } else {
    const double ring = ring_time_ns(t, g, links, bus_bytes);
    const double tree = t.has_tree ? tree_time_ns(g, links, *s) : ring;
    // NVLS: NCCL reduces in the NVSwitch (multicast), one node only without CollNet/SHARP.
    const bool nvls_ok =
        request.kind == CollectiveKind::AllReduce && g.nodes == 1 && links.nvls_algbw_gbps > 0;
    const double nvls =
        nvls_ok ? links.nvls_latency_us * 1e3 +
                      static_cast<double>(*s) / (links.nvls_algbw_gbps * links.efficiency)
                : ring;
    const auto a = request.algorithm;
    const bool use_nvls = a == CollectiveAlgorithm::Nvls ||
                          (a == CollectiveAlgorithm::Auto && nvls_ok && nvls < ring && nvls < tree);
    const bool use_tree = !use_nvls && (a == CollectiveAlgorithm::Tree ||
                                        (a == CollectiveAlgorithm::Auto && tree < ring));
    ns = use_nvls ? nvls : use_tree ? tree : ring;
    cost.algorithm = use_nvls ? "nvls" : use_tree ? "tree" : "ring";
  }
  // 9.2e18 ns is 292 years; anything beyond is an input error, not a time.
  if (!std::isfinite(ns) || ns >= 9.2e18) {
    return fail<CollectiveCost>(src(), "", "predicted time exceeds the SimTime range");
  }
  cost.duration_ns = std::llround(ns);
  return cost;
}

}  // namespace zerosim
