// SampledDevice: the host backend's wrapper around a rank's Device that samples what the rank's
// tracking allocator holds after every Alloc/Free: the device memory curve (TraceRank::memory)
// and, for traced ranks, the allocator's named counters (Trace::counters; their meanings and units
// are documented in trace.h, "Named counters"). Private to sim/exec.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "host_world.h"
#include "zerosim/executor.h"
#include "zerosim/trace.h"

namespace zerosim::exec {

/// The named counters a TrackingAllocator gives, in Trace::counters order (by name).
inline constexpr std::array<const char*, 5> kAllocatorCounterNames = {
    "alloc.device_buffers", "alloc.device_bytes", "alloc.device_peak_bytes", "alloc.host_buffers",
    kHostBytesCounter};

/// One rank's named counter series from its tracking allocator: the first sample() records every
/// counter, each later one only the counters whose value changed, so a series has one sample per
/// change and its values (not its times) depend on the program alone.
class AllocatorCounters {
 public:
  /// `t` must not be below the previous call's (the caller clamps its clock).
  void sample(SimTime t, const MemoryCounters& c);
  /// Every series as a trace counter of `rank`, by name (a series is never empty once sampled).
  std::vector<TraceCounter> take(std::uint32_t rank);

 private:
  std::array<std::vector<CounterSample>, kAllocatorCounterNames.size()> series_;
};

/// Forwards every call to `inner`; after a successful allocate or release it samples the curve
/// (every device allocate, and a release that changed the device bytes since the last sample) and
/// the counters (when given). The executor calls the allocator before the device, so the sample
/// after a device call sees the allocator's state after that op.
class SampledDevice final : public Device {
 public:
  SampledDevice(Device& inner, const TrackingAllocator& allocator, const HostWorld& world,
                std::vector<MemorySample>& curve, AllocatorCounters* counters)
      : inner_(inner), a_(allocator), w_(world), curve_(curve), counters_(counters) {}

  /// The state before op 0 (the counters' first samples; the curve starts at the first Alloc).
  void start();
  Status allocate(std::uint32_t buffer, Bytes bytes, MemoryPool pool, BufferCategory category,
                  bool zero_fill, bool init_weights) override;
  Status release(std::uint32_t buffer) override;
  Status work(Stream s, const WorkCall& c) override { return inner_.work(s, c); }
  Status collective(Stream s, const CollectiveCall& c) override { return inner_.collective(s, c); }
  Status record(Stream s, std::uint32_t op) override { return inner_.record(s, op); }
  Status wait(Stream s, std::uint32_t op) override { return inner_.wait(s, op); }
  Status synchronize() override { return inner_.synchronize(); }

 private:
  SimTime now();
  void sample_curve(SimTime t);

  Device& inner_;
  const TrackingAllocator& a_;
  const HostWorld& w_;
  std::vector<MemorySample>& curve_;
  AllocatorCounters* counters_;
  SimTime last_t_ = 0;
};

}  // namespace zerosim::exec
