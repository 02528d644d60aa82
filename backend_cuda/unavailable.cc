// The CUDA backend as `zerosim` sees it: never loaded here. Without the backend (no CUDA compiler,
// cuBLAS or NCCL, or ZEROSIM_WITH_CUDA=OFF) run_cuda is one line saying so; with it, the build
// defines ZEROSIM_CUDA_COMPANION and `validate --backend cuda` executes zerosim-cuda instead
// (cuda_companion_path).
#include <unistd.h>

#include <climits>

#include "zerosim/cuda_backend.h"

namespace zerosim::cuda {

bool cuda_backend_built() { return false; }

std::string cuda_companion_path() {
#if defined(ZEROSIM_CUDA_COMPANION)
  char self[PATH_MAX] = {};
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return {};
  std::string path(self, static_cast<std::size_t>(n));
  path = path.substr(0, path.rfind('/') + 1) + ZEROSIM_CUDA_COMPANION;
  return ::access(path.c_str(), X_OK) == 0 ? path : std::string();
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
