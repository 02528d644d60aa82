// How the CUDA backend reports a failed library call, a failed allocation and a machine without a
// GPU (cuda_errors.h). The strings the libraries give are passed in as they print them (CUDA 13,
// NCCL 2.28); tests/cuda/ checks the real ones when the backend is built.
#include "zerosim/cuda_errors.h"

#include <gtest/gtest.h>

namespace zerosim::cuda {
namespace {

TEST(CudaErrors, CudaCallNamesFileLineCallCodeAndPlace) {
  const Diagnostic d = library_error(
      {"CUDA", "cudaMallocFromPoolAsync(&p, n, pool_, mem_stream_)", 2, "cudaErrorMemoryAllocation",
       "out of memory", "", "backend_cuda/cuda/cuda_device.cc", 187},
      "rank 3, op 17 (\"alloc ipg[0]\")");
  EXPECT_EQ(d.to_string(),
            "backend_cuda/cuda/cuda_device.cc:187: rank 3, op 17 (\"alloc ipg[0]\"): "
            "cudaMallocFromPoolAsync(&p, n, pool_, mem_stream_) failed: CUDA error 2 "
            "cudaErrorMemoryAllocation (out of memory)");
}

TEST(CudaErrors, NcclCallCarriesTheLastError) {
  const Diagnostic d =
      library_error({"NCCL", "ncclAllReduce(in, out, c.numel, t, nccl_op(c.reduce_op), comm, st)",
                     5, "ncclInvalidUsage", "invalid usage (run with NCCL_DEBUG=WARN for details)",
                     "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000",
                     "backend_cuda/cuda/cuda_device.cc", 400},
                    "");
  EXPECT_NE(d.message.find("NCCL error 5 ncclInvalidUsage"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("; NCCL last error: Duplicate GPU detected"), std::string::npos);
  EXPECT_EQ(d.source, "backend_cuda/cuda/cuda_device.cc:400");
}

TEST(CudaErrors, DoesNotFitNamesRankBufferRequestedAndFree) {
  const Diagnostic d = does_not_fit(2, 41, "grad", 8000000000, 1234567, 150000000000);
  EXPECT_NE(d.message.find("does not fit: rank 2, buffer #41 (grad), 8000000000 bytes requested, "
                           "1234567 bytes free of 150000000000 on the device"),
            std::string::npos)
      << d.message;
}

TEST(CudaErrors, NoDeviceIsClear) {
  const Diagnostic d = no_cuda_device("cudaErrorInsufficientDriver",
                                      "CUDA driver version is insufficient for CUDA runtime "
                                      "version");
  EXPECT_EQ(d.message,
            "no CUDA device: cudaGetDeviceCount: cudaErrorInsufficientDriver (CUDA driver "
            "version is insufficient for CUDA runtime version)");
}

}  // namespace
}  // namespace zerosim::cuda
