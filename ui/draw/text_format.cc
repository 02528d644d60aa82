// Number formatting for labels and panels: see text_format.h.
#include "draw/text_format.h"

#include <array>
#include <cstdio>
#include <cstdlib>

namespace zerosim::view {

// The compute and exposed communication beside the step time were the whole run's: 485 ms of
// compute next to a 276 ms step at 2 steps (found by a new-user pass).
std::vector<std::string> step_time_lines(const Summary& s) {
  if (s.steps.empty())
    return {"run time       " + format_duration(s.total_ns),
            "compute        " + format_duration(s.compute_ns),
            "exposed comm   " + format_duration(s.exposed_comm_ns)};
  const StepSummary& last = s.steps.back();
  return {"steady step " + std::to_string(last.step) + " of " + std::to_string(s.steps.size()),
          "step time      " + format_duration(last.end_ns - last.start_ns),
          "compute        " + format_duration(last.compute_ns),
          "exposed comm   " + format_duration(last.exposed_comm_ns)};
}

std::string format_bytes(Bytes b) {
  static constexpr std::array<const char*, 5> kUnits = {"B", "KiB", "MiB", "GiB", "TiB"};
  if (b < 1024) return std::to_string(b) + " B";
  double v = static_cast<double>(b);
  std::size_t u = 0;
  while (v >= 1024.0 && u + 1 < kUnits.size()) {
    v /= 1024.0;
    ++u;
  }
  std::array<char, 32> buf{};
  std::snprintf(buf.data(), buf.size(), v < 10 ? "%.2f %s" : "%.1f %s", v, kUnits[u]);
  return buf.data();
}

std::string format_duration(SimTime ns) {
  std::array<char, 32> buf{};
  const double a = static_cast<double>(std::llabs(ns));
  const double v = static_cast<double>(ns);
  if (a < 1e3) {
    std::snprintf(buf.data(), buf.size(), "%lld ns", static_cast<long long>(ns));
  } else if (a < 1e6) {
    std::snprintf(buf.data(), buf.size(), "%.3g us", v / 1e3);
  } else if (a < 1e9) {
    std::snprintf(buf.data(), buf.size(), "%.3g ms", v / 1e6);
  } else {
    std::snprintf(buf.data(), buf.size(), "%.4g s", v / 1e9);
  }
  return buf.data();
}

}  // namespace zerosim::view
