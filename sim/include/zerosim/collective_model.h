// Collective cost models: how many bytes a collective moves and how long it takes.
//
// Conventions are nccl-tests' (doc/PERFORMANCE.md, shared/docs/ecosystem.md §4.1) so that simulated
// and measured numbers compare directly: S is the buffer size nccl-tests divides by the time to get
// algbw, and busbw = algbw × a per-collective factor (2(n−1)/n for all-reduce, (n−1)/n for
// all-gather and reduce-scatter, 1 for broadcast and reduce). The time model is NCCL's alpha–beta
// model (src/graph/tuning.cc, ecosystem.md §4.3) for the Simple protocol:
//     t = alpha(algorithm, topology) + S × factor / busBw
// with ring and tree algorithms, and NVLS all-reduce inside an NVSwitch node (t = 25 µs + S /
// nvls algbw); all-reduce takes the fastest as NCCL does. A table
// measured with nccl-tests (parse_nccl_tests) replaces alpha and busBw for the collectives it
// covers.
//
// Every collective lives in one small file under sim/src/collectives/ that fills one table entry,
// as each nccl-tests collective is one src/<name>.cu.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "zerosim/diagnostic.h"
#include "zerosim/ir_types.h"
#include "zerosim/units.h"

namespace zerosim {

/// nccl-tests program: "all_reduce_perf", "reduce_perf", "broadcast_perf", "all_gather_perf",
/// "reduce_scatter_perf".
std::string_view nccl_tests_program(CollectiveKind k);
/// Accepts the torch name, the nccl-tests program name, or the short name ("all_gather").
std::optional<CollectiveKind> parse_collective(std::string_view name);

/// The largest communicator the models accept (2^24 ranks, as plan_partition).
inline constexpr std::uint32_t kMaxCollectiveRanks = 16777216;

/// The ranks of one communicator: `nodes` nodes with `gpus_per_node` ranks each (NCCL's ppn).
struct CollectiveGroup {
  std::uint32_t size = 1;   ///< n, ranks in the communicator; must equal nodes × gpus_per_node
  std::uint32_t nodes = 1;  ///< nodes the communicator spans
  std::uint32_t gpus_per_node = 1;  ///< ranks of this communicator on each node
};

/// Per-algorithm latency constants of NCCL's tuning table, µs: alpha = base + hops × per-hop.
struct AlgoLatency {
  double base_us = 0;       ///< fixed cost of one collective call
  double intra_hop_us = 0;  ///< per hop between GPUs of one node
  double inter_hop_us = 0;  ///< per hop over the network
};

/// The interconnect. Defaults: NCCL 2.30's Simple-protocol latencies over NVLink and the network
/// (tuning.cc; ecosystem.md §4.3), and an 8 × H100 SXM node: ring all-reduce busbw as nccl-tests
/// measures it over NVLink (about 360 GB/s without NVLS) and one 400 Gb/s NIC per GPU.
///
/// busBw of a call: intra_gbps on one node; on several nodes min(intra_gbps, inter_gbps × ppn),
/// because NCCL spreads a node's channels over all of its NICs (ppn = gpus_per_node of the group).
struct LinkParams {
  double intra_gbps = 360.0;         ///< busBw inside a node (NVLink), GB/s (1e9 B/s)
  double inter_gbps = 50.0;          ///< network bandwidth per GPU (its own NIC), GB/s
  AlgoLatency ring{8.4, 3.4, 14.0};  ///< NCCL Ring/Simple: base, NVLink hop, NET hop
  AlgoLatency tree{8.4, 4.0, 14.0};  ///< NCCL Tree/Simple: base, NVLink hop, NET hop
  double efficiency = 1.0;           ///< fraction of the bandwidths achieved, in (0, 1]
  /// NVLS (NVLink SHARP) all-reduce inside one NVSwitch node: its algbw, GB/s; 0: no NVLS (no
  /// NVSwitch, or a GPU before Hopper). NCCL's default there for large messages.
  double nvls_algbw_gbps = 0;
  /// NVLS latency, µs: NCCL's hwLat[NVLINK][NVLS][Simple] = 25 with base 0 (src/graph/tuning.cc).
  double nvls_latency_us = 25.0;
};

enum class CollectiveAlgorithm : std::uint8_t { Auto, Ring, Tree, Nvls };

/// alpha and busBw fitted to an nccl-tests table for one collective (replaces the model's).
struct CalibratedCollective {
  double alpha_us = 0;          ///< fitted latency, µs (>= 0)
  double busbw_gbps = 0;        ///< fitted bus bandwidth, GB/s (> 0)
  std::uint32_t ranks = 0;      ///< n of the measured run (0: unknown, broadcast/reduce only)
  std::uint32_t nodes = 0;      ///< distinct hosts in its "#  Rank" lines (0: not listed)
  std::uint32_t rows = 0;       ///< out-of-place rows the fit used
  double max_rel_residual = 0;  ///< largest |t_fit − t| / t over those rows
  std::string source;           ///< "results.txt: lines 12-40"
};

/// Calibrations by collective; kinds without one use the model.
struct CalibratedLinks {
  std::array<std::optional<CalibratedCollective>, kCollectiveKindCount> by_kind;
  const CalibratedCollective* find(CollectiveKind k) const;
  void set(CollectiveKind k, CalibratedCollective c);
  bool empty() const;
};

/// One collective call, counted as NCCL's API counts it: `count` is the element count passed to
/// ncclAllReduce/ncclReduce/ncclBroadcast (the whole buffer) and the per-rank count passed to
/// ncclAllGather (sendcount) and ncclReduceScatter (recvcount).
struct CollectiveRequest {
  CollectiveKind kind = CollectiveKind::AllReduce;
  Elements count = 0;
  DType dtype = DType::Float32;
  CollectiveGroup group;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::Auto;  ///< Ring/Tree force one (NCCL_ALGO)
};

struct CollectiveCost {
  SimTime duration_ns = 0;        ///< predicted time of the call
  Bytes algbw_bytes = 0;          ///< S, the bytes nccl-tests divides by the time for algbw
  Bytes bytes_sent_per_rank = 0;  ///< S × busbw_factor rounded up: what each rank (the root and the
                                  ///< ring's busiest rank for broadcast/reduce) sends with a ring
  double busbw_factor = 0;     ///< nccl-tests' busbw / algbw
  const char* algorithm = "";  ///< "ring", "tree", "nvls", "calibrated", or "none" (n == 1, S == 0)
};

/// nccl-tests' S for this call, or nullopt if it overflows 64 bits.
std::optional<Bytes> collective_algbw_bytes(CollectiveKind k, Elements count, DType dtype,
                                            std::uint32_t ranks);
/// nccl-tests' busbw factor for n ranks.
double collective_busbw_factor(CollectiveKind k, std::uint32_t ranks);

/// Cost of one call. n == 1 or S == 0 costs nothing. Errors: a group whose size is not
/// nodes × gpus_per_node or exceeds kMaxCollectiveRanks, non-positive or non-finite link
/// parameters, a tree forced on anything but all-reduce, byte counts or times beyond 64 bits.
Result<CollectiveCost> collective_cost(const CollectiveRequest& request, const LinkParams& links,
                                       const CalibratedLinks* calibration = nullptr);

/// Fits alpha and busBw per collective to nccl-tests text output (all_reduce_perf, all_gather_perf,
/// reduce_scatter_perf, broadcast_perf, reduce_perf; several may be concatenated). The collective
/// is read from "# Collective test starting: <program>"; `fallback` names it for a bare table. Rows
/// are checked column by column; problems are reported as "<source>: line N: ...".
Result<CalibratedLinks> parse_nccl_tests(std::string_view text, const std::string& source,
                                         std::optional<CollectiveKind> fallback = std::nullopt);
/// Reads the file at `path` and parses it (source = path).
Result<CalibratedLinks> load_nccl_tests(const std::string& path,
                                        std::optional<CollectiveKind> fallback = std::nullopt);

}  // namespace zerosim
