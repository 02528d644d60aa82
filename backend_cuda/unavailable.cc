// run_cuda on a build without the CUDA backend (backend_cuda/CMakeLists.txt found no CUDA compiler,
// cuBLAS or NCCL, or ZEROSIM_WITH_CUDA was OFF): one line saying so, so scripts can tell.
#include "zerosim/cuda_backend.h"

namespace zerosim::cuda {

bool cuda_backend_built() { return false; }

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
