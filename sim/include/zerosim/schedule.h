// Schedule IR: the contract between the schedule builders, the discrete-event engine and the
// execution backends (DESIGN.md "The one idea: a shared schedule").
//
// A Schedule is ONE program (an ordered list of Ops) that every rank runs: DeepSpeed issues the
// same collectives in the same order on every data-parallel rank, and ranks differ only in which
// slice they own. The few quantities that depend on the slice (e.g. the size of grads_in_partition,
// the bytes of owned gradients copied after a flush) are "slots": a Buffer or Op names a slot, and
// each RankRole stores that slot's element count. Ranks with identical slot values share a role, so
// a schedule's size grows with tensors and buckets, not with ranks (stage 3 and stage 0 have a
// single role).
//
// The IR holds no times. Ops on one stream run in program order; `deps` add cross-stream edges
// (a stream waits for another stream's op). Serialised as versioned JSON (schedule_io.h).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "zerosim/collective_model.h"
#include "zerosim/diagnostic.h"
#include "zerosim/ds_config.h"
#include "zerosim/gpu_catalog.h"
#include "zerosim/memory_model.h"
#include "zerosim/model_desc.h"
#include "zerosim/partition_plan.h"
#include "zerosim/units.h"

namespace zerosim {

inline constexpr int kScheduleIrVersion = 1;
inline constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();

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
inline constexpr std::size_t kStreamCount = 6;
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
  Sync,           ///< full device synchronize (all streams drain)
  Marker,         ///< zero-cost boundary: label names it (e.g. "epilogue", "step")
};
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
std::string_view phase_name(
    Phase p);  ///< "init","forward","backward","boundary_reduce","epilogue","step","post_step"

enum class ReduceOp : std::uint8_t { None, Sum, Max };
std::string_view reduce_op_name(ReduceOp r);  ///< "", "sum", "max"

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
std::string_view category_name(BufferCategory c);

enum class MemoryPool : std::uint8_t { Device, Host, Pinned };

/// A named buffer. Its size is `numel` elements of `dtype`, or, when `slot` != kNone, the rank
/// role's value for that slot.
struct Buffer {
  std::string name;  ///< "ipg[0]", "grads_in_partition", "grad:model.layers.0.mlp.up_proj.weight"
  std::string spec_id;  ///< deepspeed_zero.md id: "B1", "T2", ... (may be empty)
  BufferCategory category = BufferCategory::Temp;
  MemoryPool pool = MemoryPool::Device;
  DType dtype = DType::Float16;
  Elements numel = 0;
  std::uint32_t slot = kNone;
  /// Lives to the end of the program once allocated (B1, B2, B3, ...): needs no Free.
  bool persistent = false;
};

struct Op {
  OpKind kind = OpKind::Marker;
  Stream stream = Stream::Compute;
  Phase phase = Phase::Forward;
  std::uint32_t step = 0;        ///< optimizer step index (0 first)
  std::uint32_t micro_step = 0;  ///< micro-step inside the step
  std::uint32_t buffer = kNone;  ///< Alloc/Free/CopyToBucket/Copy target
  std::uint32_t layer = kNone;   ///< Forward/Backward/Recompute
  std::uint32_t param = kNone;   ///< GradReady/CopyToBucket (model param id)
  std::uint32_t bucket = kNone;  ///< flush sequence number a Collective/CopyToBucket belongs to
  double flops = 0;              ///< compute ops
  Elements elements = 0;         ///< Copy/OptimizerStep/WriteBack/H2D/D2H/CopyToBucket size
  std::uint32_t slot = kNone;    ///< when != kNone, `elements` comes from the rank role
  DType dtype = DType::Float16;  ///< element type of `elements` / of the collective
  // Collective fields (kind == Collective).
  CollectiveKind collective = CollectiveKind::AllReduce;
  Elements numel = 0;      ///< input elements per rank
  Elements out_numel = 0;  ///< output elements per rank (gathers/scatters; = numel otherwise)
  std::uint32_t group_size = 1;
  ReduceOp reduce_op = ReduceOp::None;
  std::int32_t dst = -1;            ///< reduce destination / broadcast source rank (-1: none)
  std::vector<std::uint32_t> deps;  ///< op indices that must finish before this op starts
  std::string label;                ///< human-readable ("flush 3: AR(500000000)", "fwd layers.4")
};

/// Ranks that run the program with identical slot values.
struct RankRole {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> ranks;  ///< inclusive [first, last] ranges
  std::uint32_t representative = 0;                            ///< a rank of this role (the first)
  std::vector<Elements> slots;                                 ///< element count per slot
  std::uint64_t rank_count() const;
};

struct ScheduleMeta {
  std::string model;               ///< model name
  std::string mode = "deepspeed";  ///< "deepspeed" or "paper"
  DeepSpeedVersion deepspeed_version = DeepSpeedVersion::Edaa722;
  std::string optimizer;  ///< wrapper DeepSpeed runs ("DeepSpeedZeroOptimizer", ...)
  int stage = 0;
  std::uint32_t world = 1;
  std::uint32_t nodes = 1;
  std::uint32_t gpus_per_node = 1;
  std::uint32_t steps = 1;       ///< optimizer steps in the program
  std::uint32_t grad_accum = 1;  ///< micro-steps per step
  DType lp = DType::Float16, master = DType::Float32, grad_accum_dtype = DType::Float16,
        comm = DType::Float16;
  std::vector<std::string> slot_names;  ///< what each slot measures
  std::vector<std::string> notes;       ///< behaviour notes (e.g. "BF16_Optimizer runs")
};

struct Schedule {
  ScheduleMeta meta;
  std::vector<Buffer> buffers;
  std::vector<Op> ops;          ///< the shared program, in issue order
  std::vector<RankRole> roles;  ///< cover ranks 0..world-1 exactly once

  /// Role index of a rank (binary search over role ranges). Precondition: rank < world.
  std::uint32_t role_of(std::uint32_t rank) const;
  /// Elements of a buffer for a role.
  Elements buffer_numel(std::uint32_t buffer, std::uint32_t role) const;
  /// Elements an op touches for a role (its `elements`, or the role's slot value).
  Elements op_elements(const Op& op, std::uint32_t role) const;
};

/// Everything a schedule is built from.
struct ScheduleInput {
  const ModelDesc* model = nullptr;
  const PartitionPlan* plan = nullptr;  ///< for the stage (stage 3 layout when ds.zero.stage == 3)
  const DsConfig* ds = nullptr;
  Cluster cluster;
  TrainingSettings training;
  std::uint32_t steps = 1;  ///< consecutive optimizer steps to emit (step 0 first)
  /// Steps whose fp16/bf16 overflow check finds an inf/nan (ascending, each before the last step,
  /// which is the steady state a simulation reports): step() issues the check and returns (§5,
  /// §7.7); no norm, update or gather. Stages 1-3 only.
  std::vector<std::uint32_t> overflow_steps;
  Accounting mode = Accounting::DeepSpeed;
  DeepSpeedVersion version = DeepSpeedVersion::Edaa722;
};

/// Stage 3 without zero.Init: the init buffer holding every whole param before partitioning (an
/// out-of-memory there is what building the model under zero.Init avoids).
inline constexpr const char* kStage3WholeModelBuffer = "model params before partitioning";

/// The first problem of an overflow-step list for `steps` simulated steps (the steps must ascend
/// without repeats and come before the last step, the steady state a simulation reports), as an
/// "expected ..., got ..." message; empty when the list is fine. One rule for the CLI, scenario
/// files and build_schedule.
std::string overflow_steps_problem(const std::vector<std::uint32_t>& overflow_steps,
                                   std::uint32_t steps);

/// Why zero.Init cannot apply to this stage in this mode ("expected ..., got ..."), or empty:
/// zero.Init is stage 3's (paper mode models no init). One rule for the CLI, scenario files and
/// build_schedule.
std::string zero_init_problem(int stage, Accounting mode);

/// Builds the schedule (pure function). Dispatches on mode and ds->optimizer_path().
Result<Schedule> build_schedule(const ScheduleInput& in);

/// Checks internal consistency: op/buffer/param/layer references in range, deps point backwards,
/// every Alloc has a later Free or the buffer is persistent, roles cover 0..world-1 once, slot
/// vectors sized to slot_names. Used after building and after reading a schedule file.
Diagnostics validate_schedule(const Schedule& s, const std::string& source);

}  // namespace zerosim
