// The host backend's data mode: one rank's buffers as real allocations (fp16/bf16 stored as 16
// bits with numerics.h's round-to-nearest-even conversions, fp32 as float), the data ops executed
// on their resolved operands (copy/cast with Op::scale and Op::copy_mode), collectives run on real
// data through HostRing on the op's communicator, the stand-ins for the model (the init-phase
// Param16 Alloc holds initial weights; a GradReady writes synthetic_grad into the gradient) and the
// optimizer step (AdamW with DeepSpeed's dynamic loss scaling and clipping by the global norm).
// Private to sim/exec; the rank's CountingDevice (host_backend.cc) forwards to it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "data_kernels.h"
#include "host_ring.h"
#include "host_storage.h"
#include "training_math.h"
#include "zerosim/executor.h"
#include "zerosim/host_backend.h"
#include "zerosim/schedule.h"

namespace zerosim::exec {

/// One HostRing per communicator group, shared by the rank threads.
class RingRegistry {
 public:
  explicit RingRegistry(std::chrono::milliseconds timeout) : timeout_(timeout) {}
  HostRing& ring(std::uint32_t communicator, std::uint32_t group_first, std::uint32_t size);
  void abort_all();

 private:
  std::chrono::milliseconds timeout_;
  std::mutex m_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::unique_ptr<HostRing>> rings_;
};

/// The initial weight of element `index` of an init-phase Param16 buffer on `rank` (in
/// [-1/4, 1/4), before rounding to the buffer's dtype): different on every rank, so only the
/// init broadcasts make them agree.
float initial_weight(std::uint64_t seed, std::uint32_t rank, std::uint32_t buffer, Elements index);

class DataPath {
 public:
  /// `page_cache`: the bytes of released blocks kept for reuse (data_check.h page_cache_limit).
  DataPath(const Schedule& s, const DataOptions& o, std::uint32_t rank, RingRegistry& rings,
           std::size_t page_cache = std::size_t{1} << 30);
  Status allocate(std::uint32_t buffer, Bytes bytes, bool zero_fill, bool init_weights);
  Status release(std::uint32_t buffer);
  Status work(const WorkCall& c);
  Status collective(const CollectiveCall& c);
  /// Ends the last step (its loss-scale update). Idempotent.
  void finish();

  double loss_scale() const { return scaler_.scale(); }
  std::uint64_t skipped_steps() const { return skipped_; }
  /// A live buffer's storage (tests; a backend's readout). Precondition: the buffer is live.
  unsigned char* bytes(std::uint32_t buffer) { return store_[buffer].data.data(); }
  /// Bytes of released blocks the page cache holds now (at most the constructor's page_cache).
  std::size_t cached_bytes() const { return cache_.held(); }
  /// Every live buffer's bytes (empty: not live).
  std::vector<std::vector<unsigned char>> take_buffers();

 private:
  unsigned char* at(const OperandPiece& p);
  Status check(const OperandPiece& p, const char* what) const;
  Status copy(const Operand& src, const Operand& dst, double scale, bool accumulate);
  Status grad_ready(const WorkCall& c);
  /// GradNorm / GradOverflow: the local squared norm or inf/nan flag of the gradients.
  Status grad_stat(const WorkCall& c);
  Status optimizer_step(const WorkCall& c);
  void begin_step(std::uint32_t step);
  std::vector<float> gather(const Operand& x);
  void scatter(const Operand& x, const std::vector<float>& v);

  const Schedule& s_;
  const DataOptions& o_;
  std::uint32_t rank_;
  RingRegistry& rings_;
  struct Storage {
    Block data;
    Bytes bytes = 0;
  };
  std::vector<Storage> store_;
  BlockCache cache_;  ///< released blocks for the next allocation of their size
  std::vector<bool> live_;
  std::set<std::uint32_t> overflow_buffers_;  ///< the updates' overflow flags
  DynamicLossScaler scaler_;
  bool loss_scaled_ = false;  ///< fp16: the backward's gradients carry the loss scale
  std::uint32_t step_ = 0;
  bool step_overflowed_ = false, finished_ = false;
  std::uint64_t skipped_ = 0;
  std::vector<std::uint64_t> update_steps_;  ///< AdamW's t per update
  std::set<std::uint32_t> injected_;         ///< overflow steps whose inf was written
};

}  // namespace zerosim::exec
