// Numbers as the viewer prints them: bytes in binary units, durations in ns/µs/ms/s.
#pragma once

#include <string>
#include <vector>

#include "zerosim/trace.h"
#include "zerosim/units.h"

namespace zerosim::view {

/// "512 B", "1.5 KiB", "64.0 MiB", "1.25 GiB".
std::string format_bytes(Bytes b);
/// "850 ns", "12.3 us", "4.56 ms", "1.234 s".
std::string format_duration(SimTime ns);

/// The summary panel's time lines: the steady (last) step's time, compute and exposed
/// communication side by side ("steady step 1 of 2", ...), or the run's when it has no steps.
std::vector<std::string> step_time_lines(const Summary& s);

}  // namespace zerosim::view
