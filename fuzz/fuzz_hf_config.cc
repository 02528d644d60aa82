// libFuzzer target: the Hugging Face config.json reader (load_hf_config_text), which also builds
// the model it describes (layer and parameter arithmetic on whatever sizes the file states).
#include "fuzz_input.h"
#include "zerosim/model_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  zerosim::fuzz::check_result(
      zerosim::load_hf_config_text(zerosim::fuzz::text_of(data, size), "config.json"));
  return 0;
}
