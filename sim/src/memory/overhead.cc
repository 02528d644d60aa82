// Default overheads outside the tensors zerosim models (layer 3b), with their sources.
//
// - CUDA context, lazily loaded kernel modules and library workspaces: 1 GiB. An ASSUMPTION for
//   Hopper-class GPUs with PyTorch: the bare context is a few hundred MiB (CUDA lazy loading,
//   CUDA_MODULE_LOADING=LAZY, is the default since CUDA 12.2), PyTorch's kernels and
//   cuBLAS/cuBLASLt workspaces add to it as they are first used. Measure it with cudaMemGetInfo
//   deltas after a warm-up iteration (ecosystem.md §5.1) and override OverheadParams::cuda_context.
// - NCCL buffers (ecosystem.md §5.2): per connection (peer x channel) NCCL allocates one buffer per
//   protocol: LL 8 lines x 512 threads x 8 steps x 16 B = 524,288 B; LL128 120 x 640 x 8 steps x 8
//   B = 4,915,200 B; Simple NCCL_BUFFSIZE = 4,194,304 B; together 9,633,792 B (~9.2 MiB). A ring
//   has one send and one receive peer per channel; with 16 channels (typical on NVLink nodes; the
//   count comes from the topology, up to 64) that is 2 x 16 x 9,633,792 = 308,281,344 B (294 MiB).
//   Trees, NVLS and more channels add more; fewer channels (PCIe) fewer.
// - Allocator fragmentation: 5 % of the tensor bytes resident at the peak. An ASSUMPTION: PyTorch's
//   caching allocator rounds requests (512 B blocks, 2 MiB segments for small sizes, 20 MiB / size
//   rounding for large ones) and splits cached segments; reserved-minus-allocated of a few percent
//   is typical in steady-state training, more with highly variable shapes. Measure it as
//   memory_reserved() - memory_allocated() (or the pool statistics of ecosystem.md §5.1).
#include "zerosim/memory_model.h"

namespace zerosim {

namespace {
constexpr Bytes kLlBytes = 8ULL * 512 * 8 * 16;                          // 524,288
constexpr Bytes kLl128Bytes = 120ULL * 640 * 8 * 8;                      // 4,915,200
constexpr Bytes kSimpleBytes = 4194304;                                  // NCCL_BUFFSIZE default
constexpr Bytes kPerConnection = kLlBytes + kLl128Bytes + kSimpleBytes;  // 9,633,792
constexpr Bytes kRingPeers = 2;
constexpr Bytes kChannels = 16;
static_assert(kPerConnection == 9633792);
}  // namespace

OverheadParams default_overheads() {
  OverheadParams p;
  p.cuda_context = 1ULL << 30;
  p.nccl_buffers = kRingPeers * kChannels * kPerConnection;
  p.fragmentation = 0.05;
  return p;
}

}  // namespace zerosim
