// libFuzzer target: the trainer config reader (load_trainer_config_text): LLaMA-Factory and axolotl
// YAML through yaml-cpp, and TrainingArguments JSON. The first byte picks the format (its low bit:
// .yaml or .json), so one corpus reaches both readers; the rest is the file's text. Found so far: a
// use-after-free in module_list and a document starting with ',' on which yaml-cpp 0.7's LoadAll
// never returns (both fixed; their inputs are seeds in corpus/trainer_config).
#include "fuzz_input.h"
#include "zerosim/trainer_config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const char* path = (data[0] & 1U) != 0 ? "train.json" : "train.yaml";
  zerosim::fuzz::check_result(
      zerosim::load_trainer_config_text(zerosim::fuzz::text_of(data + 1, size - 1), path));
  return 0;
}
