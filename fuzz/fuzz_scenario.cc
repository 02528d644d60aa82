// libFuzzer target: the scenario reader (load_scenario_text) with its inline deepspeed block and
// zoo models. Paths inside resolve against the current folder (run the target from a scratch
// folder: a fuzzed path can name any file, which the readers then refuse or read capped).
#include "fuzz_input.h"
#include "zerosim/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  zerosim::fuzz::check_result(
      zerosim::load_scenario_text(zerosim::fuzz::text_of(data, size), "scenario.json", ""));
  return 0;
}
