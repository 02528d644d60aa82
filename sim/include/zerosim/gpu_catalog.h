// GPU catalog: published specifications of data-centre and workstation GPUs, loaded from the
// embedded models/gpu_catalog.json (every entry names its source).
//
// Conventions (also stated in the catalog file): memory is the published capacity read as binary
// gigabytes (an "80 GB" H100 carries 80 GiB = 85,899,345,920 bytes of HBM; the driver then reports
// a little less as usable: ECC and reserved pages). Rates are dense (no structured sparsity): where
// a data sheet prints only the sparse figure, the catalog holds half of it. Bandwidths are GB/s
// (1e9 B/s) in one direction.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "zerosim/diagnostic.h"
#include "zerosim/units.h"

namespace zerosim {

/// The tensor-core generation: which measured GEMM efficiency curve applies (time_model.h) and
/// whether NCCL's NVLS all-reduce exists on NVSwitch nodes (Hopper and Blackwell only).
enum class GpuGeneration : std::uint8_t { Unknown, Volta, Ampere, Ada, Hopper, Blackwell, Cdna3 };

/// "hopper", ...; "unknown" for Unknown.
const char* gpu_generation_name(GpuGeneration g);

struct GpuSpec {
  std::string name;         ///< catalog key, e.g. "H100-SXM-80GB"
  std::string description;  ///< "NVIDIA H100 SXM5 80 GB"
  std::vector<std::string>
      aliases;  ///< other accepted names ("H100", "h100-80gb"), matched case-insensitively
  Bytes memory_bytes =
      0;  ///< HBM/GDDR capacity in bytes: published GB read as GiB (see file comment)
  double bf16_tflops = 0;  ///< dense bf16 TFLOP/s (no sparsity); 0 = bf16 not supported (V100)
  double fp16_tflops = 0;  ///< dense fp16 TFLOP/s (tensor cores, fp32 accumulate)
  double fp32_tflops = 0;  ///< fp32 (non-tensor-core) TFLOP/s
  double hbm_gbps = 0;     ///< memory bandwidth, GB/s (1e9 B/s)
  double intra_node_gbps =
      0;  ///< per-GPU intra-node link bandwidth (NVLink/xGMI/PCIe), GB/s, one direction
  double network_gbps = 0;  ///< typical per-GPU network bandwidth, GB/s (e.g. 400 Gb/s NIC = 50)
  double pcie_gbps = 0;     ///< host link, GB/s one direction (offload copies)
  GpuGeneration generation = GpuGeneration::Unknown;  ///< catalog "generation"
  bool nvswitch = false;  ///< the GPUs of a node meet in NVSwitch (catalog "nvswitch")
  std::string source;     ///< data sheet URL(s)
  std::string notes;      ///< assumptions behind the numbers (link and network choices)
};

/// All catalog entries, in file order (the embedded catalog; empty only if it failed to load, in
/// which case find_gpu reports why).
const std::vector<GpuSpec>& gpu_catalog();

/// A bare product name sold in several versions ("A100": the 40 GB and the 80 GB part): find_gpu
/// refuses it and lists the choices (catalog "ambiguous").
struct AmbiguousGpuName {
  std::string name;
  std::vector<std::string> choices;  ///< catalog names
};

/// Parses a catalog file's text ({"format": "zerosim-gpu-catalog", "version": 1, "gpus": [...],
/// "ambiguous": [...]}). Every problem is a diagnostic with its JSON pointer; duplicate
/// names/aliases, an ambiguous name that is also a GPU's, or a choice naming no GPU are errors.
/// The ambiguous names go to `ambiguous` when given.
Result<std::vector<GpuSpec>> load_gpu_catalog_text(
    const std::string& text, const std::string& source,
    std::vector<AmbiguousGpuName>* ambiguous = nullptr);

/// The embedded catalog's ambiguous names, in file order.
const std::vector<AmbiguousGpuName>& ambiguous_gpu_names();

/// Finds a GPU by name, case-insensitively ('_' and ' ' match '-'); also accepts the aliases listed
/// in the catalog. An ambiguous name ("A100") fails with its choices; unknown names fail with the
/// list of known names, a "did you mean" hint and the way to give any other GPU (--gpu-memory).
Result<GpuSpec> find_gpu(const std::string& name, const std::string& source = "--gpu");

/// A cluster: nodes x GPUs per node of one GPU type.
struct Cluster {
  GpuSpec gpu;
  std::uint64_t nodes = 1;
  std::uint64_t gpus_per_node = 8;
  std::uint64_t world_size() const { return nodes * gpus_per_node; }
};

}  // namespace zerosim
