// libFuzzer target: the nccl-tests output reader and fit (parse_nccl_tests), bare tables read as
// all-reduce.
#include "fuzz_input.h"
#include "zerosim/collective_model.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = zerosim::fuzz::text_of(data, size);
  zerosim::fuzz::check_result(zerosim::parse_nccl_tests(text, "nccl.txt"));
  zerosim::fuzz::check_result(
      zerosim::parse_nccl_tests(text, "nccl.txt", zerosim::CollectiveKind::AllReduce));
  return 0;
}
