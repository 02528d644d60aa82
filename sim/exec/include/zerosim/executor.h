// The executor: one backend-neutral walk of a rank's view of the schedule (schedule_graph.h) that
// drives a small per-rank Device — the host backend (host_backend.h: CPU threads) and the CUDA
// backend implement it (style.md §5 "Shapes for the executor"; ASTRA-sim's AstraNetworkAPI).
//
// Semantics are CUDA's: every Device call is issued by the rank's host thread in program order and
// may return before its work is done; work on one stream runs in issue order; `record(s, op)` marks
// the point on stream s where op finished and `wait(s, dep)` makes stream s wait for it
// (cudaEventRecord / cudaStreamWaitEvent); `synchronize()` returns once every stream has drained
// (cudaDeviceSynchronize). The walk turns the graph's rules into those calls:
//   * lanes: an op is issued on its stream, so stream order is program order;
//   * deps on another stream: wait(op's stream, dep) before the op (the dep was recorded);
//   * Sync: synchronize() on the host thread, so nothing later is issued before it returns;
//   * communicator order: collectives are issued in program order on every rank, and a Device runs
//     the collectives of one communicator in issue order (NCCL does; the host backend too);
//   * memory: Alloc/Free go to the rank's TrackingAllocator in issue order (what the CUDA caching
//     allocator sees) and then to the Device, which backs them with memory or not.
// Errors are results that name the rank, the op index and its label, never an abort.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zerosim/diagnostic.h"
#include "zerosim/ir_types.h"
#include "zerosim/schedule.h"
#include "zerosim/schedule_graph.h"
#include "zerosim/units.h"

namespace zerosim::exec {

/// nullopt: the call succeeded (or was queued); otherwise what went wrong.
using Status = std::optional<Diagnostic>;

/// One piece of an operand as a Device reads or writes it: elements [offset, offset + length) of
/// `buffer`, stored as `dtype` (the buffer's). buffer kNone: zeros when read, dropped when written.
struct OperandPiece {
  std::uint32_t buffer = kNone;
  Elements offset = 0;
  Elements length = 0;
  DType dtype = DType::Float16;
};
/// An operand: its pieces in order (one for a plain region; empty: the op has none).
using Operand = std::vector<OperandPiece>;

/// An optimizer update's operands for this rank (UpdateCall, resolved).
struct UpdateOperands {
  Operand master, grad, exp_avg, exp_avg_sq, lp_out, norms, overflow;
};

/// One collective as the Device runs it: the schedule's counts, for this rank.
struct CollectiveCall {
  std::uint32_t op = 0;
  CollectiveKind kind = CollectiveKind::AllReduce;
  Elements numel = 0;      ///< input elements per rank
  Elements out_numel = 0;  ///< output elements per rank
  DType dtype = DType::Float16;
  ReduceOp reduce_op = ReduceOp::None;
  std::int32_t root = -1;          ///< reduce destination / broadcast source (index in the group)
  std::uint32_t communicator = 0;  ///< communicator_of(op): Schedule::comms index
  std::uint32_t group_size = 1;
  std::uint32_t rank_in_group = 0;  ///< this rank's index in its group
  std::uint32_t group_first = 0;    ///< the rank at index 0 of this rank's group
  std::uint32_t group_stride = 1;   ///< ranks between consecutive members
  std::uint32_t step = 0;
  /// Data mode (RankView::operands): this rank's input and output (dst empty: in place), and the
  /// factor the output is multiplied by after the reduction (Op::scale).
  Operand src, dst;
  double scale = 1.0;
};

/// A data op that is not a collective (Copy, CopyToBucket, WriteBack, H2D, D2H, OptimizerStep), a
/// compute op (Forward, Backward, Recompute) or a GradReady (where the stand-in backward writes a
/// gradient), with this rank's element count. In data mode an adopting Alloc (Op::src) comes as
/// kind Alloc right after its allocate: copy src into dst (the whole buffer), src's buffers still
/// live on the device (their release follows); not a span, no cost in the prediction.
struct WorkCall {
  std::uint32_t op = 0;
  OpKind kind = OpKind::Copy;
  Elements elements = 0;
  DType dtype = DType::Float16;
  double flops = 0;
  std::uint32_t layer = kNone;
  std::uint32_t param = kNone;
  std::uint32_t buffer = kNone;
  std::uint32_t step = 0;
  std::uint32_t micro_step = 0;
  std::uint32_t update = kNone;  ///< OptimizerStep: Schedule::updates index
  /// Data mode (RankView::operands): where the op reads and writes, resolved for this rank; for
  /// GradReady dst is the gradient the stand-in backward writes, for OptimizerStep `operands`.
  Operand src, dst;
  bool accumulate = false;  ///< dst += src x scale (Op::copy_mode Add) instead of dst = src x scale
  double scale = 1.0;       ///< Op::scale
  UpdateOperands operands;
};

/// Memory one rank's tracking allocator saw: current and peak bytes per pool and category.
struct MemoryCounters {
  Bytes device_current = 0;
  Bytes device_peak = 0;
  CategoryBytes device_peak_by_category{};  ///< breakdown at the device peak (sums to it)
  Bytes host_current = 0;                   ///< Host and Pinned pools together
  Bytes host_peak = 0;
  std::uint64_t device_buffers = 0;  ///< live device allocations now
  std::uint64_t host_buffers = 0;    ///< live host + pinned allocations now
};

/// One rank's device. Calls are asynchronous with CUDA semantics (see the file comment).
class Device {
 public:
  virtual ~Device() = default;
  /// `zero_fill`: the buffer starts as zeros (Op::zero_fill); otherwise its contents are undefined
  /// until written, except that the model's construction (`init_weights`, below) holds its
  /// initial weights.
  virtual Status allocate(std::uint32_t buffer, Bytes bytes, MemoryPool pool,
                          BufferCategory category, bool zero_fill, bool init_weights) = 0;
  // (init_weights: the Alloc is model_weights_alloc(schedule).)
  virtual Status release(std::uint32_t buffer) = 0;
  virtual Status work(Stream stream, const WorkCall& call) = 0;
  virtual Status collective(Stream stream, const CollectiveCall& call) = 0;
  virtual Status record(Stream stream, std::uint32_t op) = 0;
  virtual Status wait(Stream stream, std::uint32_t op) = 0;
  virtual Status synchronize() = 0;
};

/// Current and peak bytes per pool and category of one rank, fed every Alloc/Free in issue order.
/// Over `limit` device bytes (0: no limit) an allocation fails with "does not fit".
class TrackingAllocator {
 public:
  explicit TrackingAllocator(Bytes limit = 0) : limit_(limit) {}
  /// Errors: unknown pool state (double allocation), over the limit.
  Status allocate(std::uint32_t buffer, Bytes bytes, MemoryPool pool, BufferCategory category);
  Status release(std::uint32_t buffer);
  const MemoryCounters& counters() const { return c_; }
  /// Device bytes live per category now.
  const CategoryBytes& device_by_category() const { return live_; }

 private:
  struct Live {
    Bytes bytes = 0;
    MemoryPool pool = MemoryPool::Device;
    BufferCategory category = BufferCategory::Temp;
    bool live = false;
  };
  Bytes limit_;
  std::vector<Live> buffers_;
  CategoryBytes live_{};
  MemoryCounters c_;
};

/// One rank's view of the schedule.
struct RankView {
  const Schedule* schedule = nullptr;
  const ScheduleGraph* graph = nullptr;
  std::uint32_t rank = 0;
  std::uint32_t role = 0;
  /// Resolve every op's operands into the calls (data mode). Count-only leaves them empty and
  /// skips the O(operands) work.
  bool operands = false;
};

struct RankRun {
  std::uint32_t rank = 0;
  MemoryCounters memory;
  std::uint64_t ops_issued = 0;
  std::uint64_t collectives = 0;
};

/// Walks the rank's ops in program order and issues them to `device` (see the file comment), then
/// synchronizes. `allocator` sees every Alloc/Free first. Errors name the rank, the op and its
/// label; the walk stops at the first one (the device may still hold queued work: the caller
/// aborts it).
Result<RankRun> execute_rank(const RankView& view, Device& device, TrackingAllocator& allocator);

/// The op whose Alloc stands in for the model's construction: the program's first Alloc of a
/// Param16 buffer in the init phase (the module's parameters, before DeepSpeed wraps them), which
/// holds the model's initial weights in data mode. kNone: no such op.
std::uint32_t model_weights_alloc(const Schedule& s);

/// "rank 3, op 17 (\"flush 2: AR(8)\")": how errors name where they happened.
std::string where(const Schedule& s, std::uint32_t rank, std::uint32_t op);

}  // namespace zerosim::exec
