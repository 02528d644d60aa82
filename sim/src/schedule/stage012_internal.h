// The planning side of the stage 0/1/2 schedule builder (deepspeed_zero.md §2.1, §4): the slots
// and rank roles (stage012_roles.cc) and the IPG bucket plan (plan_ipg_pass, OWNER_SLICES,
// CHUNK_GT in stage012_buckets.cc), values computed before any op is emitted. The pieces that emit
// the program, named after DeepSpeed's classes, are declared in stage012_pieces.h.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "schedule/builders.h"

namespace zerosim::schedule::s12 {

// ---------------------------------------------------------------------------------------------
// Slots and roles

/// What a slot measures for a rank r (each value is piecewise constant in r, see compute_roles).
enum class SlotKind : std::uint8_t {
  Touching,  ///< Σ full numel of `params` touching partition r (in their own groups)
  /// Σ over `params` of the slice partition r owns; with a window only its part at bucket
  /// positions [window, window + window_length) (the params laid end to end in order), with an
  /// owner only on rank `owner` (zero elsewhere)
  OwnedSlice,
  FirstTouch,  ///< grads_in_partition(r) if flush `flush` of pass `pass` is the first to touch r
  Padding,   ///< Σ_g padding of partition r in group g (the zeros appended to averaged_gradients)
  FlatCopy,  ///< S_g if r's averaged-gradient list of group `group` holds more than one tensor
};

struct SlotDef {
  SlotKind kind = SlotKind::Touching;
  std::string name;
  std::vector<std::uint32_t> params;  ///< unless `shared`
  /// A pass's flush list in the table (SlotTable::passes) instead of a copy in `params`.
  const std::vector<std::uint32_t>* shared = nullptr;
  const std::vector<std::uint32_t>& param_list() const {
    return shared != nullptr ? *shared : params;
  }
  std::uint32_t group = 0;
  std::uint32_t pass = 0;
  std::uint32_t flush = 0;
  Elements window = 0, window_length = 0;  ///< OwnedSlice: window_length 0 is the whole bucket
  std::uint32_t owner = kNone;             ///< OwnedSlice: kNone is every rank
};

/// Collects slot definitions while the program is emitted; slots with the same definition are
/// shared (identical micro-steps reuse their slots).
class SlotTable {
 public:
  SlotTable() = default;
  SlotTable(const SlotTable&) = delete;  // slots point into passes_
  SlotTable& operator=(const SlotTable&) = delete;

  std::uint32_t touching(std::string name, std::vector<std::uint32_t> params);
  /// The same over flush `flush` of pass `pass` (add_pass), which the slot refers to: a flush's
  /// slots share its list instead of copying it.
  std::uint32_t flush_touching(std::string name, std::uint32_t pass, std::uint32_t flush);
  std::uint32_t flush_owned_slice(std::string name, std::uint32_t pass, std::uint32_t flush);
  /// The owned slices of one reduction chunk of flush `flush` of pass `pass`: bucket positions
  /// [window, window + length), on rank `owner` only unless kNone.
  std::uint32_t owned_chunk(std::string name, std::uint32_t pass, std::uint32_t flush,
                            Elements window, Elements length, std::uint32_t owner);
  std::uint32_t padding();
  std::uint32_t flat_copy(std::uint32_t group);
  /// Registers a pass's flush lists; returns its id for first_touch.
  std::uint32_t add_pass(std::vector<std::vector<std::uint32_t>> flushes);
  std::uint32_t first_touch(std::string name, std::uint32_t pass, std::uint32_t flush);

  const std::vector<SlotDef>& defs() const { return defs_; }
  /// Caps the slots: once there are more than `max`, full() is true and the builder stops
  /// emitting (compute_roles then refuses the table; see max_slots_before_refusal).
  void cap(std::uint64_t max) { cap_ = max; }
  bool full() const { return defs_.size() > cap_; }
  /// The slots' names (meta slot_names), moved out: the table keeps the definitions only.
  std::vector<std::string> take_names() { return std::move(names_); }
  const std::vector<std::vector<std::vector<std::uint32_t>>>& passes() const { return passes_; }

 private:
  std::uint32_t add(SlotDef d);
  std::vector<SlotDef> defs_;  ///< names moved to names_ (SlotDef::name is empty here)
  std::vector<std::string> names_;
  std::unordered_multimap<std::uint64_t, std::uint32_t> index_;  ///< hash of a definition -> id
  std::vector<std::vector<std::vector<std::uint32_t>>> passes_;
  std::uint64_t cap_ = UINT64_MAX;
};

/// The most slots a table may get before compute_roles is sure to refuse it: the role-table limit
/// over a lower bound of the segments (those the params' spans and the groups' padding cut, which
/// compute_roles' segments include). A table past it is refused whatever slots come after, so
/// the builder stops emitting there instead of building millions of ops first (a 10^15-parameter
/// model at 2^21 ranks: 5.6 GB and 16 s before the refusal). UINT64_MAX when the limit's
/// environment value is malformed (compute_roles reports it).
std::uint64_t max_slots_before_refusal(const ModelDesc& m, const PartitionPlan& plan);

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

/// Where a flattened reduction's result goes back (X4): DeepSpeed copies the temporary back after
/// the collective (§4.4): every rank the whole tensor (the cast back to LP without reduce_scatter,
/// gradient_reduction_w_predivide, stage_1_and_2.py:1285-1286 at edaa722; each gradient of a
/// non-contiguous bucket, allreduce_and_copy :1904-1906), or only the slices the local rank owns
/// (allreduce_and_copy_with_multiple_ranks :1305-1311): `slot` OwnedSlice of the flush, `plan`
/// and `in_tmp` its owned slices where the flush reduces them and in the temporary. A chunk of a
/// flush cut by CHUNK_GT (`window_length` > 0) copies back the owned slices at its bucket
/// positions; a reduce to one owner (`root`) copies back on the root only (allreduce_and_copy
/// :1903-1906, allreduce_bucket's cast back :1870-1872), its slices packed in the temporary.
/// Absent (`copied` false): the collective writes the slices itself (no flatten: in place).
struct CopyBack {
  bool copied = false;
  std::uint32_t slot = kNone;    ///< kNone: every rank copies `total`
  std::uint32_t plan = kNone;    ///< the flush plan whose owned slices go back (slot != kNone)
  std::uint32_t in_tmp = kNone;  ///< the same entries at their offsets in the temporary
  Elements window = 0, window_length = 0;  ///< a chunk's bucket positions (length 0: all)
  std::uint32_t root = kNone;              ///< a reduce's root: only it copies back
};

/// The operands reduce_chunk interns for one reduction (its temporary, the copy-back's source and
/// destination), kept from its first emission: every micro-step and step that repeats the flush
/// emits the same ones, and interning them again (a string-keyed temporary, two hashed derived
/// operands) was most of a repeated flush's cost.
struct ChunkOperands {
  bool ready = false;
  std::uint32_t tmp = kNone;  ///< the flatten temporary (kNone: reduced in place)
  Region back_src{}, back_dst{};
};

/// One reduction of a flush with reduce_scatter: `total` elements gathered from `pieces` owner
/// slices, all-reduced (root kNone) or reduced to rank `root` (its index in the world
/// communicator).
struct PlannedReduction {
  Elements total = 0;
  Elements offset = 0;  ///< bucket offset of the first slice (the input when `pieces` is 1)
  Elements span = 0;    ///< bucket positions from `offset` to the last slice's end
  std::size_t pieces = 0;
  std::uint32_t root = kNone;
  Region src{};  ///< the slices in the bucket: one range (all-reduce) or a list (one owner's)
  /// Set by the first emission and reused by the later ones: where the result goes back (its
  /// slot and flush plans registered once) and the interned operands.
  bool emitted = false;
  CopyBack back{};
  ChunkOperands ops{};
};

/// One backward's (or boundary pass's) bucket history. The last flush is the epilogue's (possibly
/// empty); the others happen mid-pass. Slots and buffers are attached by IpgBuckets::prepare.
struct IpgPass {
  std::vector<PlannedInsert> inserts;
  std::vector<PlannedFlush> flushes;
  std::vector<std::uint32_t> params;  ///< every inserted param, insertion order
  std::vector<std::uint32_t>
      copy_slot;  ///< per flush: Touching (post-flush copies, offload copies)
  /// Per flush: OwnedSlice (offload's D2H into B4, the copy-back after a flattened reduction).
  std::vector<std::uint32_t> owned_slot;
  std::vector<std::uint32_t> first_slot;  ///< per flush: FirstTouch (grads_in_partition allocation)
  std::array<std::vector<std::uint32_t>, 2> gip_buf;       ///< [set][flush]: T3 #1 / #2 pieces
  std::array<std::vector<std::uint32_t>, 2> retained_buf;  ///< [set][flush]: kept autograd grads
  /// Per flush: where each of its gradients is reduced (its FlushPlan's entries).
  std::vector<std::vector<FlushEntry>> entries;
  /// Per flush: its Schedule::flush_plans entry (where each gradient is reduced from).
  std::vector<std::uint32_t> flush_plan;
  /// Its Schedule::grad_passes entry (contiguous gradients without offload: grads_in_partition).
  std::uint32_t grad_pass = kNone;
  std::uint32_t offload = kNone;    ///< its CpuOffload record (kNone: no optimizer offload)
  std::uint32_t all_slot = kNone;   ///< Touching(params)
  std::uint32_t slot_pass = kNone;  ///< its SlotTable pass (the flush lists its slots share)
  /// Per flush: its owner-slice reductions, computed once (O(ranks touched)) and reused by every
  /// micro-step and step that repeats the pass.
  std::vector<std::vector<PlannedReduction>> reductions;
  std::vector<bool> reductions_ready;
  /// [set][flush]: the PartitionGrads operand of the post-flush copy (empty until first used).
  std::array<std::vector<Region>, 2> gip_dst;
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
/// merged. Written into `out` (cleared first).
void owner_slices(const PartitionPlan& plan, const ModelDesc& m,
                  const std::vector<std::uint32_t>& params, std::vector<BucketSlice>& out);
/// CHUNK_GT: [begin, end) index ranges; a chunk closes once its running total exceeds `limit`.
std::vector<std::pair<std::size_t, std::size_t>> chunk_gt(const std::vector<Elements>& sizes,
                                                          Elements limit);

}  // namespace zerosim::schedule::s12
