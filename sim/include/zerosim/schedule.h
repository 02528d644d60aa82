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
// The IR's enums live in ir_types.h (the trace format shares them); the builders that make a
// Schedule from a model and a DeepSpeed config are declared in schedule_builder.h.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "zerosim/diagnostic.h"
#include "zerosim/ir_types.h"
#include "zerosim/partition_plan.h"
#include "zerosim/units.h"

namespace zerosim {

inline constexpr int kScheduleIrVersion = 2;

/// A communicator (a torch.distributed process group): disjoint groups of `size` ranks
/// {base, base + stride, ..., base + (size - 1)·stride} tiling ranks first..world-1; rank r's index
/// in its group is ((r - first) / stride) % size. Schedule::comms[0] is always the data-parallel
/// world {0, world, 1}. Ranks are never listed, so a communicator is O(1) whatever the world size.
struct CommGroup {
  std::uint32_t first = 0;
  std::uint32_t size = 1;
  std::uint32_t stride = 1;
  friend bool operator==(const CommGroup&, const CommGroup&) = default;
  /// Rank r's index in its group. Precondition: first <= r.
  std::uint32_t index_of(std::uint32_t r) const { return ((r - first) / stride) % size; }
  /// The rank at index i of rank r's group. Preconditions: first <= r, i < size.
  std::uint32_t rank_at(std::uint32_t r, std::uint32_t i) const {
    return r - index_of(r) * stride + i * stride;
  }
};

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
  std::uint32_t comm = 0;  ///< Schedule::comms index: the communicator the collective runs on
  ReduceOp reduce_op = ReduceOp::None;
  std::uint32_t root = kNone;  ///< reduce destination / broadcast source: index in the communicator
  std::vector<std::uint32_t> deps;  ///< op indices that must finish before this op starts
  std::string label;                ///< human-readable ("flush 3: AR(500000000)", "fwd layers.4")
};

/// One model parameter; tensors[i] is model param i (DeepSpeed's ds_id order), what an op's `param`
/// names.
struct TensorInfo {
  std::string name;
  std::vector<std::uint64_t> shape;  ///< torch shape; empty for a scalar
  Elements numel = 0;
  DType dtype = DType::Float16;  ///< the 16-bit (LP) dtype the model is trained in
  bool trainable = true;         ///< requires_grad
  std::uint32_t grad = kNone;    ///< its gradient buffer (autograd's p.grad); kNone: none
  // Where the partition plan puts it (Schedule::layout; PartitionPlan's fields of the same name).
  std::uint32_t group = kNone;      ///< param group; kNone: frozen or in no group
  Elements flat_offset = 0;         ///< stage 0-2: start in its group's flat buffer
  std::uint32_t sub_group = kNone;  ///< stage 3: optimizer sub-group; kNone: none
  bool persistent = false;          ///< stage 3: stays gathered (persistence thresholds)
};

/// One param group's flat layout (stage 0-2: PartitionPlan::groups; stage 3: only `params`).
struct GroupLayout {
  std::vector<std::uint32_t> params;      ///< tensor indices, the group's original order
  std::vector<std::uint32_t> flat_order;  ///< stage 0-2: flat-buffer order (round robin applied)
  Elements numel = 0;                     ///< P_g
  Elements padding = 0;                   ///< pad_g (to a multiple of 2W)
  Elements aligned = 0;                   ///< Pal_g = P_g + pad_g
  Elements partition = 0;                 ///< S_g = Pal_g / W
};

/// A stage 3 optimizer sub-group (PartitionPlan::sub_groups).
struct SubGroupLayout {
  std::uint32_t group = 0;
  std::vector<std::uint32_t> params;  ///< tensor indices, in order
  Elements partition_numel = 0;       ///< Σ c_i
};

/// The partition layout the schedule was built for: the plan_partition options (groups as tensor
/// lists) and what they give. plan_of() rebuilds the PartitionPlan from the tensor table and these
/// options, so a consumer asks the builder's own queries (owners, rank_partition, ...);
/// lower_schedule checks the recorded layout against that plan.
struct Layout {
  int stage = 0;
  std::uint32_t world = 1;
  bool round_robin = false;
  std::uint64_t sub_group_size = 1000000000;
  std::uint64_t param_persistence_threshold = 100000;
  std::uint64_t model_persistence_threshold = 9223372036854775807ULL;
  std::vector<GroupLayout> groups;
  std::vector<SubGroupLayout> sub_groups;  ///< stage 3
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
  std::vector<CommGroup> comms;     ///< communicators; [0] is the data-parallel world
  std::vector<TensorInfo> tensors;  ///< the model's params (empty: a schedule without a model)
  Layout layout;                    ///< the partition layout of `tensors`
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

/// The model the tensor table describes (names, shapes, numel, trainable), for plan_partition.
ModelDesc tensor_model(const Schedule& s);
/// The plan_partition options the layout records.
PartitionOptions layout_options(const Layout& l);
/// The partition plan of the schedule's tensors and layout: plan_partition(tensor_model(s),
/// layout_options(s.layout)), the same queries the builder used. O(tensors).
Result<PartitionPlan> plan_of(const Schedule& s);

/// The IR's rules (what makes a Schedule runnable) are checked by lower_schedule
/// (schedule_graph.h), the one lowering every consumer uses.

}  // namespace zerosim
