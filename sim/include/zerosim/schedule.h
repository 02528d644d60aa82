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
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "zerosim/dep_list.h"
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
  /// Scalar scratch the executor provides before op 0 (norms, the overflow flag): never
  /// allocated or freed by an op, outside the memory ledger (like NCCL's own buffers).
  bool executor_owned = false;
};

/// An operand: for the rank at index i of the op's communicator (comms[op.comm]; comm 0, the
/// data-parallel world, for every non-collective op, so i is the rank), elements
/// [offset + rank_stride·i, + length) of `buffer`. `length` 0 means the op's extent: `elements`
/// (or the role's slot) for a data op, `numel` for a collective's src and `out_numel` for its dst.
/// An empty region (buffer kNone) is an operand the schedule does not carry (yet): see the
/// schedule notes and scenarios/README.md "Not carried yet".
/// With `list` != kNone the operand is instead the concatenation of Schedule::lists[list]'s pieces
/// (one list for every rank, its pieces shifted per rank by their own rank_stride; buffer kNone,
/// offset, rank_stride and length 0). With `flush_grads`
/// != kNone it is derived from the partition layout: the gradients of
/// Schedule::flush_plans[flush_grads] that touch the rank's partition of their param group, whole,
/// in insertion order, where the flush reduces them (the stage 1/2 post-flush copies; a rank's
/// total is its Touching slot). With `derived` != kNone it is Schedule::derived[derived], computed
/// for the rank from the layout (grads_in_partition, averaged_gradients, owned slices).
struct Region {
  std::uint32_t buffer = kNone;
  Elements offset = 0;
  Elements rank_stride = 0;
  Elements length = 0;
  std::uint32_t list = kNone;
  std::uint32_t flush_grads = kNone;
  std::uint32_t derived = kNone;
  bool empty() const {
    return buffer == kNone && list == kNone && flush_grads == kNone && derived == kNone;
  }
  friend bool operator==(const Region&, const Region&) = default;
};

/// "No limit" for Piece::limit.
inline constexpr Elements kNoLimit = std::numeric_limits<Elements>::max();

/// One piece of an operand list: `length` elements of `buffer` (kNone: zeros when read, dropped
/// when written). For the rank at index i of the op's communicator, element j (0 <= j < length)
/// sits at buffer position
///   start + j                                            (block 0: contiguous), or
///   start + (j / block)·block_stride + j % block         (block > 0: runs of `block` elements
///                                                        `block_stride` apart; the last run may
///                                                        end early),
/// with start = offset + rank_stride·i. Positions >= `limit` hold no data of the piece: they read
/// as zeros and are not written (a tensor's end inside a bucket or a whole param: the last ranks'
/// padded chunks). The stage 3 rank-major staging and assembly are one strided piece per tensor,
/// the own chunks of a bucket one rank-strided, limited piece per tensor: never one per rank.
struct Piece {
  std::uint32_t buffer = kNone;
  Elements offset = 0;
  Elements length = 0;
  Elements rank_stride = 0;
  Elements block = 0;
  Elements block_stride = 0;
  Elements limit = kNoLimit;
  friend bool operator==(const Piece&, const Piece&) = default;
};

/// One gradient of a planned IPG flush and where it sits when the flush reduces it (the IPG
/// buffer at its bucket offset when copied, else its own gradient buffer).
struct FlushEntry {
  std::uint32_t tensor = 0;
  std::uint32_t buffer = kNone;
  Elements offset = 0;
  friend bool operator==(const FlushEntry&, const FlushEntry&) = default;
};
/// The gradients one planned stage 1/2 flush reduces, in insertion order; shared by every
/// micro-step that repeats the flush, so O(tensors) entries per pass.
struct FlushPlan {
  std::vector<FlushEntry> entries;
  friend bool operator==(const FlushPlan&, const FlushPlan&) = default;
};

/// One stage 1/2 IPG pass (a backward's hook inserts, or the stage 1 reduce_gradients walk): its
/// flushes in reduction order and, per set, the grads_in_partition (T3) piece each flush
/// allocates. A rank's T3 lives in the piece of the first flush whose gradients touch its
/// partition (its FirstTouch slot; the others are 0 elements for it) and holds, packed in
/// reduction order, every touching gradient of the pass, whole (§4.5). Set 1 is the second T3
/// of later stage 2 micro-steps (GAS > 1), added into set 0 by the epilogue.
///
/// With `per_flush` each flush's touching gradients sit instead in that flush's own piece, packed
/// from its offset 0 (the non-contiguous path at stage 2: the kept autograd grads of a flush,
/// DeepSpeed's p.grad of the params touching the rank, one buffer per flush sized by its Touching
/// slot). Stage 1 without contiguous gradients names one buffer for every flush (its kept grads of
/// the whole pass), which is the packed layout.
struct GradPass {
  std::vector<std::uint32_t> flush_plans;      ///< per flush: Schedule::flush_plans index
  std::vector<std::vector<std::uint32_t>> t3;  ///< per set, per flush: its T3 piece buffer
  bool per_flush = false;                      ///< each flush's gradients in its own piece
  friend bool operator==(const GradPass&, const GradPass&) = default;
};

/// What a derived operand is; each resolves for a rank from the layout and the pass (resolve).
enum class DerivedKind : std::uint8_t {
  /// grads_in_partition of pass `pass`, set `set`: the part flush `flush` writes (the flush's
  /// touching gradients, at the packed offset of the flushes before it), or all of it (`flush`
  /// kNone).
  PartitionGrads,
  /// averaged_gradients[group] (§4.7 step 4): in the group's flat order, the slice of each
  /// gradient touching the rank's partition that the rank owns, where set 0 of pass `pass` holds
  /// it, then zeros up to S_g (the padding). When buffer `flat` (kNone: none) has elements for the
  /// rank's role, S_g elements of it from its start instead (the step's flat copy, T6).
  AveragedGrads,
  /// The slices the rank owns of flush plan `flush_plan`'s gradients, where the flush reduces them;
  /// with a window, only those at its positions, and with `rank`, on that rank only (a reduction
  /// chunk's copy-back, X4).
  OwnedGrads,
  /// The same slices at (flat offset - rank x S_g) of `buffers[group]`, a partition-shaped buffer
  /// per param group (the offload fp32 gradient partitions, B4).
  OwnedPartition,
};
inline constexpr std::size_t kDerivedKindCount =
    static_cast<std::size_t>(DerivedKind::OwnedPartition) + 1;
std::string_view derived_kind_name(DerivedKind k);  ///< "partition_grads", ...

/// A derived operand (Region::derived): its kind and arguments, shared by every op naming it.
struct DerivedOperand {
  DerivedKind kind = DerivedKind::PartitionGrads;
  std::uint32_t pass = kNone;            ///< PartitionGrads, AveragedGrads: Schedule::grad_passes
  std::uint32_t set = 0;                 ///< PartitionGrads
  std::uint32_t flush = kNone;           ///< PartitionGrads: index in the pass; kNone: every flush
  std::uint32_t group = kNone;           ///< AveragedGrads
  std::uint32_t flat = kNone;            ///< AveragedGrads
  std::uint32_t flush_plan = kNone;      ///< OwnedGrads, OwnedPartition
  std::vector<std::uint32_t> buffers{};  ///< OwnedPartition: per param group
  /// OwnedGrads: only the slices at plan positions [window, window + window_length) (a slice's
  /// position is its entry's offset plus where it starts in the tensor; one reduction chunk of the
  /// bucket); window_length 0: every position. Windows are cut at owner-slice boundaries (a slice
  /// crossing one is clipped).
  Elements window = 0, window_length = 0;
  std::uint32_t rank = kNone;  ///< OwnedGrads: only on this rank (a reduce's root); kNone: every
  /// OwnedGrads: the slices in buffer `into` instead of where the entries are: at position - window
  /// (the temporary a chunk of the bucket was flattened into), or with `packed` one after another
  /// from its start (the temporary of one owner's flattened slices); kNone: where the entries are.
  std::uint32_t into = kNone;
  bool packed = false;
  friend bool operator==(const DerivedOperand&, const DerivedOperand&) = default;
};

/// The operands of one optimizer update (a param group's at stage 0-2, a sub-group's at stage 3),
/// shared by every step that repeats it: master weights, the gradient it reads, Adam's two
/// moments, where the 16-bit result lands (the WriteBack / H2D / D2H after the update writes it),
/// the squared-norm scratch the clip factor reads and the overflow flag (empty: no check). An
/// empty region is not carried yet. Lengths: master, grad, exp_avg, exp_avg_sq and lp_out are the
/// op's `elements` (length 0 or equal to it); norms and overflow give theirs.
struct UpdateCall {
  Region master, grad, exp_avg, exp_avg_sq, lp_out, norms, overflow;
  friend bool operator==(const UpdateCall&, const UpdateCall&) = default;
};

struct Op {
  OpKind kind = OpKind::Marker;
  Stream stream = Stream::Compute;
  Phase phase = Phase::Forward;
  /// Alloc: the buffer is zero-filled when allocated (torch.zeros; DeepSpeed's zero-initialised
  /// accumulators), so an Add into it before any Assign starts from 0. (Declared beside the
  /// one-byte enums, in their padding, as copy_mode is: Op stays small for the simulator.)
  bool zero_fill = false;
  std::uint32_t step = 0;        ///< optimizer step index (0 first)
  std::uint32_t micro_step = 0;  ///< micro-step inside the step
  std::uint32_t buffer = kNone;  ///< Alloc/Free
  std::uint32_t layer = kNone;   ///< Forward/Backward/Recompute
  std::uint32_t update = kNone;  ///< OptimizerStep: Schedule::updates index (kNone: not carried)
  std::uint32_t param = kNone;   ///< GradReady/CopyToBucket (model param id)
  std::uint32_t bucket = kNone;  ///< flush sequence number a Collective/CopyToBucket belongs to
  double flops = 0;              ///< compute ops
  Elements elements = 0;         ///< Copy/OptimizerStep/WriteBack/H2D/D2H/CopyToBucket size
  std::uint32_t slot = kNone;    ///< when != kNone, `elements` comes from the rank role
  DType dtype = DType::Float16;  ///< element type of `elements` / of the collective
  /// Copy-like ops and GradReady: whether dst receives the stream (Assign) or accumulates it (Add).
  CopyMode copy_mode = CopyMode::Assign;
  // Collective fields (kind == Collective). The one-byte ones sit here, in the padding after
  // slot/dtype/copy_mode, and root beside comm: Op is 240 bytes instead of 256, 1/16 less memory
  // (and first-touch page faults) for the ~50,000 ops of a 405B stage 3 program.
  CollectiveKind collective = CollectiveKind::AllReduce;
  ReduceOp reduce_op = ReduceOp::None;
  /// Where the op reads and writes (data ops and collectives; empty: not carried). Copy, WriteBack,
  /// HostToDevice, DeviceToHost, CopyToBucket: the src element stream lands in dst, cast to dst's
  /// dtype. GradReady: the param as the layer sees it, its gradient buffer. GradNorm /
  /// GradOverflow: the gradients read, the one scratch element written. Collective: input and
  /// output (dst empty: in place). Alloc (src only, optional: an adopting Alloc): the buffer
  /// starts holding src (a flush's touching gradients, `slot` the buffer's), read from the
  /// buffers the run of Free ops right before it released: storage DeepSpeed keeps (p.grad of
  /// the params touching the rank) that the schedule re-homes into one rank-sized buffer, at no
  /// cost; the ledger sees the Frees, then the Alloc.
  Region src, dst;
  /// Copy-like ops, GradReady and sum-reducing collectives: the destination receives src x scale
  /// (a collective: its output is the reduction x scale; GradReady: the gradient of the loss x
  /// scale, the engine's division by the accumulation steps). DeepSpeed's averaging by 1/world,
  /// the gradient-accumulation division and the predivide factors (its div_ / mul_ calls).
  double scale = 1.0;
  Elements numel = 0;          ///< collective: input elements per rank
  Elements out_numel = 0;      ///< output elements per rank (gathers/scatters; = numel otherwise)
  std::uint32_t comm = 0;      ///< Schedule::comms index: the communicator the collective runs on
  std::uint32_t root = kNone;  ///< reduce destination / broadcast source: index in the communicator
  DepList deps;                ///< op indices that must finish before this op starts
  std::string label;           ///< human-readable ("flush 3: AR(500000000)", "fwd layers.4")
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

/// A role's element count per slot (meta slot_names order), read like a vector (size() slots,
/// [k] the value) but stored sparsely: a stage 1/2 slot is non-zero only on the ranks a flush
/// touches, so Llama-3.1-405B at 1024 ranks has ~4 non-zero values per role among 1271 slots, and
/// its 939 dense rows were 9.5 MB per schedule that the builder, the lowering and the ledger
/// walked whole (the planner builds eight such schedules per sweep).
class SlotValues {
 public:
  struct Entry {
    std::uint32_t slot = 0;
    Elements value = 0;
    friend bool operator==(const Entry&, const Entry&) = default;
  };
  SlotValues() = default;
  /// Dense values, slot 0 first.
  SlotValues(std::initializer_list<Elements> dense);
  /// `count` slots, all 0.
  static SlotValues zeros(std::size_t count);
  std::size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  /// Slot k's value; 0 when k is not stored (or k >= size()).
  Elements operator[](std::size_t k) const;
  /// Sets slot k (k < size(); a value of 0 removes it).
  void set(std::size_t k, Elements v);
  /// Appends slot size() with value v (the reader's dense array, in order).
  void push_back(Elements v);
  /// The non-zero values, ascending slot (schedule JSON "slots": {"count", "nonzero"}).
  const std::vector<Entry>& nonzero() const { return values_; }
  /// One value per slot (the dense "slots" array of earlier schedule files; the digest's form).
  std::vector<Elements> dense() const;
  friend bool operator==(const SlotValues&, const SlotValues&) = default;

 private:
  std::size_t count_ = 0;
  std::vector<Entry> values_;  ///< ascending slot, value != 0
};

/// Ranks that run the program with identical slot values.
struct RankRole {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> ranks;  ///< inclusive [first, last] ranges
  std::uint32_t representative = 0;                            ///< a rank of this role (the first)
  SlotValues slots;                                            ///< element count per slot
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
  /// The model's GEMM shape for the compute efficiency (time_model.h): hidden size and tokens per
  /// micro-batch (micro-batch × sequence length); 0: unknown (a model without a transformer shape).
  std::uint64_t hidden = 0;
  std::uint64_t tokens_per_micro_batch = 0;
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
  std::vector<UpdateCall> updates;  ///< optimizer updates, one per distinct call (O(groups))
  /// Operand piece lists (Region::list), one per distinct list: O(tensors) pieces, never per rank.
  std::vector<std::vector<Piece>> lists;
  std::vector<FlushPlan> flush_plans;   ///< stage 1/2 planned flushes (Region::flush_grads)
  std::vector<GradPass> grad_passes;    ///< stage 1/2 IPG passes with grads_in_partition
  std::vector<DerivedOperand> derived;  ///< derived operands (Region::derived), one per distinct

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

/// Elements [offset, offset + length) of `buffer` (kNone: the region is not carried).
struct OperandSpan {
  std::uint32_t buffer = kNone;
  Elements offset = 0;
  Elements length = 0;
  friend bool operator==(const OperandSpan&, const OperandSpan&) = default;
};
/// What operand `r` (op.src when `is_src`, else op.dst) of `op` is for rank `rank`: the rank's
/// index in comms[op.comm] times rank_stride plus offset, the explicit length or the op's extent
/// for the rank's role; for a list region, buffer kNone and the lists' total length (its pieces
/// are Schedule::lists[r.list]; resolve_pieces gives the rank's spans). Preconditions: the schedule
/// lowers, rank < meta.world.
OperandSpan resolve(const Schedule& s, const Op& op, const Region& r, std::uint32_t rank,
                    bool is_src);
/// The operand as the rank's ordered contiguous spans (buffer kNone: zeros when read, dropped
/// when written): one for a plain region, the list's pieces (each rank-shifted, cut into its runs
/// and cut at its limit, the part past it a zeros span), or the flush gradients touching the rank's
/// partition. A strided piece gives one span per run, so O(world) spans per tensor at most.
std::vector<OperandSpan> resolve_pieces(const Schedule& s, const Op& op, const Region& r,
                                        std::uint32_t rank, bool is_src);
/// Whether tensor t's flat range touches partition `rank` of its param group (stage 0-2 layout).
bool touches_partition(const Schedule& s, std::uint32_t t, std::uint32_t rank);

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
