// The CPU seconds of the whole process (every thread, user and kernel apart), for benchmarks of
// the host backend: its rank threads do the work, so Google Benchmark's "CPU" column (the main
// thread's) says nothing, and on a shared build machine the wall time measures the neighbours as
// much as the code. Counters user_s/sys_s are the timed loop's, per iteration. children() is the
// same for the child processes waited for (a benchmark that spawns the CLI: its whole-process CPU).
// Counter minflt: minor page faults per iteration (each a kernel entry and a zeroed page: most of
// the 405B plan's system time before its op vectors asked for huge pages).
#pragma once

#include <benchmark/benchmark.h>
#include <sys/resource.h>

namespace zerosim::bench {

struct ProcessCpu {
  double user = 0, sys = 0;
  double minflt = 0;  ///< minor page faults
  static ProcessCpu now() { return of(RUSAGE_SELF); }
  /// The terminated and waited-for children's CPU so far (getrusage RUSAGE_CHILDREN).
  static ProcessCpu children() { return of(RUSAGE_CHILDREN); }
  static ProcessCpu of(int who) {
    rusage u{};
    getrusage(who, &u);
    return {static_cast<double>(u.ru_utime.tv_sec) + static_cast<double>(u.ru_utime.tv_usec) * 1e-6,
            static_cast<double>(u.ru_stime.tv_sec) + static_cast<double>(u.ru_stime.tv_usec) * 1e-6,
            static_cast<double>(u.ru_minflt)};
  }
};

/// Sets user_s and sys_s: the CPU time since `before`, per iteration, and minflt, its page faults.
/// `children`: the spawned processes' CPU instead of this process's.
inline void report_process_cpu(benchmark::State& state, const ProcessCpu& before,
                               bool children = false) {
  const ProcessCpu after = children ? ProcessCpu::children() : ProcessCpu::now();
  const double n = state.iterations() > 0 ? static_cast<double>(state.iterations()) : 1.0;
  state.counters["user_s"] = (after.user - before.user) / n;
  state.counters["sys_s"] = (after.sys - before.sys) / n;
  state.counters["minflt"] = (after.minflt - before.minflt) / n;
}

}  // namespace zerosim::bench
