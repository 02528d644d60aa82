// Small synthetic traces for the view model tests.
#pragma once

#include <string>

#include "zerosim/trace.h"

namespace zerosim::view::testing {

inline Span span(std::uint32_t rank, Stream stream, std::uint32_t op, SimTime start, SimTime dur,
                 std::string category = "forward", std::string name = "op") {
  Span s;
  s.rank = rank;
  s.stream = stream;
  s.op = op;
  s.start_ns = start;
  s.dur_ns = dur;
  s.category = std::move(category);
  s.name = std::move(name);
  return s;
}

inline TraceRank rank(std::uint32_t number, std::uint32_t role, std::uint64_t count = 1) {
  TraceRank r;
  r.rank = number;
  r.role = role;
  r.rank_count = count;
  return r;
}

inline MemorySample sample(SimTime t, Bytes param16, Bytes activation) {
  MemorySample m;
  m.t = t;
  m.by_category[static_cast<std::size_t>(BufferCategory::Param16)] = param16;
  m.by_category[static_cast<std::size_t>(BufferCategory::Activation)] = activation;
  m.total = param16 + activation;
  return m;
}

}  // namespace zerosim::view::testing
