// SampledDevice and AllocatorCounters (sampled_device.h).
#include "sampled_device.h"

#include <algorithm>

namespace zerosim::exec {

void AllocatorCounters::sample(SimTime t, const MemoryCounters& c) {
  // kAllocatorCounterNames' order.
  const std::array<std::uint64_t, kAllocatorCounterNames.size()> v = {
      c.device_buffers, c.device_current, c.device_peak, c.host_buffers, c.host_current};
  for (std::size_t k = 0; k < v.size(); ++k) {
    const auto value = static_cast<std::int64_t>(v[k]);
    std::vector<CounterSample>& s = series_[k];
    if (s.empty() || s.back().value != value) s.push_back({t, value});
  }
}

std::vector<TraceCounter> AllocatorCounters::take(std::uint32_t rank) {
  std::vector<TraceCounter> out;
  for (std::size_t k = 0; k < series_.size(); ++k)
    if (!series_[k].empty())
      out.push_back({rank, kAllocatorCounterNames[k], std::move(series_[k])});
  return out;
}

SimTime SampledDevice::now() {
  // The steady clock does not go backwards, but the curve and the counters promise time order
  // whatever the clock's resolution: clamp to the previous sample.
  last_t_ = std::max(last_t_, w_.now_ns());
  return last_t_;
}

void SampledDevice::sample_curve(SimTime t) {
  MemorySample m;
  m.t = t;
  m.total = a_.counters().device_current;
  m.by_category = a_.device_by_category();
  curve_.push_back(m);
}

void SampledDevice::start() {
  if (counters_) counters_->sample(now(), a_.counters());
}

Status SampledDevice::allocate(std::uint32_t buffer, Bytes bytes, MemoryPool pool,
                               BufferCategory category, bool zero_fill, bool init_weights) {
  Status st = inner_.allocate(buffer, bytes, pool, category, zero_fill, init_weights);
  if (st) return st;
  const SimTime t = now();
  if (pool == MemoryPool::Device) sample_curve(t);
  if (counters_) counters_->sample(t, a_.counters());
  return st;
}

Status SampledDevice::release(std::uint32_t buffer) {
  Status st = inner_.release(buffer);
  if (st) return st;
  // The allocator released the buffer before this call (or, for a Free an adopting Alloc defers,
  // before that Alloc's sample): a sample only where the device bytes moved since the last one.
  const SimTime t = now();
  if (!curve_.empty() && curve_.back().total != a_.counters().device_current) sample_curve(t);
  if (counters_) counters_->sample(t, a_.counters());
  return st;
}

}  // namespace zerosim::exec
