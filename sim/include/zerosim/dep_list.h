// DepList: an op's dependencies (Op::deps), the op indices that must finish before it starts.
//
// Nearly every op has none or one (the Llama-3.1-405B plan sweep builds 253 k ops; the 35 k with
// deps have exactly one each), so one index is stored in place and only longer lists take heap
// storage: a std::vector<std::uint32_t> cost a heap allocation (and its free in ~Schedule) per op
// with deps, and 24 bytes of every op instead of 16.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <vector>

namespace zerosim {

class DepList {
 public:
  DepList() = default;
  DepList(std::initializer_list<std::uint32_t> deps) { assign(deps.begin(), deps.size()); }
  DepList(const std::vector<std::uint32_t>& deps) {  // implicit: a built list becomes an op's
    assign(deps.data(), deps.size());
  }
  DepList(const DepList& o) { assign(o.data(), o.size_); }
  DepList(DepList&& o) noexcept : size_(o.size_), capacity_(o.capacity_), store_(o.store_) {
    o.size_ = 0;
    o.capacity_ = 1;
  }
  DepList& operator=(const DepList& o) {
    if (this != &o) {
      size_ = 0;
      assign(o.data(), o.size_);
    }
    return *this;
  }
  DepList& operator=(DepList&& o) noexcept {
    if (this != &o) {
      release();
      size_ = o.size_;
      capacity_ = o.capacity_;
      store_ = o.store_;
      o.size_ = 0;
      o.capacity_ = 1;
    }
    return *this;
  }
  ~DepList() { release(); }

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const std::uint32_t* data() const { return on_heap() ? store_.many : &store_.one; }
  const std::uint32_t* begin() const { return data(); }
  const std::uint32_t* end() const { return data() + size_; }
  std::uint32_t operator[](std::size_t i) const { return data()[i]; }

  void push_back(std::uint32_t dep) {
    if (size_ == capacity_) reserve(std::size_t{capacity_} * 2);
    mutable_data()[size_++] = dep;
  }
  void reserve(std::size_t n) {
    if (n <= capacity_) return;
    // Sizes are 32-bit (op indices are): past that, fail as std::vector does past its max_size.
    if (n > std::numeric_limits<std::uint32_t>::max()) throw std::length_error("DepList::reserve");
    auto* grown = new std::uint32_t[n];
    if (size_ > 0) std::memcpy(grown, data(), size_ * sizeof(std::uint32_t));
    release();
    store_.many = grown;
    capacity_ = static_cast<std::uint32_t>(n);
  }
  void clear() { size_ = 0; }

  friend bool operator==(const DepList& a, const DepList& b) {
    return a.size_ == b.size_ &&
           (a.size_ == 0 || std::memcmp(a.data(), b.data(), a.size_ * sizeof(std::uint32_t)) == 0);
  }

 private:
  bool on_heap() const { return capacity_ > 1; }
  std::uint32_t* mutable_data() { return on_heap() ? store_.many : &store_.one; }
  void assign(const std::uint32_t* deps, std::size_t n) {
    reserve(n);
    if (n > 0) std::memcpy(mutable_data(), deps, n * sizeof(std::uint32_t));
    size_ = static_cast<std::uint32_t>(n);
  }
  void release() {
    if (on_heap()) delete[] store_.many;
    capacity_ = 1;
  }

  std::uint32_t size_ = 0;
  std::uint32_t capacity_ = 1;  ///< 1: the one index in place; more: `many` on the heap
  union Store {
    std::uint32_t one;
    std::uint32_t* many;
  } store_{0};
};

}  // namespace zerosim
