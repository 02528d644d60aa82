// training_math.h.
#include "training_math.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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
  Elements i = 0;
#if defined(__SSE2__)
  // Four lanes at a time: the scalar loop's operations in its order, each an IEEE float32
  // operation (sqrt included), so every lane's bits are the scalar loop's. (Compilers leave the
  // scalar loop unvectorised: std::sqrt may set errno.)
  const __m128 k_decay = _mm_set1_ps(decay), k_b1 = _mm_set1_ps(h.beta1),
               k_1b1 = _mm_set1_ps(1.0f - h.beta1), k_b2 = _mm_set1_ps(h.beta2),
               k_1b2 = _mm_set1_ps(1.0f - h.beta2), k_bc2 = _mm_set1_ps(bc2_sqrt),
               k_eps = _mm_set1_ps(h.eps), k_step = _mm_set1_ps(step_size);
  for (; i + 4 <= n; i += 4) {
    const __m128 gi = _mm_loadu_ps(g + i);
    const __m128 pi = _mm_mul_ps(_mm_loadu_ps(p + i), k_decay);
    const __m128 mi = _mm_add_ps(_mm_mul_ps(k_b1, _mm_loadu_ps(m + i)), _mm_mul_ps(k_1b1, gi));
    const __m128 vi =
        _mm_add_ps(_mm_mul_ps(k_b2, _mm_loadu_ps(v + i)), _mm_mul_ps(_mm_mul_ps(k_1b2, gi), gi));
    const __m128 denom = _mm_add_ps(_mm_div_ps(_mm_sqrt_ps(vi), k_bc2), k_eps);
    _mm_storeu_ps(m + i, mi);
    _mm_storeu_ps(v + i, vi);
    _mm_storeu_ps(p + i, _mm_sub_ps(pi, _mm_div_ps(_mm_mul_ps(k_step, mi), denom)));
  }
#endif
  for (; i < n; ++i) {
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
