// The cluster link flags (cluster_flags.h).
#include "cluster_flags.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

namespace zerosim::cli {
namespace {

// A GPU given by its figures: the largest GPU memory shipping is 288 GB (B300), the fastest dense
// 16-bit rate about 2.5 PFLOP/s and HBM 8 TB/s; the bounds leave room and catch unit mistakes
// (a rate in FLOP/s, a size in bytes written as GiB).
constexpr double kMaxGpuMemoryGiB = 16384;  // 16 TiB
constexpr double kMaxGpuTflops = 100000;
constexpr double kMaxGpuBandwidthGbps = 100000;

}  // namespace

// "24GiB", "23.5 GiB", "24576MiB", "1TiB", "25769803776B": binary units only. A decimal "GB" is
// refused because memory sold as "24 GB" holds 24 GiB (the catalog's convention) while 24e9 bytes
// are 22.35 GiB: the user says which.
Result<Bytes> parse_size_flag(const std::string& flag, const std::string& text, double max_gib,
                              Bytes min_bytes) {
  std::size_t end = 0;
  while (end < text.size() && (std::isdigit(static_cast<unsigned char>(text[end])) ||
                               text[end] == '.' || text[end] == 'e' || text[end] == 'E' ||
                               ((text[end] == '-' || text[end] == '+') &&
                                (end == 0 || text[end - 1] == 'e' || text[end - 1] == 'E'))))
    ++end;
  std::string unit = text.substr(end);
  while (!unit.empty() && unit.front() == ' ') unit.erase(0, 1);
  std::string low;
  for (char c : unit) low += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::string expected = "expected a size with a binary unit such as 24GiB or 49152MiB";
  double scale = 0;
  if (low == "b") scale = 1;
  if (low == "kib") scale = 0x1p10;
  if (low == "mib") scale = 0x1p20;
  if (low == "gib") scale = 0x1p30;
  if (low == "tib") scale = 0x1p40;
  if (low == "kb" || low == "mb" || low == "gb" || low == "tb" || low == "g" || low == "m")
    return fail<Bytes>(flag, "", expected + ", got " + quote(text),
                       "memory sold as \"24 GB\" holds 24 GiB: write 24GiB");
  auto n = parse_number(flag, text.substr(0, end), -1e300, 1e300);
  if (scale == 0 || end == 0 || !n.ok())
    return fail<Bytes>(flag, "", expected + ", got " + quote(text));
  const double bytes = n.value() * scale;
  if (!(bytes >= static_cast<double>(min_bytes)) || bytes > max_gib * 0x1p30)
    return fail<Bytes>(
        flag, "",
        "expected a size of " +
            (min_bytes == Bytes{1} << 30 ? std::string("1GiB") : std::to_string(min_bytes) + "B") +
            " to " + std::to_string(static_cast<std::uint64_t>(max_gib)) + "GiB, got " +
            quote(text));
  return static_cast<Bytes>(std::floor(bytes));
}

Result<Bytes> parse_bytes_flag(const std::string& flag, const std::string& text) {
  const bool digits = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
  });
  if (digits) return parse_uint(flag, text, 1, UINT64_MAX);
  // 2^24 GiB = 2^54 bytes: far beyond any memory, and exactly representable as a double.
  return parse_size_flag(flag, text, 0x1p24, 1);
}

namespace {

// A positive rate below `hi`; one line naming the flag and its unit otherwise.
std::optional<double> positive_rate(const ParsedArgs& a, const std::string& flag, double hi,
                                    const std::string& unit, Diagnostics& d) {
  const std::string text = *a.get(flag);  // get() returns a copy
  auto v = parse_number(flag, text, -1e300, 1e300);
  if (!v.ok() || !(v.value() > 0) || v.value() > hi) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", hi);
    d.error(flag, "", "expected " + unit + " in (0, " + b + "], got " + quote(text));
    return std::nullopt;
  }
  return v.value();
}

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
      {"--gpu-memory", "SIZE",
       "a GPU not in the catalog (or a catalog GPU's usable memory): its memory, e.g. 24GiB; the "
       "other figures are --gpu's (default H100-SXM-80GB's) unless given below"},
      {"--gpu-tflops", "X", "dense fp16/bf16 tensor TFLOP/s per GPU; default the --gpu's"},
      {"--gpu-bandwidth", "X", "GPU memory bandwidth in GB/s; default the --gpu's"},
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

bool apply_gpu_figure_flags(const ParsedArgs& a, GpuSpec& gpu, Diagnostics& d) {
  std::string given;
  const auto note = [&](const std::string& flag) {
    given += (given.empty() ? "" : ", ") + flag + " " + *a.get(flag);
  };
  const std::size_t errors = d.items().size();
  std::optional<Bytes> memory;
  if (a.has("--gpu-memory")) {
    auto m = parse_size_flag("--gpu-memory", *a.get("--gpu-memory"), kMaxGpuMemoryGiB);
    if (m.ok())
      memory = m.value();
    else
      d.append(m.diagnostics());
  }
  std::optional<double> tflops, bandwidth;
  if (a.has("--gpu-tflops"))
    tflops = positive_rate(a, "--gpu-tflops", kMaxGpuTflops, "dense TFLOP/s", d);
  if (a.has("--gpu-bandwidth"))
    bandwidth = positive_rate(a, "--gpu-bandwidth", kMaxGpuBandwidthGbps, "GB/s", d);
  if (d.items().size() != errors) return false;
  if (!memory && !tflops && !bandwidth) return true;
  if (memory) {
    gpu.memory_bytes = *memory;
    note("--gpu-memory");
  }
  if (tflops) {
    // The 16-bit tensor rate the time model reads (time_model.cc dense_tflops); a GPU without bf16
    // (V100: 0) gains none. fp32 cannot exceed it.
    gpu.fp16_tflops = *tflops;
    if (gpu.bf16_tflops > 0) gpu.bf16_tflops = *tflops;
    gpu.fp32_tflops = std::min(gpu.fp32_tflops, *tflops);
    note("--gpu-tflops");
  }
  if (bandwidth) {
    gpu.hbm_gbps = *bandwidth;
    note("--gpu-bandwidth");
  }
  // The name says the figures are not the catalog's, everywhere it is printed; the description
  // says which are whose.
  const std::string base = gpu.name;
  gpu.name = memory && !a.has("--gpu") ? "custom" : base + "-custom";
  gpu.description = "given: " + given + "; other figures " + base + "'s";
  gpu.aliases.clear();
  gpu.notes = "a GPU described by flags; its unspecified figures are " + base + "'s";
  gpu.source = "flags";
  return true;
}

std::string apply_cluster_link_flags(const ParsedArgs& a, Cluster& cluster, Diagnostics& d) {
  std::string given;
  const auto note = [&](const std::string& flag) {
    given += (given.empty() ? "given: " : ", ") + flag + " " + *a.get(flag);
  };
  if (!apply_gpu_figure_flags(a, cluster.gpu, d)) return given;
  double nic = cluster.gpu.network_gbps;  // the catalog's: one NIC per GPU
  std::uint64_t nics = cluster.gpus_per_node;
  bool network = false;
  // One range per flag in every message: a number out of it and a word both get "(0, max]" (a
  // negative value said "[0, 1e+12]" before, zero "(0, 250]").
  auto rate = [&](const char* flag, double max, const std::string& what,
                  const std::string& hint) -> std::optional<double> {
    const std::string text = *a.get(flag);
    auto v = parse_number(flag, text, -1e300, 1e300);
    if (v.ok() && v.value() > 0 && v.value() <= max) return v.value();
    d.error(flag, "", "expected " + what + " in (0, " + num(max) + "], got " + quote(text), hint);
    return std::nullopt;
  };
  if (a.has("--network-gbps")) {
    if (auto v = rate("--network-gbps", kMaxNicGbps, "GB/s per NIC",
                      "a NIC sold as 400 Gb/s moves 50 GB/s")) {
      nic = *v;
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
    if (auto v = rate("--intra-node-gbps", kMaxIntraGbps, "GB/s one way per GPU", "")) {
      cluster.gpu.intra_node_gbps = *v;
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
