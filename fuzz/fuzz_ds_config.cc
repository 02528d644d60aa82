// libFuzzer target: the ds_config.json reader (load_ds_config_text), with and without the flag
// values a CLI run would pass (world size, micro batch, accumulation), since the batch rules
// differ when DeepSpeed derives a count from train_batch_size.
#include "fuzz_input.h"
#include "zerosim/ds_config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = zerosim::fuzz::text_of(data, size);
  zerosim::fuzz::check_result(zerosim::load_ds_config_text(text, "fuzz.json", {}));
  zerosim::AutoValues autos;
  autos.world_size = 64;
  autos.micro_batch = 4;
  autos.grad_accum_steps = 2;
  autos.hidden_size = 4096;
  zerosim::fuzz::check_result(zerosim::load_ds_config_text(text, "fuzz.json", autos));
  return 0;
}
