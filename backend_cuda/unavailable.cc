// The CUDA backend as `zerosim` sees it: never loaded here. Without the backend (no CUDA compiler,
// cuBLAS or NCCL, or ZEROSIM_WITH_CUDA=OFF) run_cuda is one line saying so; with it, the build
// defines ZEROSIM_CUDA_COMPANION and `validate --backend cuda` executes zerosim-cuda instead
// (cuda_companion_name).
#include "zerosim/cuda_backend.h"

namespace zerosim::cuda {

bool cuda_backend_built() { return false; }

std::string cuda_companion_name() {
#if defined(ZEROSIM_CUDA_COMPANION)
  return ZEROSIM_CUDA_COMPANION;
#else
  return {};
#endif
}

std::string cuda_unavailable_reason() {
  return "built without the CUDA backend (needs nvcc, cuBLAS and NCCL at configure time and "
         "ZEROSIM_WITH_CUDA=ON; see README.md \"On GPUs\")";
}

Result<CudaRun> run_cuda(const Schedule& /*s*/, const ScheduleGraph& /*g*/,
                         const CudaOptions& /*options*/, const EnvReader& /*env*/) {
  Diagnostics d;
  d.error("--backend", "",
          "expected a build with the CUDA backend for cuda, got one " + cuda_unavailable_reason());
  return Result<CudaRun>(std::move(d));
}

}  // namespace zerosim::cuda
