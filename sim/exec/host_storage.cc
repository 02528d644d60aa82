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

Block Block::split_tail(std::size_t keep) {
  Block tail;
  if (!mapped_ || keep == 0 || keep >= capacity_ || keep % kGranule != 0) return tail;
  tail.data_ = data_ + keep;
  tail.capacity_ = capacity_ - keep;
  tail.mapped_ = true;
  capacity_ = keep;
  return tail;
}

bool Block::move_pages_to(unsigned char* to) {
  if (!mapped_) return false;
  void* p = ::mremap(data_, capacity_, capacity_, MREMAP_MAYMOVE | MREMAP_FIXED, to);
  if (p == MAP_FAILED) return false;
  data_ = nullptr;  // the pages live at `to` now; the old range is unmapped
  capacity_ = 0;
  mapped_ = false;
  return true;
}

Block BlockCache::take(std::size_t bytes, bool zero) {
  const std::size_t cap = Block::granule(bytes);
  auto it = free_.lower_bound(cap);
  if (it != free_.end() && (it->first == cap || (cap >= kMapFrom && it->second.mapped()))) {
    Block b = std::move(it->second);
    free_.erase(it);
    held_ -= b.capacity();
    if (b.capacity() > cap) give(b.split_tail(cap));  // the rest stays cached
    if (zero) std::memset(b.data(), 0, bytes);
    return b;
  }
  Block b = Block::make(bytes, zero);
  if (!b || !b.mapped()) return b;
  // Every cached mapping is smaller: the largest that fit move into the fresh one's head, so
  // their pages (already faulted in) serve it and only the rest faults.
  std::size_t filled = 0;
  while (filled < cap && !free_.empty()) {
    auto fit = free_.upper_bound(cap - filled);
    if (fit == free_.begin()) break;
    --fit;
    if (!fit->second.mapped()) break;  // malloc'd blocks (under kMapFrom) stay where they are
    const std::size_t n = fit->first;
    if (!fit->second.move_pages_to(b.data() + filled)) break;
    free_.erase(fit);
    held_ -= n;
    if (zero) std::memset(b.data() + filled, 0, n);
    filled += n;
  }
  return b;
}

void BlockCache::give(Block b) {
  if (!b || b.capacity() > limit_ - std::min(limit_, held_)) return;  // freed here
  held_ += b.capacity();
  const std::size_t cap = b.capacity();
  free_.emplace(cap, std::move(b));
}

}  // namespace zerosim::exec
