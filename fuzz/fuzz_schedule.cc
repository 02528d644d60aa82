// libFuzzer target: the schedule JSON reader (read_schedule_json). An accepted schedule is written
// back and must read again (the writer's precondition is what the reader accepts).
#include <sstream>

#include "fuzz_input.h"
#include "zerosim/schedule_io.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto r = zerosim::read_schedule_json(zerosim::fuzz::text_of(data, size), "schedule.json");
  zerosim::fuzz::check_result(r);
  if (!r.ok()) return 0;
  std::ostringstream out;
  zerosim::write_schedule_json(r.value(), out);
  if (!zerosim::read_schedule_json(out.str(), "rewritten.json").ok()) std::abort();
  return 0;
}
