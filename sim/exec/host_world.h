// HostWorld: what the rank threads of the host backend share — one rendezvous per communicator
// group, the abort flag and the first failure. Private to sim/exec.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "zerosim/executor.h"

namespace zerosim::exec {

/// Where a rank arrived from, for messages only: "rank R, op N (label)" is built when a message
/// needs it, not on every collective of every rank (a 64-rank run makes a million arrivals).
class ArrivalSite {
 public:
  ArrivalSite() = default;
  ArrivalSite(const char* text) : text_(text) {}  // NOLINT(google-explicit-constructor): tests
  ArrivalSite(const Schedule& s, std::uint32_t rank, std::uint32_t op)
      : schedule_(&s), rank_(rank), op_(op) {}
  std::string str() const { return schedule_ ? where(*schedule_, rank_, op_) : text_; }

 private:
  const char* text_ = "";
  const Schedule* schedule_ = nullptr;
  std::uint32_t rank_ = 0, op_ = 0;
};

class HostWorld {
 public:
  using Clock = std::chrono::steady_clock;

  explicit HostWorld(std::chrono::milliseconds stall_timeout)
      : stall_timeout_(stall_timeout), start_(Clock::now()) {}

  /// Rank `rank` arrives at its next collective on `call.communicator`. Returns once every rank of
  /// its group has arrived with an agreeing call; errors: calls that disagree, the world aborted by
  /// another rank's failure, ranks that did not arrive within the stall timeout.
  Status arrive(std::uint32_t rank, const CollectiveCall& call, const ArrivalSite& where);

  /// Ends the run: every waiting rank returns. The first failure is kept.
  void abort(const Diagnostic& why);
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }
  std::optional<Diagnostic> first_failure() const;

  /// Nanoseconds since the world started (host steady clock).
  std::int64_t now_ns() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start_).count();
  }
  std::chrono::milliseconds stall_timeout() const { return stall_timeout_; }

 private:
  // A reusable barrier on a futex word: arrivals count up, the last one checks that the calls
  // agree and bumps `generation`, which wakes the waiters (no mutex for them to fight over on the
  // way out). A generation cannot complete before every member has arrived, so a member's slot and
  // the mismatch text are stable until that member arrives again.
  struct Group {
    explicit Group(std::uint32_t size)
        : calls(size), where(size), arrived_at(new std::atomic<std::uint32_t>[size]) {
      for (std::uint32_t i = 0; i < size; ++i) arrived_at[i].store(0);
    }
    std::atomic<std::uint32_t> generation{0};
    std::atomic<std::uint32_t> arrived{0};
    std::vector<CollectiveCall> calls;
    std::vector<ArrivalSite> where;  ///< per member: the op it arrived with
    /// per member: the generation it last arrived at + 1
    std::unique_ptr<std::atomic<std::uint32_t>[]> arrived_at;
    std::string mismatch;  ///< set when the last generation's calls disagreed
  };
  Group& group(std::uint32_t communicator, std::uint32_t first_rank, std::uint32_t size);

  std::chrono::milliseconds stall_timeout_;
  Clock::time_point start_;
  std::mutex groups_m_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::unique_ptr<Group>> groups_;
  std::atomic<bool> aborted_{false};
  mutable std::mutex failure_m_;
  std::optional<Diagnostic> failure_;
};

}  // namespace zerosim::exec
