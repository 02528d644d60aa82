// libFuzzer target: the trace JSON reader (read_trace_json). An accepted trace goes through every
// consumer of a trace: the summary, the Chrome trace writer (flow midpoints) and the trace writer.
#include <sstream>

#include "fuzz_input.h"
#include "zerosim/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto r = zerosim::read_trace_json(zerosim::fuzz::text_of(data, size), "trace.json");
  zerosim::fuzz::check_result(r);
  if (!r.ok()) return 0;
  std::ostringstream out;
  zerosim::write_chrome_trace(r.value(), out);
  zerosim::write_summary_json(zerosim::summarize(r.value()), out);
  std::ostringstream again;
  zerosim::write_trace_json(r.value(), again);
  if (!zerosim::read_trace_json(again.str(), "rewritten.json").ok()) std::abort();
  return 0;
}
