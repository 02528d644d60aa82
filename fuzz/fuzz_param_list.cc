// libFuzzer target: the parameter-list reader (load_param_list_text).
#include "fuzz_input.h"
#include "zerosim/model_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  zerosim::fuzz::check_result(
      zerosim::load_param_list_text(zerosim::fuzz::text_of(data, size), "params.json"));
  return 0;
}
