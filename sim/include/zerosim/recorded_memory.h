// Per-phase memory of a recording (memory.rankR.jsonl: torch.cuda counters at the recorder's
// phase boundaries) against the planner's prediction for the same job (estimate_memory), the
// comparison `zerosim validate --recording` prints. What each counter is compared with:
//   * allocated (memory_allocated) at each boundary of the last recorded step: the predicted
//     tensor bytes resident there: the persistent terms at forward_begin, backward_end,
//     step_begin and step_end, plus the activations at forward_end and backward_begin;
//   * max_allocated (max_memory_allocated, never reset by the recorder: the process's peak) at
//     the last boundary: the predicted peak phase's tensor bytes (total() without the overhead
//     layer);
//   * reserved (memory_reserved, the caching allocator's pool) at the last boundary: the peak
//     tensor bytes plus the overhead terms that live in the pool (fragmentation, bitsandbytes'
//     state);
//   * outside the allocator (cudaMemGetInfo's used bytes minus reserved) at the last boundary:
//     the overhead terms PyTorch's allocator never sees (CUDA context, NCCL buffers), shown apart.
// A recording without device counters (a CPU job) compares nothing and says so.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "zerosim/memory_model.h"
#include "zerosim/recording.h"

namespace zerosim {

struct PhaseMemoryRow {
  std::uint32_t rank = 0;
  std::string event;         ///< the boundary (memory.rankR.jsonl "event")
  std::string category;      ///< allocated, max_allocated, reserved, outside_allocator
  std::string predicted_as;  ///< what the predicted bytes are
  Bytes measured = 0, predicted = 0;
  bool within = true;
};

struct PhaseMemoryVerdict {
  std::string category;
  std::uint64_t rows = 0;
  double worst_error = 0;  ///< largest |measured - predicted| / predicted (inf: predicted 0)
  bool within = true;
};

struct PhaseMemoryCheck {
  bool recorded = false;  ///< the recording holds device memory counters
  std::string device;     ///< the recording's device ("cpu", "cuda")
  std::uint32_t step = 0;
  double tolerance = 0;
  std::vector<PhaseMemoryRow> rows;          ///< rank, then boundary order
  std::vector<PhaseMemoryVerdict> verdicts;  ///< one per category with rows, in category order
  bool passed() const;
};

/// Compares the last recorded step's counters of every rank with `predicted` (one rank's
/// estimate: DeepSpeed's worst rank) within `tolerance` (relative).
PhaseMemoryCheck compare_phase_memory(const Recording& rec, const MemoryReport& predicted,
                                      const OverheadParams& overheads, double tolerance);

/// (measured - predicted) / predicted as "+1.25%"; "n/a" when predicted is 0 and measured not.
std::string relative_error_text(Bytes measured, Bytes predicted);

void write_phase_memory_table(const PhaseMemoryCheck& c, std::ostream& out);

}  // namespace zerosim
