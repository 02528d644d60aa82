// The Schedule IR's enums and their names: streams, op kinds, phases, reduce ops, buffer
// categories, memory pools, collective kinds and DeepSpeed versions. Plain types with no
// dependency beyond units.h, so the trace format (trace.h), the memory ledger and every front end
// can use them without the schedule builders or the planner. The counts derive from the enums.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>

#include "zerosim/units.h"

namespace zerosim {

/// Sentinels, one meaning each (reviewed for issue #7; file formats write none of them: a field at
/// its sentinel is omitted, see scenarios/README.md "Compactness rule"):
///   kNone (uint32 max)          "no such index": no buffer, layer, param, bucket (flush), slot,
///                               comm record, gate, previous call, ... Never "all" or "any".
///   kAllRanks (trace.h)         Span/CommRecord::rank "every traced rank" (the simulator's one
///                               timing); a backend writes the measured rank instead.
///   kAllRoles (memory_ledger.h) Allocation::role "made by every role".
///   PartitionPlan::kNoGroup     param_group of a param in no optimizer group (frozen).
///   Op::dst = -1 (schedule.h)   no root: every collective other than reduce and broadcast.
/// kAllRanks and kAllRoles share kNone's bit pattern but not its meaning, and no field holds both
/// an index-or-kNone and an "all" value: compare a field only with the sentinel its comment names.
inline constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();

/// The DeepSpeed commit whose behaviour the deepspeed accounting reproduces by default (the one
/// place its full hash is written: --version, plan's header and JSON, the schedule notes).
inline constexpr const char* kDeepSpeedCommit = "edaa7221267243c7be7fb49c5d5f5c4fb97b4641";

/// DeepSpeed releases whose differences the spec records as version notes.
enum class DeepSpeedVersion : std::uint8_t {
  Edaa722,  ///< commit edaa7221267243c7be7fb49c5d5f5c4fb97b4641 (the spec's; default)
  V0_14_4,  ///< release v0.14.4
};
std::string_view deepspeed_version_name(DeepSpeedVersion v);  ///< "edaa722", "0.14.4"
/// Accepts "edaa722", the full commit hash, "0.14.4", "v0.14.4".
std::optional<DeepSpeedVersion> parse_deepspeed_version(std::string_view s);

/// Streams (CUDA streams on the GPU backend; lanes in the trace).
enum class Stream : std::uint8_t {
  Compute,  ///< default stream: forward/backward, copies into buckets, non-overlapped collectives
  Reduce,   ///< S12 reduction_stream / S3 reduce_and_partition_stream (overlap_comm)
  Gather,   ///< S3 all-gather stream (overlap_comm)
  H2D,      ///< host -> device copies (offload)
  D2H,      ///< device -> host copies (offload)
  Host,     ///< CPU work (CPU optimizer step with offload)
};
inline constexpr std::size_t kStreamCount = static_cast<std::size_t>(Stream::Host) + 1;
std::string_view stream_name(Stream s);  ///< "compute", "reduce", "gather", "h2d", "d2h", "host"

enum class OpKind : std::uint8_t {
  Alloc,          ///< buffer becomes live (bytes = buffer size for the rank's role)
  Free,           ///< buffer released
  Forward,        ///< forward compute of `layer` (flops)
  Backward,       ///< backward compute of `layer` (flops = 2 x forward)
  Recompute,      ///< activation-checkpointing recompute of `layer`'s forward
  GradReady,      ///< autograd produced `param`'s gradient (post-accumulate-grad hook fires)
  CopyToBucket,   ///< `param`'s grad copied into IPG buffer `buffer` (elements)
  Copy,           ///< device copy/cast/flatten of `elements` elements of `dtype` (into `buffer`)
  Collective,     ///< a torch.distributed collective (see the collective fields)
  OptimizerStep,  ///< optimizer update of `elements` master elements (on `stream`: Host when
                  ///< offloaded)
  WriteBack,      ///< master (MW) -> 16-bit params copy of `elements`
  HostToDevice,   ///< offload copy of `elements` x dtype
  DeviceToHost,   ///< offload copy
  /// The local squared L2 norm of the gradients `src` (its `elements`) into the one-element
  /// scratch `dst` (copy_mode Add: added to it), before the norm all-reduce: DeepSpeed's
  /// get_grad_norm_direct / get_flattened_grad_norm. Not costed (the simulator's model has no
  /// cost for it).
  GradNorm,
  /// The inf/nan check of the gradients `src` into the one-element uint8 flag `dst` (1: some
  /// element is inf or nan; copy_mode Add: or-ed into it), before the overflow all-reduce:
  /// DeepSpeed's has_overflow / CheckOverflow. Not costed.
  GradOverflow,
  Sync,    ///< full device synchronize (all streams drain)
  Marker,  ///< zero-cost boundary: label names it (e.g. "epilogue", "step")
};
inline constexpr std::size_t kOpKindCount = static_cast<std::size_t>(OpKind::Marker) + 1;
std::string_view op_kind_name(OpKind k);

/// Phase of a training step, as the collective log reports it.
enum class Phase : std::uint8_t {
  Init,
  Forward,
  Backward,
  BoundaryReduce,
  Epilogue,
  Step,
  PostStep
};
inline constexpr std::size_t kPhaseCount = static_cast<std::size_t>(Phase::PostStep) + 1;
std::string_view phase_name(
    Phase p);  ///< "init","forward","backward","boundary_reduce","epilogue","step","post_step"

enum class ReduceOp : std::uint8_t { None, Sum, Max };
std::string_view reduce_op_name(ReduceOp r);  ///< "", "sum", "max"

/// How a data op writes its destination: Assign replaces it (copy_, a fresh p.grad), Add
/// accumulates into it (DeepSpeed's add_ into grads_in_partition, autograd into a live p.grad).
enum class CopyMode : std::uint8_t { Assign, Add };
inline constexpr std::size_t kCopyModeCount = static_cast<std::size_t>(CopyMode::Add) + 1;
std::string_view copy_mode_name(CopyMode m);  ///< "assign", "add"

enum class BufferCategory : std::uint8_t {
  Param16,     ///< low-precision parameters (flat B1 / stage-3 partitions)
  Param32,     ///< fp32 master weights (B2)
  Grad,        ///< gradients: autograd grads, grads_in_partition, grad partitions, fp32 grad copies
  OptimState,  ///< Adam moments (B3)
  Activation,  ///< activations
  CommBucket,  ///< IPG buckets, gather/scatter staging
  GatheredParam,  ///< stage 3: full params gathered for compute
  Temp,           ///< step temporaries, flatten copies, norm scratch
};
inline constexpr std::size_t kCategoryCount = static_cast<std::size_t>(BufferCategory::Temp) + 1;
/// Every category, in enum order.
inline constexpr std::array<BufferCategory, kCategoryCount> kAllCategories = {
    BufferCategory::Param16,       BufferCategory::Param32,    BufferCategory::Grad,
    BufferCategory::OptimState,    BufferCategory::Activation, BufferCategory::CommBucket,
    BufferCategory::GatheredParam, BufferCategory::Temp};
/// Bytes per category, indexed by the enum value.
using CategoryBytes = std::array<Bytes, kCategoryCount>;
std::string_view category_name(BufferCategory c);

enum class MemoryPool : std::uint8_t { Device, Host, Pinned };
inline constexpr std::size_t kMemoryPoolCount = static_cast<std::size_t>(MemoryPool::Pinned) + 1;
/// "device", "host", "pinned" (the spelling of MemoryPool in schedule and trace files).
std::string_view memory_pool_name(MemoryPool p);

/// The collectives DeepSpeed ZeRO issues.
enum class CollectiveKind : std::uint8_t { AllReduce, Reduce, Broadcast, AllGather, ReduceScatter };
inline constexpr std::size_t kCollectiveKindCount =
    static_cast<std::size_t>(CollectiveKind::ReduceScatter) + 1;
/// Every kind, in enum order.
inline constexpr std::array<CollectiveKind, kCollectiveKindCount> kAllCollectiveKinds = {
    CollectiveKind::AllReduce, CollectiveKind::Reduce, CollectiveKind::Broadcast,
    CollectiveKind::AllGather, CollectiveKind::ReduceScatter};
/// torch.distributed name: "all_reduce", "reduce", "broadcast", "all_gather_into_tensor",
/// "reduce_scatter_tensor".
std::string_view collective_name(CollectiveKind k);

}  // namespace zerosim
