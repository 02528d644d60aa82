// Storage for one rank's data-mode buffers (host_data.h). A data-mode step allocates gigabytes
// (GPT-2 small at 4 ranks: about 2.7 GB a rank), so where the bytes come from matters as much as
// the loops over them (a fresh page costs a fault and the kernel's zeroing: about 0.7 s of sys
// time per GB on the build machine). Large blocks are anonymous mappings, zero-filled by the
// kernel, so a zero-filled buffer costs no pass of its own; a released block is kept, up to a
// bounded cache per rank, and its pages serve the next allocations whatever their size: the same
// granule as it is (the buckets and temporaries a schedule allocates and frees every micro-step),
// a smaller one from its head (the tail stays cached), a larger one by moving cached blocks'
// pages into the head of a fresh mapping (mremap: page tables move, no bytes are copied or
// faulted again). Private to sim/exec.
#pragma once

#include <cstddef>
#include <map>
#include <utility>

#include "zerosim/units.h"

namespace zerosim::exec {

/// One block of bytes: owned, movable, freed on destruction.
class Block {
 public:
  Block() = default;
  Block(Block&& o) noexcept { swap(o); }
  Block& operator=(Block&& o) noexcept {
    Block(std::move(o)).swap(*this);
    return *this;
  }
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;
  ~Block();

  unsigned char* data() const { return data_; }
  /// The bytes the block holds (its capacity: the request rounded up to its granule).
  std::size_t capacity() const { return capacity_; }
  explicit operator bool() const { return data_ != nullptr; }

  /// A fresh block of at least `bytes`; zero-filled when `zero` (mappings always are). Null on
  /// failure.
  static Block make(std::size_t bytes, bool zero);
  /// The capacity make(bytes) gives (blocks of equal granule are interchangeable).
  static std::size_t granule(std::size_t bytes);

 private:
  friend class BlockCache;
  /// A mapping's pages from `keep` bytes on, as a block of their own (keep: a whole granule
  /// multiple below capacity()); this block keeps the head.
  Block split_tail(std::size_t keep);
  /// Moves this mapping's pages to `to` (a range of capacity() bytes of another mapping, which
  /// they replace) and leaves this block empty; false (nothing moved) when the kernel refuses.
  bool move_pages_to(unsigned char* to);
  bool mapped() const { return mapped_; }
  void swap(Block& o) noexcept;
  unsigned char* data_ = nullptr;
  std::size_t capacity_ = 0;
  bool mapped_ = false;
};

/// Released blocks kept for reuse, keyed by capacity, at most `limit` bytes in all.
class BlockCache {
 public:
  explicit BlockCache(std::size_t limit) : limit_(limit) {}
  /// A block of at least `bytes`, zero-filled when `zero`: a cached block of the same granule if
  /// any, else the head of the smallest larger cached mapping, else a fresh mapping whose head
  /// holds the pages of the largest cached mappings that fit.
  Block take(std::size_t bytes, bool zero);
  /// Keeps `b` for a later take() if it fits in the limit; frees it otherwise.
  void give(Block b);
  /// Bytes kept now.
  std::size_t held() const { return held_; }

 private:
  std::size_t limit_, held_ = 0;
  std::multimap<std::size_t, Block> free_;
};

}  // namespace zerosim::exec
