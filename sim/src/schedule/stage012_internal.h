// Private pieces of the stage 0/1/2 schedule builder (deepspeed_zero.md §2.1, §3, §4, §5, §6),
// split over stage012*.cc:
//   stage012_roles.cc    SlotTable (rank-dependent element counts) and the rank roles it induces;
//   stage012_buckets.cc  the IPG bucket: insert/flush planning, OWNER_SLICES, CHUNK_GT, flush ops;
//   stage012_step.cc     step() of DeepSpeedZeroOptimizer (overflow, norms, update, all-gather);
//   stage012_engine.cc   stage 0 (engine all-reduce) and the BF16_Optimizer reroute;
//   stage012_ctx.cc      the builder context (resolved configuration, emit helpers);
//   stage012.cc          init, the micro-step loop and build_stage012 itself.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "schedule/builders.h"

namespace zerosim::schedule::s12 {

// ---------------------------------------------------------------------------------------------
// Slots and roles

/// What a slot measures for a rank r (each value is piecewise constant in r, see compute_roles).
enum class SlotKind : std::uint8_t {
  Touching,    ///< Σ full numel of `params` touching partition r (in their own groups)
  OwnedSlice,  ///< Σ over `params` of the slice partition r owns
  FirstTouch,  ///< grads_in_partition(r) if flush `flush` of pass `pass` is the first to touch r
  Padding,   ///< Σ_g padding of partition r in group g (the zeros appended to averaged_gradients)
  FlatCopy,  ///< S_g if r's averaged-gradient list of group `group` holds more than one tensor
};

struct SlotDef {
  SlotKind kind = SlotKind::Touching;
  std::string name;
  std::vector<std::uint32_t> params;
  std::uint32_t group = 0;
  std::uint32_t pass = 0;
  std::uint32_t flush = 0;
};

/// Collects slot definitions while the program is emitted; slots with the same definition are
/// shared (identical micro-steps reuse their slots).
class SlotTable {
 public:
  std::uint32_t touching(std::string name, std::vector<std::uint32_t> params);
  std::uint32_t owned_slice(std::string name, std::vector<std::uint32_t> params);
  std::uint32_t padding();
  std::uint32_t flat_copy(std::uint32_t group);
  /// Registers a pass's flush lists; returns its id for first_touch.
  std::uint32_t add_pass(std::vector<std::vector<std::uint32_t>> flushes);
  std::uint32_t first_touch(std::string name, std::uint32_t pass, std::uint32_t flush);

  const std::vector<SlotDef>& defs() const { return defs_; }
  const std::vector<std::vector<std::vector<std::uint32_t>>>& passes() const { return passes_; }

 private:
  std::uint32_t add(SlotDef d);
  std::vector<SlotDef> defs_;
  std::map<
      std::tuple<SlotKind, std::vector<std::uint32_t>, std::uint32_t, std::uint32_t, std::uint32_t>,
      std::uint32_t>
      index_;
  std::vector<std::vector<std::vector<std::uint32_t>>> passes_;
};

/// Groups ranks by their slot values: one role per distinct value vector, roles in order of their
/// first rank. Cost O(T log T + segments x slots) with segments <= 4T + 2G + 1, independent of W.
/// Refuses (adds an error, returns an empty list) when segments x slots exceeds the role-table
/// limit (work_limit.h) before the table is allocated.
std::vector<RankRole> compute_roles(const ModelDesc& m, const PartitionPlan& plan,
                                    const SlotTable& slots, Diagnostics& diags);

// ---------------------------------------------------------------------------------------------
// The IPG bucket (§4.3, §4.4)

struct PlannedFlush {
  std::vector<std::uint32_t> params;  ///< insertion order
  Elements elements = 0;              ///< E
  bool extra_large = false;           ///< holds one param with n > R, reduced from its own storage
  std::uint32_t buffer_index = 0;     ///< IPG buffer the bucket was filled in
};

struct PlannedInsert {
  std::uint32_t param = 0;
  Elements offset = 0;  ///< bucket elements before this insert (where a copied grad lands)
  bool flush_before =
      false;                ///< the bucket is flushed (flush index `flush - 1`) before this insert
  std::uint32_t flush = 0;  ///< index of the flush that reduces this param
  std::uint32_t buffer_index = 0;
  bool copied = false;  ///< copied into the IPG buffer (contiguous and n <= R)
};

/// One reduction of a flush with reduce_scatter: `total` elements gathered from `pieces` owner
/// slices, all-reduced (root kNone) or reduced to rank `root` (its index in the world
/// communicator).
struct PlannedReduction {
  Elements total = 0;
  Elements offset = 0;  ///< bucket offset of the first slice (the input when `pieces` is 1)
  std::size_t pieces = 0;
  std::uint32_t root = kNone;
  Region src{};  ///< the slices in the bucket: one range (all-reduce) or a list (one owner's)
};

/// One backward's (or boundary pass's) bucket history. The last flush is the epilogue's (possibly
/// empty); the others happen mid-pass. Slots and buffers are attached by the builder.
struct IpgPass {
  std::vector<PlannedInsert> inserts;
  std::vector<PlannedFlush> flushes;
  std::vector<std::uint32_t> params;  ///< every inserted param, insertion order
  std::vector<std::uint32_t>
      copy_slot;  ///< per flush: Touching (post-flush copies, offload copies)
  std::vector<std::uint32_t> owned_slot;  ///< per flush: OwnedSlice (offload D2H into B4)
  std::vector<std::uint32_t> first_slot;  ///< per flush: FirstTouch (grads_in_partition allocation)
  std::array<std::vector<std::uint32_t>, 2> gip_buf;       ///< [set][flush]: T3 #1 / #2 pieces
  std::array<std::vector<std::uint32_t>, 2> retained_buf;  ///< [set][flush]: kept autograd grads
  /// Per param (offload, GAS > 1): its CPU accumulator accumulated_grads_in_cpu[param_id] (B8)
  /// and its Touching({p}) slot (the param's numel on the ranks it touches, else 0).
  std::vector<std::uint32_t> b8_buf, b8_slot;
  /// Per flush: where each of its gradients is reduced (its FlushPlan's entries).
  std::vector<std::vector<FlushEntry>> entries;
  /// Per flush: its Schedule::flush_plans entry (where each gradient is reduced from).
  std::vector<std::uint32_t> flush_plan;
  /// Its Schedule::grad_passes entry (contiguous gradients without offload: grads_in_partition).
  std::uint32_t grad_pass = kNone;
  std::vector<bool> b8_live;       ///< per param: B8 allocated (once, then persistent)
  std::uint32_t all_slot = kNone;  ///< Touching(params)
  /// Per flush: its owner-slice reductions, computed once (O(ranks touched)) and reused by every
  /// micro-step and step that repeats the pass.
  std::vector<std::vector<PlannedReduction>> reductions;
  std::vector<bool> reductions_ready;
};

/// Plans the bucket for params inserted in `order` (zero-size params are ignored, §4.3): strict
/// `E + n > R` flush with no non-empty guard, buffer-index swap after mid-pass flushes when `swap`.
IpgPass plan_ipg_pass(const ModelDesc& m, const std::vector<std::uint32_t>& order, Elements r,
                      bool contiguous, bool swap);

/// A slice of a bucket owned by one rank: [offset, offset + length) of the bucket.
struct BucketSlice {
  std::uint32_t owner = 0;
  Elements offset = 0;
  Elements length = 0;
};
/// OWNER_SLICES: params in insertion order, owners in offset order, adjacent same-owner slices
/// merged.
std::vector<BucketSlice> owner_slices(const PartitionPlan& plan, const ModelDesc& m,
                                      const std::vector<std::uint32_t>& params);
/// CHUNK_GT: [begin, end) index ranges; a chunk closes once its running total exceeds `limit`.
std::vector<std::pair<std::size_t, std::size_t>> chunk_gt(const std::vector<Elements>& sizes,
                                                          Elements limit);

// ---------------------------------------------------------------------------------------------
// Builder context

struct Ctx {
  Ctx(const ScheduleInput& input, Emitter& emitter);

  const ScheduleInput& in;
  const ModelDesc& m;
  const PartitionPlan& plan;
  const DsConfig& ds;
  Emitter& e;
  SlotTable slots;

  // Resolved configuration.
  OptimizerPath path = OptimizerPath::ZeroStage1And2;
  int stage = 0;
  std::uint32_t world = 1;
  std::uint32_t gas = 1;
  Elements r = 0;  ///< reduce_bucket_size
  bool overlap = false, contiguous = true, reduce_scatter = true, multi_rank = true;
  bool offload = false, v0144 = false, managed = true, ga_attr = false, hooks = false;
  DType lp = DType::Float16, mw = DType::Float32, ga = DType::Float16, cd = DType::Float16;

  // Buffers.
  std::vector<std::uint32_t> grad_buf;        ///< per param: T1 autograd grad (kNone: none)
  std::vector<std::uint32_t> grad_accum_buf;  ///< per param: grad_accum (GA attribute mode)
  std::vector<std::uint32_t> activation;      ///< per layer (kNone: none)
  std::vector<std::uint32_t> ready_layer;
  std::vector<std::uint32_t> ipg;                 ///< T2 buffers (1, or 2 with overlap)
  std::vector<std::uint32_t> b1, b2, b3, b4, b5;  ///< per group
  std::uint32_t b6 = kNone, b7 = kNone;
  /// Per param: where its 16-bit values live (the module's storage, then its slice of B1).
  std::vector<Region> lp_home;
  std::vector<std::uint32_t> fp32_grads;  ///< BF16_Optimizer: per group, the fp32 gradient buffer
  std::uint32_t norms = kNone;            ///< step(): the per-group squared-norm scratch (fp32 x G)
  std::uint32_t overflow_flag = kNone;    ///< step(): the overflow flag scratch (uint8 x 1)

  // Emission state.
  std::uint32_t flush_seq = 0;  ///< next flush number (Op::bucket)
  bool ipg_live = false;
  bool ready_for_gradients = false;  ///< S12 flag: IPG set up by the first hook of a backward
  std::vector<bool> grad_live;       ///< per param: T1 allocated
  std::vector<std::uint32_t>
      deferred_grad_frees;  ///< non-contiguous + overlap: freed at next flush
  /// Retained allocations that follow those frees: (kept buffer, the flush plan it adopts).
  std::vector<std::pair<std::uint32_t, std::uint32_t>> deferred_retained;
  std::vector<std::uint32_t> step_frees;  ///< buffers dropped with the last group's averaged list
  std::vector<std::uint32_t>
      epilogue_frees;                 ///< second grads_in_partition pieces (stage 2, GAS > 1)
  std::vector<bool> grad_accum_live;  ///< per param: grad_accum allocated (GA attribute mode)
  std::vector<std::uint32_t> t6, t7;  ///< per group: step temporaries (created lazily)
  /// The grad pass whose boundary epilogue built averaged_gradients (kNone: not carried).
  std::uint32_t averaged_pass = kNone;
  std::uint32_t padding_buf = kNone;  ///< T4 zeros appended to averaged_gradients (lazily)
  std::uint32_t kept_stage1_buf =
      kNone;  ///< stage 1, non-contiguous: grads kept after the epilogue
  std::uint32_t kept_stage1_plan = kNone;  ///< its flush plan: every flush's entries, in order

  /// An offload copy (HostToDevice on the H2D stream, DeviceToHost on D2H) issued non_blocking
  /// after the work enqueued so far on the stream that produced the data (Reduce with overlap_comm,
  /// else Compute); the caller completes the spec (elements or slot, buffer, label).
  CopySpec transfer(OpKind kind, DType dt) const;
  /// What the data-parallel reductions multiply their sum by: 1/W with gradient_allreduce_op
  /// "mean" (DeepSpeed's div_ by the world size before or after the collective), 1 with "sum".
  double average = 1.0;
  /// What autograd's gradient is scaled by: the engine divides the loss by the accumulation
  /// steps (engine _scale_loss_by_gas) when there are several.
  double loss_scale_gas = 1.0;
  /// `zero_fill`: a zero gradient for a param autograd gave none (torch.zeros).
  void alloc_grad(std::uint32_t p, bool zero_fill = false);
  void free_grad(std::uint32_t p, Stream st = Stream::Compute);
  const std::string& pname(std::uint32_t p) const { return m.params[p].name; }
};

// stage012_buckets.cc
/// Emits FLUSH of flush `f` of `pass` (collectives, post-flush copies); `set` is 1 for the second
/// grads_in_partition of later stage-2 micro-steps. `boundary`/`micro` drive the offload copies.
void emit_flush(Ctx& c, IpgPass& pass, std::uint32_t f, std::uint32_t set, bool boundary,
                std::uint32_t micro);
/// Applies the deferred drops of a non-contiguous overlapped flush (next flush or epilogue).
void drop_deferred(Ctx& c, Stream st);
/// Emits the insert of `pass.inserts[i]` (the flush before it, the copy into the bucket).
void emit_insert(Ctx& c, IpgPass& pass, std::size_t i, std::uint32_t set, bool boundary,
                 std::uint32_t micro);
/// Attaches slots and buffers to a freshly planned pass.
void prepare_pass(Ctx& c, IpgPass& pass, const std::string& name);

// stage012_step.cc
/// step() of DeepSpeedZeroOptimizer for optimizer step `step` (§5), then zero_grad.
void emit_zero_step(Ctx& c, std::uint32_t step);
/// ALL_GATHER_DP_GROUPS: one all_gather_into_tensor(out Pal_g, in S_g) per group with W > 1.
void emit_param_all_gather(Ctx& c);

// stage012_engine.cc
/// Stage 0 (plain / FP16_Optimizer, §3.5) and BF16_Optimizer (§3.4): the whole program.
void emit_engine_allreduce_program(Ctx& c);
/// Module params as separate storage and the engine's _broadcast_model (§7.1 item 1).
/// `trainable_persistent`: the trainable params are never flattened (plain stage 0).
std::uint32_t emit_module_params(Ctx& c, bool trainable_persistent);
/// The flatten of group `fg`'s module params into its flat 16-bit buffer `flat` (X1: DeepSpeed's
/// flatten of bit16_groups, stage_1_and_2.py; FP16/BF16_Optimizer's flat groups), zero padding
/// when `aligned`; the params' homes move into `flat`. Emitted before the module's storage is
/// freed.
void flatten_module_params(Ctx& c, const FlatGroup& fg, std::uint32_t flat, bool aligned,
                           const std::string& name);

}  // namespace zerosim::schedule::s12
