// MemoryLedger: every allocation the simulated program makes, and what it adds up to per rank role.
//
// The engine times ONE program (schedule.h) for a "timing role" and records, in event order, when
// each buffer becomes live and when it is released. Rank roles differ only in the sizes of their
// slot-sized buffers (grads_in_partition pieces, owned slices, ...), never in the times, so the
// ledger keeps two kinds of buffer:
//   * common buffers: one size for every role (the vast majority: parameters, activations,
//     autograd gradients, IPG buckets);
//   * role buffers: one size per role (Schedule buffers with a slot), stored sparsely: most slot
//     buffers are non-zero on few roles (a grads_in_partition piece exists only on the ranks whose
//     partition that flush touches first).
// Live bytes of role k after event e are C(e) + R_k(e): C is one curve shared by all roles and R_k
// only changes at role-buffer events that list role k. analyze() therefore splits the event
// sequence into intervals at role-buffer events, takes the maximum of C inside each interval once,
// builds a range-maximum table over the intervals, and finds role k's peak as the best
// (range max of C + R_k) over the runs of intervals where R_k is constant: O(E + m log m + Σ nnz)
// time, with E events, m role-buffer events and nnz the listed role sizes, and O(E + m log m + nnz)
// memory — independent of the number of ranks (Tracy's interval idea, unpacked).
//
// Order of events: calls must come in non-decreasing time; the call order breaks ties (an
// allocation issued before a release at the same nanosecond counts both as live at once, as the
// CUDA caching allocator sees a program that allocates before it frees). Live bytes "at t" are the
// bytes after every event with time <= t.
//
// Out of memory is a result, not an error: analyze() reports for each role the first event that
// takes its device bytes above the capacity (OomEvent); the ledger keeps recording, so the caller
// decides whether to continue. Misuse (unknown buffer, double allocation, double free, time going
// backwards) is a Diagnostic and changes nothing.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "zerosim/diagnostic.h"
#include "zerosim/ir_types.h"
#include "zerosim/memory_types.h"
#include "zerosim/units.h"

namespace zerosim {

/// t_free of an allocation that is still live at the end of the run.
inline constexpr SimTime kNeverFreed = std::numeric_limits<SimTime>::max();
/// Allocation::role of an allocation that every role makes (common buffer, or a role buffer).
inline constexpr std::uint32_t kAllRoles = 0xFFFFFFFFu;

/// One role's size of a role buffer.
struct RoleBytes {
  std::uint32_t role = 0;
  Bytes bytes = 0;
  bool operator==(const RoleBytes&) const = default;
};

/// A buffer the ledger knows: a common size, or one size per role.
struct LedgerBuffer {
  std::string name;
  BufferCategory category = BufferCategory::Temp;
  MemoryPool pool = MemoryPool::Device;
  Bytes bytes = 0;                    ///< common size (the largest role's size for a role buffer)
  bool per_role = false;              ///< sizes differ per role (role_bytes)
  std::vector<RoleBytes> role_bytes;  ///< per_role: the roles with a non-zero size, ascending role
  /// Size on role `role` (the common size for a common buffer; 0 for an unlisted role). O(log n).
  Bytes bytes_for(std::uint32_t role) const;
};

/// One allocation: the interval [t_alloc, t_free) during which a buffer is live.
struct Allocation {
  std::uint32_t id = 0;            ///< index into MemoryLedger::allocations()
  std::uint32_t buffer = 0;        ///< ledger buffer id
  std::uint32_t role = kAllRoles;  ///< kAllRoles: made by every role (sizes per LedgerBuffer)
  MemoryPool pool = MemoryPool::Device;
  BufferCategory category = BufferCategory::Temp;
  Bytes bytes = 0;               ///< size on `role` (the largest role's size when role = kAllRoles)
  SimTime t_alloc = 0;           ///< ns
  SimTime t_free = kNeverFreed;  ///< ns; kNeverFreed while live
};

/// Per-role outcome of analyze().
struct RoleMemory {
  MemoryPeak device;            ///< MemoryPool::Device, whole run
  MemoryPeak steady;            ///< MemoryPool::Device, from analyze()'s steady_from on
  MemoryPeak host;              ///< MemoryPool::Host and Pinned together
  std::optional<OomEvent> oom;  ///< first device OOM of this role, if any
};

class MemoryLedger {
 public:
  /// A ledger for one role.
  MemoryLedger() : MemoryLedger(1) {}
  /// A ledger for `roles` rank roles (at least 1; 0 is treated as 1).
  explicit MemoryLedger(std::uint32_t roles);

  std::uint32_t role_count() const { return roles_; }
  /// Empties the ledger for `roles` roles (0 is treated as 1), keeping its arrays' storage: a
  /// ledger refilled per simulation (EngineWorkspace, engine.h) allocates nothing once warm.
  void reset(std::uint32_t roles);
  /// Pre-allocates room for `buffers` buffers and `events` allocate/release calls.
  void reserve(std::size_t buffers, std::size_t events);

  /// Declares a buffer of the same size on every role; returns its id. The name may be empty (the
  /// simulator keeps names in the schedule); messages then call the buffer "#<id>".
  std::uint32_t add_buffer(std::string name, BufferCategory category, MemoryPool pool, Bytes bytes);
  /// Declares a buffer with one size per role (`bytes_per_role.size()` must equal role_count(),
  /// otherwise a Diagnostic).
  Result<std::uint32_t> add_role_buffer(std::string name, BufferCategory category, MemoryPool pool,
                                        const std::vector<Bytes>& bytes_per_role);
  /// The same with only the non-zero sizes listed (roles ascending, each below role_count(),
  /// otherwise a Diagnostic); unlisted roles have size 0. Costs O(listed roles), not O(roles).
  Result<std::uint32_t> add_sparse_role_buffer(std::string name, BufferCategory category,
                                               MemoryPool pool, std::vector<RoleBytes> sizes);

  /// Buffer `buffer` becomes live at `t` (ns) on every role. Errors: unknown id, already live, t
  /// before the previous event. O(1) amortised.
  std::optional<Diagnostic> allocate(std::uint32_t buffer, SimTime t);
  /// Buffer `buffer` is released at `t`. Errors: unknown id, not live (double free), t before the
  /// previous event. O(1).
  std::optional<Diagnostic> release(std::uint32_t buffer, SimTime t);
  /// allocate() and release() for callers that report problems themselves: true when recorded;
  /// false (nothing recorded) where allocate() or release() would return a Diagnostic. Inline
  /// (the simulator records every Alloc and Free op through them).
  bool try_allocate(std::uint32_t buffer, SimTime t) {
    if (buffer >= buffers_.size() || t < last_t_ || live_alloc_[buffer] != kNone) return false;
    const LedgerBuffer& b = buffers_[buffer];
    const auto id = static_cast<std::uint32_t>(allocations_.size());
    Allocation& a = allocations_.emplace_back();
    a.id = id;
    a.buffer = buffer;
    a.pool = b.pool;
    a.category = b.category;
    a.bytes = b.bytes;
    a.t_alloc = t;
    live_alloc_[buffer] = id;
    events_.push_back({t, buffer, true});
    last_t_ = t;
    return true;
  }
  bool try_release(std::uint32_t buffer, SimTime t) {
    if (buffer >= buffers_.size() || t < last_t_ || live_alloc_[buffer] == kNone) return false;
    allocations_[live_alloc_[buffer]].t_free = t;
    live_alloc_[buffer] = kNone;
    events_.push_back({t, buffer, false});
    last_t_ = t;
    return true;
  }

  const std::vector<LedgerBuffer>& buffers() const { return buffers_; }
  /// One record per allocate() call, in call order.
  const std::vector<Allocation>& allocations() const { return allocations_; }
  /// The allocations as role `role` sees them (role buffers with that role's size). O(allocations).
  std::vector<Allocation> allocations_for_role(std::uint32_t role) const;
  /// Events recorded (allocations + releases).
  std::size_t event_count() const { return events_.size(); }
  /// True when the buffer is live now.
  bool is_live(std::uint32_t buffer) const;

  /// Bytes of `pool` live on `role` after every event with time <= t. O(events).
  Bytes live_bytes(std::uint32_t role, SimTime t, MemoryPool pool = MemoryPool::Device) const;

  /// Peaks and first OOM of every role. `device_capacity` 0 means no limit (no OOM). The steady
  /// peak (RoleMemory::steady) only looks at the window from `steady_from` (ns) on: the live bytes
  /// at steady_from (as live_bytes() defines them: after every event at or before it) and after
  /// every later event. O(E + m log m + Σ listed
  /// role sizes of the m role-buffer events): a role only costs the events that change its size.
  std::vector<RoleMemory> analyze(Bytes device_capacity, SimTime steady_from = 0) const;

  /// Role `role`'s device curve: one sample per event that changes its device bytes, in event
  /// order (several samples may share a time). O(events).
  std::vector<MemorySample> device_curve(std::uint32_t role) const;

  /// Bytes the ledger itself holds (benchmarks show it does not grow with ranks).
  std::size_t footprint_bytes() const;

  /// One recorded event (allocate or release), in call order.
  struct Event {
    SimTime t = 0;
    std::uint32_t buffer = 0;
    bool alloc = true;
  };
  const std::vector<Event>& events() const { return events_; }

 private:
  std::optional<Diagnostic> check(std::uint32_t buffer, SimTime t, const char* what) const;
  // The quoted name, or "#<id>" for an unnamed buffer (messages about it).
  std::string label(std::uint32_t buffer) const;

  std::uint32_t roles_ = 1;
  std::vector<LedgerBuffer> buffers_;
  std::vector<std::uint32_t> live_alloc_;  // per buffer: id of its live allocation, or kNone
  std::vector<Allocation> allocations_;
  std::vector<Event> events_;
  SimTime last_t_ = 0;
};

}  // namespace zerosim
