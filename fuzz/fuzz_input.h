// What every fuzz target shares: the bytes libFuzzer hands over as the text a reader gets, and the
// oracle that a reader never accepts input while reporting an error (a Result is either ok with
// no error diagnostics or failed with at least one; every message renders).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "zerosim/diagnostic.h"

namespace zerosim::fuzz {

inline std::string text_of(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};  // NOLINT: libFuzzer's byte buffer
}

// A failed Result must say why; abort() makes libFuzzer keep the input as a crash.
template <class T>
void check_result(const Result<T>& r) {
  if (!r.ok() && !r.diagnostics().has_errors()) std::abort();
  for (const Diagnostic& d : r.diagnostics().items()) (void)d.to_string();
}

}  // namespace zerosim::fuzz
