// Paper accounting: model states as in the ZeRO paper (Rajbhandari et al. 2020, "ZeRO: Memory
// Optimizations Toward Training Trillion Parameter Models", §5 and Figure 1): mixed-precision Adam
// keeps 2Ψ fp16 parameters, 2Ψ fp16 gradients and KΨ optimizer state (K = 12: fp32 parameters,
// momentum, variance). P_os divides the K part by N, P_os+g also the gradients, P_os+g+p
// everything: 16Ψ, 4Ψ + 12Ψ/N, 2Ψ + 14Ψ/N, 16Ψ/N. The paper does not count runtime buffers, so
// paper mode reports none; activations and overheads are the same as in DeepSpeed mode, so the two
// modes differ only in layers 1 and 2.
#include "memory/accounting.h"
#include "memory/exact_math.h"
#include "zerosim/memory_model.h"

namespace zerosim {

Bytes paper_model_states(Elements psi, std::uint64_t n, int stage, std::uint64_t k) {
  if (n == 0 || stage < 0 || stage > 3) return 0;
  using memory::mul128;
  using memory::U128;
  // One floor, on the exact product: floor(x·Ψ / N) with x the bytes per parameter that are split.
  const U128 whole = stage == 0 ? 4 + k : stage == 1 ? 4 : stage == 2 ? 2 : 0;
  const U128 split = stage == 0 ? 0 : stage == 1 ? k : stage == 2 ? 2 + k : 4 + k;
  return memory::clamp64(memory::add128(mul128(whole, psi), mul128(split, psi) / n));
}

namespace memory {

void add_paper_terms(const AccountingInput& in, ReportBuilder& rb) {
  const int stage = in.ds.zero.stage;
  const std::uint64_t n = in.world;
  const Elements psi_all = in.model.num_parameters();
  const Elements psi = in.model.num_trainable();
  constexpr std::uint64_t kK = 12;
  auto split = [n](std::uint64_t bytes_per_param, Elements count, bool partitioned) {
    U128 b = mul128(bytes_per_param, count);
    return clamp64(partitioned ? b / n : b);
  };
  const Bytes params = split(2, psi_all, stage >= 3);
  const Bytes grads = split(2, psi, stage >= 2);
  Bytes opt = split(kK, psi, stage >= 1);
  // With every parameter trainable, keep the one-floor total of paper_model_states exactly.
  if (psi_all == psi) {
    const Bytes total = paper_model_states(psi, n, stage, kK);
    opt = total >= sat_add(params, grads) ? total - params - grads : 0;
  }
  const std::string by_n = " / N";
  rb.persistent(Layer::Params, std::string("fp16 parameters 2Ψ") + (stage >= 3 ? by_n : ""),
                params);
  rb.persistent(Layer::Grads, std::string("fp16 gradients 2Ψ") + (stage >= 2 ? by_n : ""), grads);
  rb.persistent(Layer::OptimizerStates,
                std::string("optimizer states KΨ, K = 12 (fp32 params, momentum, variance)") +
                    (stage >= 1 ? by_n : ""),
                opt);
  rb.note(
      "paper accounting (ZeRO paper §5): mixed-precision Adam model states only (2 + 2 + 12 bytes "
      "per parameter whatever the dtypes); runtime buffers are not counted");
}

}  // namespace memory
}  // namespace zerosim
