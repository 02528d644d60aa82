// GPU catalog: published specifications of data-centre and workstation GPUs, loaded from the
// embedded models/gpu_catalog.json (every entry names its source).
#pragma once

#include <string>
#include <vector>

#include "zerosim/diagnostic.h"
#include "zerosim/units.h"

namespace zerosim {

struct GpuSpec {
  std::string name;               ///< catalog key, e.g. "H100-SXM-80GB"
  std::string description;        ///< "NVIDIA H100 SXM5 80 GB"
  Bytes memory_bytes = 0;         ///< HBM capacity in bytes (80 GB = 80e9 or 80 GiB as published)
  double bf16_tflops = 0;         ///< dense bf16 TFLOP/s (no sparsity)
  double fp16_tflops = 0;         ///< dense fp16 TFLOP/s
  double fp32_tflops = 0;         ///< fp32 (non-tensor-core) TFLOP/s
  double hbm_gbps = 0;            ///< memory bandwidth, GB/s (1e9 B/s)
  double intra_node_gbps = 0;     ///< per-GPU intra-node link bandwidth (NVLink/xGMI/PCIe), GB/s, one direction
  double network_gbps = 0;        ///< typical per-GPU network bandwidth, GB/s (e.g. 400 Gb/s NIC = 50)
  double pcie_gbps = 0;           ///< host link, GB/s one direction (offload copies)
  std::string source;             ///< data sheet URL(s)
};

/// All catalog entries, in file order.
const std::vector<GpuSpec>& gpu_catalog();
/// Finds a GPU by name, case-insensitively; also accepts aliases listed in the catalog.
/// Unknown names fail with the list of known names.
Result<GpuSpec> find_gpu(const std::string& name, const std::string& source = "--gpu");

/// A cluster: nodes x GPUs per node of one GPU type.
struct Cluster {
  GpuSpec gpu;
  std::uint64_t nodes = 1;
  std::uint64_t gpus_per_node = 8;
  std::uint64_t world_size() const { return nodes * gpus_per_node; }
};

}  // namespace zerosim
