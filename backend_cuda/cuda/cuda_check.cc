// check_cuda, check_cublas, check_nccl (cuda_check.h): the libraries' own strings into
// library_error (cuda_errors.h).
#include "cuda_check.h"

#include <cstring>
#include <string>

namespace zerosim::cuda {
namespace {

std::string base_name(const char* file) {
  const char* slash = std::strrchr(file, '/');
  return slash ? std::string("backend_cuda/cuda/") + (slash + 1) : std::string(file);
}

}  // namespace

exec::Status check_cuda(cudaError_t e, const char* call, const char* file, int line) {
  if (e == cudaSuccess) return std::nullopt;
  (void)cudaGetLastError();  // clears a non-sticky error so the next call is not blamed
  return library_error({"CUDA", call, static_cast<int>(e), cudaGetErrorName(e),
                        cudaGetErrorString(e), "", base_name(file), line},
                       "");
}

exec::Status check_cublas(cublasStatus_t e, const char* call, const char* file, int line) {
  if (e == CUBLAS_STATUS_SUCCESS) return std::nullopt;
  return library_error({"cuBLAS", call, static_cast<int>(e), cublasGetStatusName(e),
                        cublasGetStatusString(e), "", base_name(file), line},
                       "");
}

exec::Status check_nccl(ncclResult_t e, ncclComm_t comm, const char* call, const char* file,
                        int line) {
  if (e == ncclSuccess || e == ncclInProgress) return std::nullopt;
  const char* last = ncclGetLastError(comm);
  static const char* const kNames[] = {
      "ncclSuccess",         "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
      "ncclInvalidArgument", "ncclInvalidUsage",       "ncclRemoteError", "ncclInProgress"};
  const auto i = static_cast<std::size_t>(e);
  const std::string name = i < sizeof kNames / sizeof kNames[0] ? kNames[i] : "ncclResult";
  return library_error({"NCCL", call, static_cast<int>(e), name, ncclGetErrorString(e),
                        last ? last : "", base_name(file), line},
                       "");
}

}  // namespace zerosim::cuda
