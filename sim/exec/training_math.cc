// training_math.h.
#include "training_math.h"

namespace zerosim::exec {
namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

SyntheticGrads::SyntheticGrads(std::uint64_t seed, std::uint32_t rank, std::uint32_t step,
                               std::uint32_t micro_step, std::uint32_t param) {
  std::uint64_t h = splitmix64(seed);
  h = splitmix64(h ^ ((std::uint64_t{rank} << 32) | step));
  key_ = splitmix64(h ^ ((std::uint64_t{micro_step} << 32) | param));
}

float synthetic_grad(std::uint64_t seed, std::uint32_t rank, std::uint32_t step,
                     std::uint32_t micro_step, std::uint32_t param, Elements index) {
  return SyntheticGrads(seed, rank, step, micro_step, param)(index);
}

void adamw_step(const AdamWParams& h, std::uint64_t t, float* p, float* m, float* v, const float* g,
                Elements n) {
  const double bc1 = 1.0 - std::pow(static_cast<double>(h.beta1), static_cast<double>(t));
  const double bc2 = 1.0 - std::pow(static_cast<double>(h.beta2), static_cast<double>(t));
  const float step_size = static_cast<float>(h.lr / bc1);
  const float bc2_sqrt = static_cast<float>(std::sqrt(bc2));
  const float decay = 1.0f - h.lr * h.weight_decay;
  for (Elements i = 0; i < n; ++i) {
    p[i] *= decay;
    m[i] = h.beta1 * m[i] + (1.0f - h.beta1) * g[i];
    v[i] = h.beta2 * v[i] + (1.0f - h.beta2) * g[i] * g[i];
    const float denom = std::sqrt(v[i]) / bc2_sqrt + h.eps;
    p[i] -= step_size * m[i] / denom;
  }
}

void DynamicLossScaler::update(bool overflow) {
  if (overflow) {
    if (delayed_shift_ == 1 || hysteresis_ == 1)
      scale_ = std::max(scale_ / 2.0, min_scale_);
    else
      --hysteresis_;
    last_overflow_ = iter_;
  } else if ((iter_ - last_overflow_) % window_ == 0) {
    hysteresis_ = delayed_shift_;
    scale_ *= 2.0;
  }
  ++iter_;
}

}  // namespace zerosim::exec
