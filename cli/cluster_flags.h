// What the GPU catalog cannot know about a cluster: its NICs and its intra-node links. The flags
// `--network-gbps`, `--nics-per-node` and `--intra-node-gbps` replace the catalog's per-GPU figures
// for plan, simulate and schedule (docs/time_model.md), and the outputs say they were given.
#pragma once

#include <string>
#include <vector>

#include "args.h"
#include "zerosim/gpu_catalog.h"
#include "zerosim/memory_model.h"
#include "zerosim/model_desc.h"
#include "zerosim/time_model.h"

namespace zerosim::cli {

/// --network-gbps, --nics-per-node, --intra-node-gbps.
std::vector<FlagSpec> cluster_link_flags();

/// Whether any of them is given.
bool has_cluster_link_flags(const ParsedArgs& a);

/// Replaces cluster.gpu's network_gbps (per GPU = NIC GB/s × NICs per node / GPUs per node) and
/// intra_node_gbps. Returns what was given ("given: --network-gbps 25, ..."), empty when nothing;
/// errors (one line per flag) go to `d`.
std::string apply_cluster_link_flags(const ParsedArgs& a, Cluster& cluster, Diagnostics& d);

/// The GEMM shape of a model trained with `t`: its hidden size and micro-batch × sequence tokens;
/// zeros for a model without a transformer shape.
GemmShape gemm_shape(const ModelDesc& model, const TrainingSettings& t);

}  // namespace zerosim::cli
