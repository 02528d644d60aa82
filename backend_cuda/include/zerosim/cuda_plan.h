// What the CUDA backend decides before it touches a GPU, kept pure so that it is tested here:
//   * single-GPU mode's stand-in for each collective (NCCL refuses two ranks of one communicator on
//     one device, ecosystem.md §4.5): a device copy that reads and writes the buffers the
//     collective would, with the same sizes, so the rank's memory and bytes are real and only the
//     communication time is "model only";
//   * the cuBLAS GEMMs that stand in for a compute op: the model's (tokens x hidden) activations
//     times a (hidden x n) weight, n chosen so the GEMMs' FLOPs equal the op's (the time model's
//     GemmShape, time_model.h); a busy kernel when the schedule has no GEMM shape.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "zerosim/ir_types.h"
#include "zerosim/units.h"

namespace zerosim::cuda {

/// How single-GPU mode replaces one collective on one rank.
enum class StandInForm : std::uint8_t {
  Touch,      ///< in place: every element read and written back (x = x): all-reduce, broadcast
  Copy,       ///< out of place: `read` elements of src into dst from dst_offset
  Replicate,  ///< all-gather: the rank's shard copied into every slot of the gathered output
  LocalSum,   ///< reduce-scatter: the sum of the input's `group` slots into the rank's output
  Nothing,    ///< a non-root rank of a reduce: no output to write
};
std::string stand_in_form_name(StandInForm f);  ///< "touch", "copy", "replicate", ...

struct StandIn {
  StandInForm form = StandInForm::Nothing;
  Elements read = 0;        ///< elements read from the input
  Elements written = 0;     ///< elements written to the output
  Elements dst_offset = 0;  ///< Copy: where in dst the elements land
};

/// The stand-in of a collective for rank `rank_in_group` of a group of `group` ranks; `numel` and
/// `out_numel` per rank as the schedule gives them (CollectiveCall); `in_place`: no dst operand.
StandIn single_gpu_stand_in(CollectiveKind kind, Elements numel, Elements out_numel,
                            std::uint32_t group, std::uint32_t rank_in_group, std::int32_t root,
                            bool in_place);

/// One cuBLAS GEMM (column-major C[m x n] = A[m x k] B[k x n]), `count` times.
struct Gemm {
  std::uint64_t m = 0, n = 0, k = 0;
  std::uint32_t count = 1;
  double flops() const { return 2.0 * static_cast<double>(m * n * k) * count; }
};

/// The largest n of one GEMM: 4 x hidden (a transformer's MLP width), so a big op is several
/// GEMMs of a realistic shape instead of one very wide one.
inline constexpr std::uint64_t kMaxGemmWidthPerHidden = 4;

/// GEMMs whose FLOPs add up to `flops` (within one column of the last GEMM) at m = tokens,
/// k = hidden. Empty when hidden or tokens is 0 or flops < 2 x tokens x hidden (one column):
/// the op then runs the busy kernel.
std::vector<Gemm> plan_gemms(double flops, std::uint64_t hidden, std::uint64_t tokens);

/// Bytes of the one GEMM workspace: the largest A, B and C of a plan, in 16-bit elements.
Bytes gemm_workspace_bytes(const std::vector<Gemm>& plan);

}  // namespace zerosim::cuda
