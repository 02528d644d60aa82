// libFuzzer target: the collective-log reader (read_collective_log, JSON lines).
#include "fuzz_input.h"
#include "zerosim/trace_compare.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  zerosim::fuzz::check_result(
      zerosim::read_collective_log(zerosim::fuzz::text_of(data, size), "collectives.jsonl"));
  return 0;
}
