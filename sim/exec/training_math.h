// The numerics a data-mode run needs, written once for every backend's reference: deterministic
// synthetic gradients, AdamW on an fp32 shard, DeepSpeed's dynamic loss scaler and its combined
// unscale-and-clip factor. Sources: torch.optim.AdamW (decoupled weight decay, bias correction);
// deepspeed/runtime/fp16/loss_scaler.py DynamicLossScaler.update_scale (defaults from the fp16
// config: initial_scale_power 16, loss_scale_window 1000, hysteresis 2, min_loss_scale 1); and the
// step()'s "scale = loss_scale; if clip > 0: scale *= max(1, (total/loss_scale + 1e-6)/clip)"
// (shared/docs/deepspeed_zero.md §5, §7).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "zerosim/units.h"

namespace zerosim::exec {

/// A gradient element in [-1, 1), different for every (seed, rank, step, micro-step, param,
/// element): SplitMix64 over the packed key, so any backend computes the same value anywhere.
float synthetic_grad(std::uint64_t seed, std::uint32_t rank, std::uint32_t step,
                     std::uint32_t micro_step, std::uint32_t param, Elements index);

/// synthetic_grad for one (seed, rank, step, micro-step, param), element by element: the key is
/// hashed once, so each element costs one SplitMix64 step (the same values as synthetic_grad).
class SyntheticGrads {
 public:
  SyntheticGrads(std::uint64_t seed, std::uint32_t rank, std::uint32_t step,
                 std::uint32_t micro_step, std::uint32_t param);
  float operator()(Elements index) const {  // inline: the per-element loop of every stand-in
    std::uint64_t h = key_ ^ index;
    h += 0x9E3779B97F4A7C15ull;  // SplitMix64
    h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
    h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
    h ^= h >> 31;
    // 24 random bits -> [-1, 1) exactly representable in float.
    return static_cast<float>(static_cast<std::int64_t>(h >> 40) - (std::int64_t{1} << 23)) *
           (1.0f / static_cast<float>(std::int64_t{1} << 23));
  }

 private:
  std::uint64_t key_;
};

struct AdamWParams {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.01f;
};

/// One AdamW step (step number `t` >= 1) on `n` fp32 elements: p -= lr·wd·p; m, v updated; p -=
/// lr · (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps). Element-wise, so any partitioning of p
/// gives the same bits as the whole.
void adamw_step(const AdamWParams& h, std::uint64_t t, float* p, float* m, float* v, const float* g,
                Elements n);

/// DeepSpeed's DynamicLossScaler (consecutive_hysteresis false, raise_error_at_min_scale false).
class DynamicLossScaler {
 public:
  explicit DynamicLossScaler(double init_scale = 65536.0, std::uint32_t scale_window = 1000,
                             std::uint32_t hysteresis = 2, double min_scale = 1.0)
      : scale_(init_scale),
        window_(scale_window),
        delayed_shift_(hysteresis),
        hysteresis_(hysteresis),
        min_scale_(min_scale) {}
  double scale() const { return scale_; }
  /// After a step's overflow check: an overflow halves the scale once the hysteresis is used up;
  /// `scale_window` clean steps since the last overflow double it.
  void update(bool overflow);

 private:
  double scale_;
  std::uint32_t window_, delayed_shift_, hysteresis_;
  double min_scale_;
  std::int64_t iter_ = 0, last_overflow_ = -1;
};

/// The factor step() divides the gradients by: the loss scale, times the clip factor when
/// clipping is on and the unscaled global norm exceeds `clip`.
inline double combined_scale(double loss_scale, double total_norm, double clip) {
  double s = loss_scale;
  if (clip > 0) {
    const double factor = (total_norm / loss_scale + 1e-6) / clip;
    if (factor > 1) s *= factor;
  }
  return s;
}

}  // namespace zerosim::exec
