// libFuzzer target: the schedule JSON reader (read_schedule_json). An accepted schedule is written
// back and must read again (the writer's precondition is what the reader accepts), and so must its
// dense slot form, to the same schedule.
#include <sstream>

#include "fuzz_input.h"
#include "zerosim/schedule_io.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto r = zerosim::read_schedule_json(zerosim::fuzz::text_of(data, size), "schedule.json");
  zerosim::fuzz::check_result(r);
  if (!r.ok()) return 0;
  std::ostringstream out;
  zerosim::write_schedule_json(r.value(), out);
  auto again = zerosim::read_schedule_json(out.str(), "rewritten.json");
  if (!again.ok()) std::abort();
  // The two spellings of the slots read to one schedule: rewritten, the same text.
  std::ostringstream dense;
  zerosim::write_schedule_json(r.value(), dense, zerosim::SlotsForm::Dense);
  auto from_dense = zerosim::read_schedule_json(dense.str(), "dense.json");
  if (!from_dense.ok()) std::abort();
  std::ostringstream a, b;
  zerosim::write_schedule_json(again.value(), a);
  zerosim::write_schedule_json(from_dense.value(), b);
  if (a.str() != b.str()) std::abort();
  return 0;
}
