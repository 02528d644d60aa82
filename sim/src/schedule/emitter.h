// The emitter every schedule builder appends through: one spec per op kind, built in one expression
// and appended once. The spec types are the field contract of each kind (which Op fields a kind
// carries); an op is never patched after it is appended, and no builder constructs an Op itself
// (ctest layering.no_raw_ops_in_builders). A Buffer is complete when it is added (persistent
// included).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "zerosim/schedule.h"

namespace zerosim::schedule {

/// FNV-1a style mixing of 64-bit words, for the builders' interning indexes (the emitter's lists,
/// temporaries and flush plans, the stage 0-2 slot table and roles); collisions are resolved by ==.
inline constexpr std::uint64_t kHashSeed = 1469598103934665603ULL;
inline std::uint64_t hash_mix(std::uint64_t h, std::uint64_t v) {
  return (h ^ v) * 1099511628211ULL;
}

/// Elements [offset, offset + length) of `buffer` for every rank (length 0: the op's extent); an
/// empty region when `buffer` is kNone.
inline Region region(std::uint32_t buffer, Elements offset = 0, Elements length = 0) {
  return {buffer, offset, 0, length};
}
/// Rank i's `length` elements at offset + i·length (its partition of a rank-major buffer).
inline Region rank_slice(std::uint32_t buffer, Elements length, Elements offset = 0) {
  return {buffer, offset, length, length};
}

/// The operand Schedule::lists[list] (kNone: an empty region).
inline Region list_region(std::uint32_t list) { return {kNone, 0, 0, 0, list}; }

/// A Collective over communicator `comm` (Schedule::comms; 0 is the data-parallel world).
struct CollectiveSpec {
  CollectiveKind kind = CollectiveKind::AllReduce;
  DType dtype = DType::Float16;
  Elements numel = 0;      ///< input elements per rank
  Elements out_numel = 0;  ///< output elements per rank (= numel unless gather/scatter)
  ReduceOp op = ReduceOp::None;
  std::uint32_t root = kNone;   ///< reduce root / broadcast source: index in the communicator
  std::uint32_t comm = 0;       ///< Schedule::comms index
  std::uint32_t flush = kNone;  ///< flush sequence number (Op::bucket)
  Region src{}, dst{};          ///< input and output (dst empty: in place)
  double scale = 1.0;           ///< the output is the sum x scale (averaging; sum reductions only)
  Stream stream = Stream::Compute;
  DepList deps{};
  std::string label{};
};

/// Copy, CopyToBucket, WriteBack, HostToDevice, DeviceToHost.
struct CopySpec {
  OpKind kind = OpKind::Copy;
  Stream stream = Stream::Compute;
  DType dtype = DType::Float16;
  Elements elements = 0;
  std::uint32_t slot = kNone;  ///< when != kNone the element count is the rank role's slot value
  Region src{}, dst{};         ///< read, written (empty: not carried)
  CopyMode mode = CopyMode::Assign;  ///< Add: dst accumulates the stream
  double scale = 1.0;                ///< dst receives src x scale
  std::uint32_t param = kNone;       ///< CopyToBucket: the param whose gradient is copied
  std::uint32_t flush = kNone;       ///< the flush the copy belongs to (Op::bucket)
  /// Issued after the latest op so far on this stream (a non_blocking copy of data that stream
  /// produced): adds that op to deps.
  std::optional<Stream> after{};
  DepList deps{};
  std::string label{};
};

/// GradNorm (the local squared L2 norm of `src` into the one-element scratch `dst`) or
/// GradOverflow (the inf/nan flag of `src` into the one-element uint8 flag `dst`).
struct GradStatSpec {
  OpKind kind = OpKind::GradNorm;
  Stream stream = Stream::Compute;
  DType dtype = DType::Float16;      ///< the gradients' dtype
  Elements elements = 0;             ///< gradient elements read
  Region src{}, dst{};               ///< the gradients; one scratch element
  CopyMode mode = CopyMode::Assign;  ///< Add: added (norm) or or-ed (flag) into dst
  std::string label{};
};

/// OptimizerStep of `elements` master elements.
struct UpdateSpec {
  Stream stream = Stream::Compute;
  DType dtype = DType::Float32;
  Elements elements = 0;
  UpdateCall call{};  ///< its operands (interned into Schedule::updates)
  DepList deps{};
  std::string label{};
};

/// GradReady: autograd produced `param`'s gradient.
struct GradSpec {
  std::uint32_t param = kNone;
  Elements elements = 0;
  DType dtype = DType::Float16;
  Region src{}, dst{};               ///< the param as the layer sees it, its gradient buffer
  CopyMode mode = CopyMode::Assign;  ///< Add: autograd accumulates into a live gradient
  double scale = 1.0;                ///< the gradient of the loss x scale (1 / accumulation steps)
  std::string label{};
};

/// Forward, Backward, Recompute of `layer`.
struct ComputeSpec {
  OpKind kind = OpKind::Forward;
  std::uint32_t layer = kNone;
  double flops = 0;
  std::string label{};
};

/// "AR", "RD", "BC", "AG", "RS".
std::string short_name(CollectiveKind k);
/// The stage 0/1/2 collective label: "<what>: AR(numel)", "<what>: RD(root,numel)",
/// "<what>: AG(out,in)".
std::string collective_label(const std::string& what, CollectiveKind k, Elements numel,
                             Elements out_numel, std::uint32_t root = kNone);

/// Appends buffers and ops, keeping the phase/step/micro-step context so builders stay short.
class Emitter {
 public:
  /// Starts the schedule's communicators with the data-parallel world of `world` ranks.
  Emitter(Schedule& s, std::uint32_t world);

  std::uint32_t buffer(Buffer b);
  /// Executor-owned scalar scratch (Buffer::executor_owned): no Alloc/Free, outside the ledger.
  std::uint32_t scratch(const std::string& name, Elements numel, DType dt);
  /// Interns an operand list (equal pieces, equal index); kNone for an empty list.
  std::uint32_t list(std::vector<Piece> pieces);
  /// Interns a planned flush (equal entries, equal index); returns its Schedule::flush_plans index.
  std::uint32_t flush_plan(FlushPlan f);
  /// Appends a stage 1/2 IPG pass with grads_in_partition; returns its Schedule::grad_passes index.
  std::uint32_t grad_pass(GradPass g);
  /// Interns a derived operand (equal arguments, equal index); returns its Region.
  Region derived(DerivedOperand d);
  /// Interns a communicator (equal groups, equal index); returns its Schedule::comms index.
  std::uint32_t comm(CommGroup g);
  /// A temporary buffer named "<name> (<numel> x <dtype>)", one per distinct name/size/dtype.
  std::uint32_t temp(std::string_view name, Elements numel, DType dt,
                     BufferCategory c = BufferCategory::Temp, std::string_view spec_id = "T5");

  /// `zero_fill`: the buffer starts as zeros (torch.zeros), Op::zero_fill.
  std::uint32_t alloc(std::uint32_t buf, Stream st = Stream::Compute, std::uint32_t flush = kNone,
                      bool zero_fill = false);
  /// An adopting Alloc (Op::src): `buf` starts holding flush plan `flush_plan`'s touching
  /// gradients, released by the Free ops emitted right before; sized as the buffer (its slot).
  std::uint32_t adopt(std::uint32_t buf, std::uint32_t flush_plan, Stream st = Stream::Compute);
  std::uint32_t free(std::uint32_t buf, Stream st = Stream::Compute, std::uint32_t flush = kNone);
  std::uint32_t marker(std::string label, Stream st = Stream::Compute, DepList deps = {});
  /// A full device synchronize.
  std::uint32_t sync(std::string label);
  /// Makes `waiter` wait for everything enqueued so far on `on` (torch's wait_stream): a Marker on
  /// `waiter` depending on the latest op of `on`. Emits nothing when `on` has no op yet.
  std::uint32_t wait_stream(Stream waiter, Stream on);
  std::uint32_t compute(ComputeSpec c);
  std::uint32_t grad_ready(GradSpec g);
  std::uint32_t copy(CopySpec c);
  std::uint32_t collective(CollectiveSpec c);
  std::uint32_t optimizer_step(UpdateSpec u);
  std::uint32_t grad_stat(GradStatSpec g);

  /// Whether ops carry labels (ScheduleInput::labels); off, every op's label is empty.
  void set_labels(bool on) { labels_ = on; }
  bool labels() const { return labels_; }
  /// An op label: `parts` (strings, string views, literals, integers in decimal) concatenated, or
  /// "" when labels are off, without building it: the planner never shows a label, and making
  /// them (a few hundred thousand strings for the Llama-3.1-405B sweep) was a fifth of its work.
  template <class... Parts>
  std::string label(const Parts&... parts) const {
    std::string out;
    if (labels_) (append_part(out, parts), ...);
    return out;
  }

  /// Index of the latest op appended on stream `st` through this emitter, or kNone.
  std::uint32_t last_on(Stream st) const {
    const auto lane = static_cast<std::size_t>(st);
    return lane < kStreamCount ? last_on_[lane] : kNone;
  }
  void set_phase(Phase p) { phase_ = p; }
  void set_step(std::uint32_t step, std::uint32_t micro) {
    step_ = step;
    micro_step_ = micro;
  }
  Phase phase() const { return phase_; }
  const Schedule& schedule() const { return s_; }
  /// Reserves the program's ops for a model of `tensors` params (a capacity hint: the meta's
  /// stage, steps and micro-steps must be filled).
  void reserve_ops(std::size_t tensors);

 private:
  /// A new op at the end of the program with the current phase, step and micro-step; finish()
  /// completes it and returns its index.
  Op& start(OpKind kind, Stream st = Stream::Compute);
  std::uint32_t finish(Op& o);
  template <class T>
  static void append_part(std::string& out, const T& part) {
    if constexpr (std::is_integral_v<T>)
      out += std::to_string(part);
    else
      out += std::string_view(part);
  }

  Schedule& s_;
  bool labels_ = true;
  std::array<std::uint32_t, kStreamCount> last_on_ = [] {
    std::array<std::uint32_t, kStreamCount> a{};
    a.fill(kNone);
    return a;
  }();
  Phase phase_ = Phase::Init;
  std::uint32_t step_ = 0;
  std::uint32_t micro_step_ = 0;
  // Temporaries by hash of (name, numel, dtype), confirmed against temp_keys_: the stage 1/2
  // reduction chunks look one up per chunk (~15,000 per row), and an ordered map of names compared
  // strings ~5 times per lookup.
  struct TempKey {
    std::string name;
    Elements numel = 0;
    DType dtype = DType::Float16;
    std::uint32_t buffer = kNone;
  };
  std::vector<TempKey> temp_keys_;
  std::unordered_multimap<std::uint64_t, std::uint32_t> temp_index_;  ///< -> temp_keys_ index
  // Interning indexes by hash (equal values confirmed with ==): a linear search of the interned
  // derived operands and flush plans was quadratic in the flushes of a pass (~600 for
  // Llama-3.1-405B at stage 1/2), a tenth of `zerosim plan`'s stage 1/2 builds. Lists too: an
  // ordered map of piece vectors compared them lexicographically at every level and kept a second
  // copy of each list as its key (a stage 3 row interns ~5,000 lists).
  std::unordered_multimap<std::uint64_t, std::uint32_t> list_index_;
  std::unordered_multimap<std::uint64_t, std::uint32_t> derived_index_;
  std::unordered_multimap<std::uint64_t, std::uint32_t> flush_plan_index_;
};

}  // namespace zerosim::schedule
