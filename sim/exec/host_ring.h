// HostRing: the host backend's data path for collectives — NCCL's ring algorithms between rank
// threads of one process, through shared memory. Each rank sends only to its right neighbour over
// a bounded channel of fixed-size slots (a copy into a slot, a reduce or copy out of it, as NCCL's
// SHM transport does), in chunks, so no rank holds a lock around another's memcpy and transfers
// pipeline around the ring. The chunk plan is ring_plan.h's, so the bytes counted here are the
// bytes ring_bytes() predicts (a test holds them equal).
//
// Reductions run in float32 (float64 for float64, integer for uint8/int64) and round back to the
// storage dtype after every step, as NCCL's reduction kernels do for half and bfloat16: the sum of
// a ring all-reduce is therefore rounded per hop, in ring order — bitwise equal to a sequential
// sum only when the values add exactly (integers in range), within the dtype's rounding otherwise.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "ring_plan.h"
#include "zerosim/executor.h"

namespace zerosim::exec {

/// dst[i] = op(dst[i], src[i]) for `count` elements of `dtype` (sum or max).
void reduce_into(void* dst, const void* src, Elements count, DType dtype, ReduceOp op);
/// dst[i] = op(a[i], src[i]): the same arithmetic, the sum written elsewhere (dst may be a), so a
/// ring step reads its own input in place instead of reducing into a copy of it.
void reduce_from(void* dst, const void* a, const void* src, Elements count, DType dtype,
                 ReduceOp op);

class HostRing {
 public:
  /// A ring of `n` ranks; `chunk_bytes` per slot, `slots` slots per channel (at least 2).
  explicit HostRing(std::uint32_t n, std::size_t chunk_bytes = std::size_t{1} << 19,
                    std::size_t slots = 4,
                    std::chrono::milliseconds timeout = std::chrono::milliseconds(60000));

  // Every rank's thread calls the same collective with its own rank; each call blocks until this
  // rank's part is done. Buffers are this rank's; counts are elements per rank as torch names them.
  Status all_reduce(std::uint32_t r, void* data, Elements count, DType dtype, ReduceOp op);
  Status reduce_scatter(std::uint32_t r, const void* in, void* out, Elements out_count, DType dtype,
                        ReduceOp op);
  Status all_gather(std::uint32_t r, const void* in, void* out, Elements count, DType dtype);
  Status broadcast(std::uint32_t r, void* data, Elements count, DType dtype, std::uint32_t root);
  /// `out` is written on the root only (may be null elsewhere).
  Status reduce(std::uint32_t r, const void* in, void* out, Elements count, DType dtype,
                ReduceOp op, std::uint32_t root);

  /// Bytes rank r has sent and received so far.
  RingBytes bytes(std::uint32_t r) const { return counted_[r]; }
  /// Every waiting rank returns an error.
  void abort();

 private:
  struct Channel {  // rank i -> rank i+1
    std::mutex m;
    std::condition_variable cv;
    std::vector<unsigned char> storage;
    std::vector<std::size_t> sizes;
    std::uint64_t head = 0, tail = 0;
  };
  Status send(std::uint32_t r, const unsigned char* p, std::size_t bytes, std::size_t piece);
  template <class F>
  Status recv(std::uint32_t r, std::size_t piece, F&& consume);
  // One step: send [sp, sp+sb) to the right and receive sb2 bytes from the left, interleaved piece
  // by piece (so bounded channels never deadlock), handing each received piece to `consume`.
  template <class F>
  Status exchange(std::uint32_t r, const unsigned char* sp, std::size_t sb, std::size_t rb,
                  F&& consume);

  std::uint32_t n_;
  std::size_t chunk_, slots_;
  std::chrono::milliseconds timeout_;
  std::vector<std::unique_ptr<Channel>> channels_;
  std::vector<RingBytes> counted_;
  /// Per rank: the partial sums reduce_scatter (two blocks) and reduce (the buffer) forward, kept
  /// between calls (a bucketed schedule reduces every bucket through it: no allocation, no fresh
  /// pages per call). The input itself is read in place, not copied here.
  std::vector<std::vector<unsigned char>> scratch_;
  /// At least `bytes` of rank r's scratch, holding a copy of `from` when it is not null.
  unsigned char* scratch(std::uint32_t r, const void* from, std::size_t bytes);
  std::atomic<bool> aborted_{false};
};

}  // namespace zerosim::exec
