// What data mode is checked against: a complete plain data-parallel schedule (every operand
// carried: the init broadcasts, the master copy, the flatten, the all-reduce, the cast, the update
// and the write-back of a DDP + FP16_Optimizer-like step) of a list of tensors, and the
// unpartitioned data-parallel AdamW reference fed the same stand-in gradients. The tests and the
// benchmark share them; a ZeRO schedule that carries all its operands is compared with the same
// reference ("ZeRO changes memory, not training").
#pragma once

#include <cstdint>
#include <vector>

#include "zerosim/host_backend.h"
#include "zerosim/schedule.h"

namespace zerosim::exec {

struct PlainDpSpec {
  std::vector<Elements> tensors;  ///< numel of each parameter, in order
  std::uint32_t world = 2;
  std::uint32_t steps = 1;
  DType lp = DType::Float16;
  std::uint32_t grad_accum = 1;  ///< micro-steps per step: grad_ready x 1/grad_accum, then Add
};

/// The module's parameters are buffer 0 (the tensors concatenated in order), the fp32 master
/// buffer 1 and Adam's moments buffer 2 (zero-filled); comms[0] is the world. The all-reduce
/// averages (x 1/world), as DeepSpeed's engine does.
Schedule plain_dp_schedule(const PlainDpSpec& spec);

struct ReferenceSpec {
  std::vector<Elements> tensors;
  std::uint32_t world = 2, steps = 1, grad_accum = 1;
  DType lp = DType::Float16;
  /// Where the weights start: initial_weight(seed, rank 0, weights_buffer, offset of the tensor in
  /// the concatenation + index), rounded to lp (what the init broadcasts from rank 0 leave).
  std::uint32_t weights_buffer = 0;
  /// Whether the step's gradient is the mean over ranks (DeepSpeed averages) or the sum.
  bool average = true;
  /// Whether each micro-step's gradient is the loss's x 1/grad_accum (the engine's scaling).
  bool scale_micro_steps = true;
};

struct ReferenceRun {
  std::vector<std::vector<float>> params;  ///< per tensor, the 16-bit weights after the last step
  std::vector<std::vector<float>> master;  ///< per tensor, fp32
  double loss_scale = 1;
  std::uint64_t skipped_steps = 0;
};

/// One copy of the model trained without partitioning: each step, every rank's stand-in gradient
/// (StandInGrads x the loss scale x 1/grad_accum, rounded to lp as autograd stores it; summed over
/// micro-steps in lp), summed over ranks exactly (in double) and rounded to lp once, averaged, cast
/// to fp32,
/// unscaled (and clipped by the global norm), AdamW; an overflow step (an inf in rank 0's first
/// gradient) is skipped and lowers the loss scale.
ReferenceRun reference_train(const DataOptions& o, const ReferenceSpec& spec);

}  // namespace zerosim::exec
