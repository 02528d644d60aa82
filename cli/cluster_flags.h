// What the GPU catalog cannot know about a cluster: its NICs and its intra-node links. The flags
// `--network-gbps`, `--nics-per-node` and `--intra-node-gbps` replace the catalog's per-GPU figures
// for plan, simulate and schedule (docs/time_model.md), and the outputs say they were given.
// Any GPU the catalog lacks is given by its figures: `--gpu-memory SIZE` with optional
// `--gpu-tflops` and `--gpu-bandwidth` (the rest is --gpu's, default H100-SXM-80GB's); the GPU is
// then named "custom" (or "<--gpu>-custom") and its description says what was given.
#pragma once

#include <string>
#include <vector>

#include "args.h"
#include "zerosim/gpu_catalog.h"
#include "zerosim/memory_model.h"
#include "zerosim/model_desc.h"
#include "zerosim/time_model.h"

namespace zerosim::cli {

/// A memory size flag: "24GiB", "23.5 GiB", "49152MiB", "2TiB", "25769803776B" (binary units
/// only; "24GB" is refused with a hint: data sheets' GB are GiB). `min_bytes` (1 GiB unless given)
/// to `max_gib` GiB.
Result<Bytes> parse_size_flag(const std::string& flag, const std::string& text, double max_gib,
                              Bytes min_bytes = Bytes{1} << 30);
/// A byte count for flags that took one before units: digits alone are bytes ("1000"), anything
/// else a size with a binary unit as parse_size_flag reads it ("1.5GiB", "512MiB"); at least 1
/// byte.
Result<Bytes> parse_bytes_flag(const std::string& flag, const std::string& text);

/// --gpu-memory, --gpu-tflops, --gpu-bandwidth, --network-gbps, --nics-per-node, --intra-node-gbps.
std::vector<FlagSpec> cluster_link_flags();

/// Whether any of them is given.
bool has_cluster_link_flags(const ParsedArgs& a);

/// Replaces `gpu`'s memory, 16-bit rate and bandwidth with the --gpu-memory, --gpu-tflops and
/// --gpu-bandwidth given (and renames it, source "flags"); false with one line per bad flag in `d`.
bool apply_gpu_figure_flags(const ParsedArgs& a, GpuSpec& gpu, Diagnostics& d);

/// Applies apply_gpu_figure_flags first, then replaces cluster.gpu's network_gbps (per GPU = NIC
/// GB/s × NICs per node / GPUs per node) and intra_node_gbps. Returns what was given ("given:
/// --network-gbps 25, ..."), empty when nothing; errors (one line per flag) go to `d`.
std::string apply_cluster_link_flags(const ParsedArgs& a, Cluster& cluster, Diagnostics& d);

/// The GEMM shape of a model trained with `t`: its hidden size and micro-batch × sequence tokens;
/// zeros for a model without a transformer shape.
GemmShape gemm_shape(const ModelDesc& model, const TrainingSettings& t);

}  // namespace zerosim::cli
