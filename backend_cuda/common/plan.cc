// single_gpu_stand_in and plan_gemms (cuda_plan.h).
#include <algorithm>
#include <cmath>

#include "zerosim/cuda_plan.h"

namespace zerosim::cuda {

std::string stand_in_form_name(StandInForm f) {
  switch (f) {
    case StandInForm::Touch:
      return "touch";
    case StandInForm::Copy:
      return "copy";
    case StandInForm::Replicate:
      return "replicate";
    case StandInForm::LocalSum:
      return "local_sum";
    case StandInForm::Nothing:
      return "nothing";
  }
  return "nothing";
}

StandIn single_gpu_stand_in(CollectiveKind kind, Elements numel, Elements out_numel,
                            std::uint32_t group, std::uint32_t rank_in_group, std::int32_t root,
                            bool in_place) {
  StandIn s;
  const bool is_root = root >= 0 && static_cast<std::uint32_t>(root) == rank_in_group;
  switch (kind) {
    case CollectiveKind::AllReduce:
    case CollectiveKind::Broadcast:
      // Every rank ends with numel elements in its output (the broadcast's source keeps its own).
      s.form = in_place ? StandInForm::Touch : StandInForm::Copy;
      s.read = s.written = numel;
      return s;
    case CollectiveKind::Reduce:
      if (!is_root) return s;  // NCCL writes no output on the other ranks
      s.form = in_place ? StandInForm::Touch : StandInForm::Copy;
      s.read = s.written = numel;
      return s;
    case CollectiveKind::AllGather:
      // The shard lands in every slot: the gathered output is fully written, as NCCL leaves it.
      s.form = StandInForm::Replicate;
      s.read = numel;
      s.written = out_numel;
      s.dst_offset = static_cast<Elements>(rank_in_group) * numel;
      return s;
    case CollectiveKind::ReduceScatter:
      // The full input is read (every slot summed into the rank's shard), as the reduction reads.
      s.form = StandInForm::LocalSum;
      s.read = std::max(numel, out_numel * group);
      s.written = out_numel;
      return s;
  }
  return s;
}

std::vector<Gemm> plan_gemms(double flops, std::uint64_t hidden, std::uint64_t tokens) {
  std::vector<Gemm> out;
  if (hidden == 0 || tokens == 0 || !(flops > 0)) return out;
  const double per_column = 2.0 * static_cast<double>(hidden) * static_cast<double>(tokens);
  if (flops < per_column) return out;
  // Columns of the (hidden x n) weight that give the op's FLOPs, rounded to the nearest.
  const double columns_d = std::nearbyint(flops / per_column);
  if (columns_d > 1e15) return out;  // not a real layer: the busy kernel
  auto columns = static_cast<std::uint64_t>(columns_d);
  const std::uint64_t width = kMaxGemmWidthPerHidden * hidden;
  const std::uint64_t full = columns / width;
  if (full > 0) {
    Gemm g{tokens, width, hidden,
           static_cast<std::uint32_t>(std::min<std::uint64_t>(full, 1u << 30))};
    out.push_back(g);
  }
  if (const std::uint64_t rest = columns % width; rest > 0)
    out.push_back({tokens, rest, hidden, 1});
  return out;
}

Bytes gemm_workspace_bytes(const std::vector<Gemm>& plan) {
  Bytes a = 0, b = 0, c = 0;
  for (const Gemm& g : plan) {
    a = std::max<Bytes>(a, g.m * g.k);
    b = std::max<Bytes>(b, g.k * g.n);
    c = std::max<Bytes>(c, g.m * g.n);
  }
  return 2 * (a + b + c);
}

}  // namespace zerosim::cuda
