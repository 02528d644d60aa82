// The predicted-vs-measured report of a CUDA run (`zerosim validate --backend cuda`), per rank:
// zerosim's tracked peak device bytes against the simulator's ledger of the rank's role (to the
// byte, per category), the pool's and the device's readings beside it, the collective calls per
// kind against the prediction, and the median step time (CUDA events, warm-up steps left out)
// against the predicted step with its error. Plain C++: tested on fabricated runs without a GPU.
#pragma once

#include <cstdint>
#include <ostream>

#include "zerosim/cuda_backend.h"
#include "zerosim/engine.h"

namespace zerosim::cuda {

struct ReportOptions {
  bool json = false;               ///< one JSON line {"format": "zerosim-validate", ...}
  std::uint32_t warmup_steps = 1;  ///< steps left out of the median
};

/// Writes the report; true when every rank's memory and collective calls agree (time is reported,
/// not judged).
bool write_cuda_report(const Schedule& s, const SimulationResult& predicted, const CudaRun& m,
                       const ReportOptions& o, std::ostream& out);

/// The median of the steps after `warmup` (0 when none is left).
std::int64_t median_step_ns(const std::vector<std::int64_t>& steps, std::uint32_t warmup);

}  // namespace zerosim::cuda
