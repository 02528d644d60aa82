// HostWorld (host_world.h): the rendezvous of a communicator group's ranks.
#include "host_world.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <ctime>
#include <string>

namespace zerosim::exec {
namespace {

std::string describe(const CollectiveCall& c) {
  std::string s = std::string(collective_name(c.kind)) + "(" + std::to_string(c.numel) + " -> " +
                  std::to_string(c.out_numel) + " " + std::string(dtype_name(c.dtype));
  if (c.reduce_op != ReduceOp::None) s += ", " + std::string(reduce_op_name(c.reduce_op));
  if (c.root >= 0) s += ", root " + std::to_string(c.root);
  return s + ")";
}

bool agree(const CollectiveCall& a, const CollectiveCall& b) {
  return a.kind == b.kind && a.numel == b.numel && a.out_numel == b.out_numel &&
         a.dtype == b.dtype && a.reduce_op == b.reduce_op && a.root == b.root &&
         a.group_size == b.group_size;
}

Diagnostic error(std::string message) {
  return Diagnostic{Severity::Error, "host backend", "", std::move(message), {}};
}

}  // namespace

HostWorld::Group& HostWorld::group(std::uint32_t communicator, std::uint32_t first_rank,
                                   std::uint32_t size) {
  std::lock_guard<std::mutex> lock(groups_m_);
  auto& g = groups_[{communicator, first_rank}];
  if (!g) g = std::make_unique<Group>(size);
  return *g;
}

namespace {

// FUTEX_WAIT on `word` while it holds `expected`, for at most `ns` (spurious returns are fine).
void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected, std::int64_t ns) {
  timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, &ts,
          nullptr, 0);
}
void futex_wake_all(std::atomic<std::uint32_t>& word) {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
          nullptr, 0);
}

}  // namespace

Status HostWorld::arrive(std::uint32_t rank, const CollectiveCall& call, const ArrivalSite& where) {
  if (aborted()) return error("stopped: another rank failed first");
  const std::uint32_t n = call.group_size;
  const std::uint32_t first = call.group_first, stride = call.group_stride;
  if (call.rank_in_group >= n || first + call.rank_in_group * stride != rank)
    return error("rank " + std::to_string(rank) + " is not member " +
                 std::to_string(call.rank_in_group) + " of the group starting at rank " +
                 std::to_string(first) + " (stride " + std::to_string(stride) + ")");
  Group& g = group(call.communicator, first, n);
  const std::uint32_t gen = g.generation.load(std::memory_order_acquire);
  g.calls[call.rank_in_group] = call;
  g.where[call.rank_in_group] = where;
  g.arrived_at[call.rank_in_group].store(gen + 1, std::memory_order_relaxed);
  if (g.arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == n) {
    g.mismatch.clear();
    for (std::uint32_t m = 1; m < n && g.mismatch.empty(); ++m)
      if (!agree(g.calls[0], g.calls[m]))
        g.mismatch = "collectives disagree: rank " + std::to_string(first) + " called " +
                     describe(g.calls[0]) + " at " + g.where[0].str() + ", rank " +
                     std::to_string(first + m * stride) + " called " + describe(g.calls[m]) +
                     " at " + g.where[m].str();
    g.arrived.store(0, std::memory_order_relaxed);
    g.generation.fetch_add(1, std::memory_order_release);
    futex_wake_all(g.generation);
    if (!g.mismatch.empty()) return error(g.mismatch);
    return std::nullopt;
  }
  const auto deadline = Clock::now() + stall_timeout_;
  while (g.generation.load(std::memory_order_acquire) == gen) {
    if (aborted()) return error("stopped: another rank failed first");
    const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      if (g.generation.load(std::memory_order_acquire) != gen) break;
      std::string missing;
      std::uint32_t count = 0;
      for (std::uint32_t m = 0; m < n; ++m)
        if (g.arrived_at[m].load(std::memory_order_relaxed) != gen + 1) {
          if (count < 8)
            missing += (missing.empty() ? "" : ", ") + std::to_string(first + m * stride);
          ++count;
        }
      if (count > 8) missing += " and " + std::to_string(count - 8) + " more";
      return error("stalled: waited " + std::to_string(stall_timeout_.count()) + " ms at " +
                   std::to_string(now_ns() / 1000000) + " ms into the run for rank(s) " + missing +
                   " to reach this collective (--stall-timeout)");
    }
    futex_wait(g.generation, gen, std::min<std::int64_t>(left.count(), 50000000));  // <= 50 ms
  }
  if (!g.mismatch.empty()) return error(g.mismatch);
  return std::nullopt;
}

void HostWorld::abort(const Diagnostic& why) {
  {
    std::lock_guard<std::mutex> lock(failure_m_);
    if (!failure_) failure_ = why;
  }
  aborted_.store(true, std::memory_order_release);
  std::lock_guard<std::mutex> lock(groups_m_);
  for (auto& [key, g] : groups_) futex_wake_all(g->generation);
}

std::optional<Diagnostic> HostWorld::first_failure() const {
  std::lock_guard<std::mutex> lock(failure_m_);
  return failure_;
}

}  // namespace zerosim::exec
