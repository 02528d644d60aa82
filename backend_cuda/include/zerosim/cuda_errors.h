// How a failed CUDA, cuBLAS or NCCL call becomes a result (issue #10 "Build"): one Diagnostic that
// names the source location of the call, the call itself, the library's code name and message,
// NCCL's last error when there is one, the rank and the op the backend was running. Pure C++ so
// that the formatting is tested without a GPU; backend_cuda/cuda/cuda_check.h feeds it the
// libraries' own strings (cudaGetErrorName/String, cublasGetStatusName/String, ncclGetErrorString,
// ncclGetLastError).
#pragma once

#include <cstdint>
#include <string>

#include "zerosim/diagnostic.h"

namespace zerosim::cuda {

struct LibraryError {
  std::string library;  ///< "CUDA", "cuBLAS", "NCCL"
  std::string call;     ///< the call as written: "cudaMallocFromPoolAsync(&p, bytes, pool, s)"
  int code = 0;
  std::string code_name;   ///< "cudaErrorMemoryAllocation", "ncclUnhandledCudaError"
  std::string message;     ///< the library's description of the code
  std::string last_error;  ///< ncclGetLastError (empty: none)
  std::string file;
  int line = 0;
};

/// Where the backend was when the call failed: "rank 3, op 17 (\"flush 2: AR(8)\")" or a setup
/// phase ("rank 0, communicator init"). Empty: not known.
Diagnostic library_error(const LibraryError& e, const std::string& where);

/// "does not fit: rank R, buffer #B (category), N bytes requested, F bytes free of T on the
/// device": the message a failed device allocation ends the run with.
Diagnostic does_not_fit(std::uint32_t rank, std::uint32_t buffer, const std::string& category,
                        std::uint64_t requested, std::uint64_t free_bytes,
                        std::uint64_t total_bytes);

/// The error a machine without a usable GPU gets (CUDA error 35 or 100 at the first call):
/// "no CUDA device: cudaGetDeviceCount: <name> (<message>)".
Diagnostic no_cuda_device(const std::string& code_name, const std::string& message);

}  // namespace zerosim::cuda
