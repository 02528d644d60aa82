// Block and BlockCache (host_storage.h).
#include "host_storage.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace zerosim::exec {
namespace {

// Blocks from 1 MiB are mappings in whole 64 KiB granules (smaller ones come from malloc, which
// keeps them in its own arenas). No MADV_HUGEPAGE: on the build machine (a VM) huge-page faults
// cost 2.5x the sys time of 4 KiB ones (compaction), measured on 4 GiB of fresh pages.
constexpr std::size_t kMapFrom = std::size_t{1} << 20;
constexpr std::size_t kGranule = std::size_t{64} << 10;

}  // namespace

Block::~Block() {
  if (!data_) return;
  if (mapped_)
    ::munmap(data_, capacity_);
  else
    std::free(data_);  // NOLINT: malloc'd below
}

void Block::swap(Block& o) noexcept {
  std::swap(data_, o.data_);
  std::swap(capacity_, o.capacity_);
  std::swap(mapped_, o.mapped_);
}

std::size_t Block::granule(std::size_t bytes) {
  if (bytes < kMapFrom) return bytes == 0 ? 1 : bytes;
  return (bytes + kGranule - 1) / kGranule * kGranule;
}

Block Block::make(std::size_t bytes, bool zero) {
  Block b;
  const std::size_t cap = granule(bytes);
  if (bytes < kMapFrom) {
    void* p = zero ? std::calloc(cap, 1) : std::malloc(cap);  // NOLINT: owned by the Block
    if (!p) return b;
    b.data_ = static_cast<unsigned char*>(p);
    b.capacity_ = cap;
    return b;
  }
  void* p = ::mmap(nullptr, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return b;
  b.data_ = static_cast<unsigned char*>(p);
  b.capacity_ = cap;
  b.mapped_ = true;
  return b;
}

Block BlockCache::take(std::size_t bytes, bool zero) {
  auto it = free_.find(Block::granule(bytes));
  if (it == free_.end()) return Block::make(bytes, zero);
  Block b = std::move(it->second);
  free_.erase(it);
  held_ -= b.capacity();
  if (zero) std::memset(b.data(), 0, bytes);
  return b;
}

void BlockCache::give(Block b) {
  if (!b || b.capacity() > limit_ - std::min(limit_, held_)) return;  // freed here
  held_ += b.capacity();
  const std::size_t cap = b.capacity();
  free_.emplace(cap, std::move(b));
}

}  // namespace zerosim::exec
