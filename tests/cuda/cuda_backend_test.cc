// The CUDA backend against the real libraries. The error-string tests need no GPU (the runtime,
// cuBLAS and NCCL name their codes on the host); the kernel and device tests skip with "skipped:
// no CUDA device" where cudaGetDeviceCount finds none (the build machine: CUDA error 35).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "cuda_check.h"
#include "cuda_device.h"
#include "kernels.h"
#include "numerics.h"
#include "training_math.h"

namespace zerosim::cuda {
namespace {

bool have_device() {
  int n = 0;
  const bool ok = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
  (void)cudaGetLastError();
  return ok;
}
#define REQUIRE_DEVICE() \
  if (!have_device()) GTEST_SKIP() << "skipped: no CUDA device"

TEST(CudaCheck, SuccessIsNoStatus) {
  EXPECT_FALSE(ZS_CUDA(cudaSuccess).has_value());
  EXPECT_FALSE(ZS_CUBLAS(CUBLAS_STATUS_SUCCESS).has_value());
  EXPECT_FALSE(ZS_NCCL(nullptr, ncclSuccess).has_value());
}

TEST(CudaCheck, CudaErrorCarriesTheRuntimesNameAndMessage) {
  const exec::Status e = ZS_CUDA(cudaErrorMemoryAllocation);
  ASSERT_TRUE(e.has_value());
  EXPECT_NE(e->message.find("cudaErrorMemoryAllocation failed: CUDA error 2 "
                            "cudaErrorMemoryAllocation (out of memory)"),
            std::string::npos)
      << e->message;
  EXPECT_NE(e->source.find("cuda_backend_test.cc:"), std::string::npos) << e->source;
}

TEST(CudaCheck, CublasAndNcclNameTheirCodes) {
  const exec::Status b = ZS_CUBLAS(CUBLAS_STATUS_NOT_INITIALIZED);
  ASSERT_TRUE(b.has_value());
  EXPECT_NE(b->message.find("cuBLAS error 1 CUBLAS_STATUS_NOT_INITIALIZED"), std::string::npos)
      << b->message;
  const exec::Status n = ZS_NCCL(nullptr, ncclInvalidUsage);
  ASSERT_TRUE(n.has_value());
  EXPECT_NE(n->message.find("NCCL error 5 ncclInvalidUsage ("), std::string::npos) << n->message;
}

TEST(CudaKernels, AdamWMatchesTheCpuReferenceBitForBit) {
  REQUIRE_DEVICE();
  const std::size_t n = 1 << 16;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> p(n), m(n), v(n), g(n);
  for (std::size_t i = 0; i < n; ++i) {
    p[i] = u(rng);
    m[i] = 0.1f * u(rng);
    v[i] = 0.01f * std::abs(u(rng));
    g[i] = 1000 * u(rng);
  }
  const float inv_host = 1.0f / 1024;
  float* d = nullptr;
  ASSERT_FALSE(ZS_CUDA(cudaMalloc(&d, (4 * n + 2) * sizeof(float))));
  for (int k = 0; k < 4; ++k)
    ASSERT_FALSE(ZS_CUDA(cudaMemcpy(d + k * n,
                                    (k == 0   ? p
                                     : k == 1 ? m
                                     : k == 2 ? v
                                              : g)
                                        .data(),
                                    n * sizeof(float), cudaMemcpyHostToDevice)));
  ASSERT_FALSE(ZS_CUDA(launch_combined_scale(nullptr, 0, 1024.0, 0, d + 4 * n,
                                             reinterpret_cast<int*>(d + 4 * n + 1), nullptr)));
  exec::AdamWParams h;
  const std::uint64_t t = 3;
  const double bc1 = 1.0 - std::pow(0.9, 3.0), bc2 = 1.0 - std::pow(0.999, 3.0);
  AdamWArgs a{h.lr,
              h.beta1,
              h.beta2,
              h.eps,
              h.weight_decay,
              static_cast<float>(h.lr / bc1),
              static_cast<float>(std::sqrt(bc2))};
  ASSERT_FALSE(ZS_CUDA(launch_adamw(d, d + n, d + 2 * n, d + 3 * n, n, d + 4 * n,
                                    reinterpret_cast<int*>(d + 4 * n + 1), a, nullptr,
                                    DType::Float16, nullptr)));
  std::vector<float> out(n);
  ASSERT_FALSE(ZS_CUDA(cudaMemcpy(out.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost)));
  for (float& x : g) x *= inv_host;
  exec::adamw_step(h, t, p.data(), m.data(), v.data(), g.data(), n);
  EXPECT_EQ(std::memcmp(out.data(), p.data(), n * sizeof(float)), 0);
  (void)cudaFree(d);
}

TEST(CudaKernels, CastToHalfRoundsAsTheHost) {
  REQUIRE_DEVICE();
  const std::size_t n = 4096;
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<float>(i) * 0.37f - 700.0f;
  void* d = nullptr;
  ASSERT_FALSE(ZS_CUDA(cudaMalloc(&d, n * 6)));
  ASSERT_FALSE(ZS_CUDA(cudaMemcpy(d, x.data(), n * 4, cudaMemcpyHostToDevice)));
  void* h = static_cast<unsigned char*>(d) + n * 4;
  ASSERT_FALSE(
      ZS_CUDA(launch_convert(h, DType::Float16, d, DType::Float32, n, 0.5, false, nullptr)));
  std::vector<std::uint16_t> out(n);
  ASSERT_FALSE(ZS_CUDA(cudaMemcpy(out.data(), h, n * 2, cudaMemcpyDeviceToHost)));
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(out[i], exec::float_to_fp16(x[i] * 0.5f)) << i;
  (void)cudaFree(d);
}

TEST(CudaDeviceTest, AllocationBeyondTheDeviceDoesNotFit) {
  REQUIRE_DEVICE();
  Schedule s;
  s.meta.world = 1;
  s.roles.push_back({{{0, 0}}, 0, {}});
  Buffer b;
  b.name = "huge";
  b.category = BufferCategory::Grad;
  s.buffers.push_back(b);
  CudaOptions o;
  CudaDevice dev(s, o, 0, nullptr);
  ASSERT_FALSE(dev.init().has_value());
  const exec::Status e =
      dev.allocate(0, Bytes{1} << 50, MemoryPool::Device, BufferCategory::Grad, false, false);
  ASSERT_TRUE(e.has_value());
  EXPECT_NE(e->message.find("does not fit: rank 0, buffer #0 (grad), 1125899906842624 bytes "
                            "requested, "),
            std::string::npos)
      << e->message;
}

}  // namespace
}  // namespace zerosim::cuda
