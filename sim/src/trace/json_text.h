// Small helpers shared by the trace, Chrome-trace and summary writers: JSON string escaping and a
// deterministic number format (shortest round-trip decimal, identical on every run and platform
// with a conforming std::to_chars).
#pragma once

#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace zerosim::trace_text {

/// A JSON string literal; invalid UTF-8 is replaced rather than thrown on.
inline std::string str(std::string_view s) {
  return nlohmann::json(std::string(s))
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

/// Shortest decimal that reads back as the same double; non-finite values are written as 0.
inline std::string num(double x) {
  if (!std::isfinite(x)) return "0";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, r.ptr);
}

}  // namespace zerosim::trace_text
