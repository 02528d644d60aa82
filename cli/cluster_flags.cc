// The cluster link flags (cluster_flags.h).
#include "cluster_flags.h"

#include <cstdio>

namespace zerosim::cli {
namespace {

// The fastest NIC shipping is 800 Gb/s (100 GB/s); 250 GB/s leaves room and still catches a value
// given in Gb/s (400 Gb/s NDR is 50 GB/s).
constexpr double kMaxNicGbps = 250;
constexpr double kMaxIntraGbps = 10000;  // NVLink 5 is 900 GB/s one way per GPU

std::string num(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", x);
  return b;
}

}  // namespace

std::vector<FlagSpec> cluster_link_flags() {
  return {
      {"--network-gbps", "X",
       "GB/s one way per NIC (400 Gb/s NDR = 50); default: the GPU catalog's per-GPU figure"},
      {"--nics-per-node", "N", "NICs per node sharing the network; default one per GPU"},
      {"--intra-node-gbps", "X",
       "GB/s one way per GPU inside a node (NVLink/xGMI/PCIe); default: the GPU catalog's"},
  };
}

bool has_cluster_link_flags(const ParsedArgs& a) {
  for (const auto& f : cluster_link_flags())
    if (a.has(f.name)) return true;
  return false;
}

std::string apply_cluster_link_flags(const ParsedArgs& a, Cluster& cluster, Diagnostics& d) {
  std::string given;
  const auto note = [&](const std::string& flag) {
    given += (given.empty() ? "given: " : ", ") + flag + " " + *a.get(flag);
  };
  double nic = cluster.gpu.network_gbps;  // the catalog's: one NIC per GPU
  std::uint64_t nics = cluster.gpus_per_node;
  bool network = false;
  if (a.has("--network-gbps")) {
    auto v = parse_number("--network-gbps", *a.get("--network-gbps"), 0, 1e12);
    if (!v.ok()) {
      d.append(v.diagnostics());
    } else if (v.value() <= 0 || v.value() > kMaxNicGbps) {
      d.error("--network-gbps", "",
              "expected GB/s per NIC in (0, " + num(kMaxNicGbps) + "], got " +
                  quote(*a.get("--network-gbps")),
              "a NIC sold as 400 Gb/s moves 50 GB/s");
    } else {
      nic = v.value();
      network = true;
      note("--network-gbps");
    }
  }
  if (a.has("--nics-per-node")) {
    auto v = parse_uint("--nics-per-node", *a.get("--nics-per-node"), 1, 1024);
    if (v.ok()) {
      nics = v.value();
      network = true;
      note("--nics-per-node");
    } else {
      d.append(v.diagnostics());
    }
  }
  if (a.has("--intra-node-gbps")) {
    auto v = parse_number("--intra-node-gbps", *a.get("--intra-node-gbps"), 0, 1e12);
    if (!v.ok()) {
      d.append(v.diagnostics());
    } else if (v.value() <= 0 || v.value() > kMaxIntraGbps) {
      d.error("--intra-node-gbps", "",
              "expected GB/s one way per GPU in (0, " + num(kMaxIntraGbps) + "], got " +
                  quote(*a.get("--intra-node-gbps")));
    } else {
      cluster.gpu.intra_node_gbps = v.value();
      note("--intra-node-gbps");
    }
  }
  // NCCL spreads a node's channels over all its NICs, so each GPU's share is the node's total
  // over its GPUs (collective_cost.cc multiplies it back by the GPUs of a group on the node).
  if (network && cluster.gpus_per_node > 0)
    cluster.gpu.network_gbps =
        nic * static_cast<double>(nics) / static_cast<double>(cluster.gpus_per_node);
  if (network) given += " (network " + num(cluster.gpu.network_gbps) + " GB/s per GPU)";
  return given;
}

GemmShape gemm_shape(const ModelDesc& model, const TrainingSettings& t) {
  GemmShape g;
  if (!model.arch) return g;
  g.hidden = model.arch->hidden;
  g.tokens = t.micro_batch * t.seq_len;
  return g;
}

}  // namespace zerosim::cli
