// Links against zerosim_trace (and zerosim_base) only and calls every public function of the trace
// format, so that a trace source calling into the core fails the build with an undefined
// reference: the trace target cannot see the core (sim/README.md). Run as ctest
// layering.trace_links_alone: it also round-trips a small trace.
#include <iostream>
#include <sstream>

#include "zerosim/trace.h"

int main() {
  zerosim::Trace t;
  t.meta.model = "link-check";
  t.ranks.push_back({});
  zerosim::Span s;
  s.rank = 0;
  s.name = "fwd";
  s.category = "forward";
  s.dur_ns = 5;
  t.spans.push_back(s);
  std::ostringstream trace_text, chrome, summary;
  zerosim::write_trace_json(t, trace_text);
  zerosim::write_chrome_trace(t, chrome);
  zerosim::write_summary_json(zerosim::summarize(t), summary);
  auto back = zerosim::read_trace_json(trace_text.str(), "link-check");
  auto missing = zerosim::read_trace_file("/nonexistent/zerosim-link-check.json");
  if (!back.ok() || missing.ok() || back.value().spans.size() != 1 ||
      zerosim::format_us(1500) != "1.500" || zerosim::summarize(t).compute_ns != 5) {
    std::cerr << "trace round trip failed\n";
    return 1;
  }
  std::cout << "trace target links alone: " << trace_text.str().size() << " bytes round-tripped\n";
  return 0;
}
