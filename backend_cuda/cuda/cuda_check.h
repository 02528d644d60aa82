// Every CUDA, cuBLAS and NCCL call of the backend goes through one of these macros: a failure
// becomes an exec::Status (cuda_errors.h: file:line, the call, the library's code name and
// message, NCCL's last error), never an abort. Usage:
//   if (exec::Status e = ZS_CUDA(cudaStreamCreate(&s))) return e;
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include "zerosim/cuda_errors.h"
#include "zerosim/executor.h"

namespace zerosim::cuda {

exec::Status check_cuda(cudaError_t e, const char* call, const char* file, int line);
exec::Status check_cublas(cublasStatus_t e, const char* call, const char* file, int line);
/// `comm` (may be null) gives ncclGetLastError its context.
exec::Status check_nccl(ncclResult_t e, ncclComm_t comm, const char* call, const char* file,
                        int line);

}  // namespace zerosim::cuda

#define ZS_CUDA(call) ::zerosim::cuda::check_cuda((call), #call, __FILE__, __LINE__)
#define ZS_CUBLAS(call) ::zerosim::cuda::check_cublas((call), #call, __FILE__, __LINE__)
#define ZS_NCCL(comm, call) ::zerosim::cuda::check_nccl((call), (comm), #call, __FILE__, __LINE__)
