// training_math.h: synthetic gradients are deterministic and differ per key; AdamW matches a
// double-precision transcription of torch.optim.AdamW and is element-wise (a shard's update is the
// whole's); DeepSpeed's loss scaler follows its hysteresis and window rules; the combined scale.
#include "training_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

namespace zerosim::exec {
namespace {

TEST(TrainingMath, SyntheticGradientsAreDeterministicAndDistinct) {
  EXPECT_EQ(synthetic_grad(7, 1, 2, 3, 4, 5), synthetic_grad(7, 1, 2, 3, 4, 5));
  std::set<float> seen;
  for (std::uint32_t rank = 0; rank < 4; ++rank)
    for (std::uint32_t step = 0; step < 3; ++step)
      for (Elements i = 0; i < 50; ++i) {
        const float g = synthetic_grad(7, rank, step, 0, 9, i);
        EXPECT_GE(g, -1.0f);
        EXPECT_LT(g, 1.0f);
        seen.insert(g);
      }
  EXPECT_GT(seen.size(), 590u);  // 600 keys: collisions of 24-bit values are rare
  EXPECT_NE(synthetic_grad(7, 0, 0, 0, 0, 0), synthetic_grad(8, 0, 0, 0, 0, 0));
}

TEST(TrainingMath, AdamWMatchesTorchsFormulaAndIsElementwise) {
  const AdamWParams h{1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f};
  const Elements n = 64;
  std::vector<float> p(n), m(n, 0), v(n, 0), g(n);
  std::vector<double> pd(n), md(n, 0), vd(n, 0);
  for (Elements i = 0; i < n; ++i) pd[i] = p[i] = 0.5f - 0.01f * static_cast<float>(i);
  for (std::uint64_t t = 1; t <= 5; ++t) {
    for (Elements i = 0; i < n; ++i)
      g[i] = synthetic_grad(1, 0, static_cast<std::uint32_t>(t), 0, 0, i);
    adamw_step(h, t, p.data(), m.data(), v.data(), g.data(), n);
    for (Elements i = 0; i < n; ++i) {  // torch.optim.AdamW, single tensor, in double
      pd[i] *= 1.0 - 1e-2 * 0.1;
      md[i] = 0.9 * md[i] + 0.1 * g[i];
      vd[i] = 0.999 * vd[i] + 0.001 * double{g[i]} * g[i];
      const double bc1 = 1 - std::pow(0.9, t), bc2 = 1 - std::pow(0.999, t);
      pd[i] -= 1e-2 / bc1 * md[i] / (std::sqrt(vd[i]) / std::sqrt(bc2) + 1e-8);
    }
  }
  for (Elements i = 0; i < n; ++i) EXPECT_NEAR(p[i], pd[i], 2e-6) << i;
  // A shard updated alone gives the same bits as the same elements updated in the whole.
  std::vector<float> p2(n), m2(n, 0), v2(n, 0);
  for (Elements i = 0; i < n; ++i) p2[i] = 0.5f - 0.01f * static_cast<float>(i);
  for (std::uint64_t t = 1; t <= 5; ++t) {
    for (Elements i = 0; i < n; ++i)
      g[i] = synthetic_grad(1, 0, static_cast<std::uint32_t>(t), 0, 0, i);
    adamw_step(h, t, p2.data(), m2.data(), v2.data(), g.data(), 20);
    adamw_step(h, t, p2.data() + 20, m2.data() + 20, v2.data() + 20, g.data() + 20, n - 20);
  }
  EXPECT_EQ(p2, p);
}

TEST(TrainingMath, LossScalerHysteresisAndWindow) {
  DynamicLossScaler s(65536.0, 4, 2, 1.0);
  s.update(true);  // first overflow: hysteresis 2 -> 1, the scale stays
  EXPECT_EQ(s.scale(), 65536.0);
  s.update(true);  // second: halves
  EXPECT_EQ(s.scale(), 32768.0);
  for (int i = 0; i < 3; ++i) s.update(false);
  EXPECT_EQ(s.scale(), 32768.0);
  s.update(false);  // the 4th clean step since the overflow doubles it and resets hysteresis
  EXPECT_EQ(s.scale(), 65536.0);
  s.update(true);  // hysteresis back at 2: no shrink yet
  EXPECT_EQ(s.scale(), 65536.0);
  DynamicLossScaler low(2.0, 1000, 1, 1.0);
  low.update(true);
  low.update(true);
  low.update(true);
  EXPECT_EQ(low.scale(), 1.0);  // never below min_loss_scale
}

TEST(TrainingMath, CombinedScaleClipsOnlyAboveTheThreshold) {
  EXPECT_EQ(combined_scale(1024.0, 512.0, 0.0), 1024.0);  // clipping off
  EXPECT_EQ(combined_scale(1024.0, 512.0, 1.0), 1024.0);  // unscaled norm 0.5 < 1
  EXPECT_NEAR(combined_scale(1024.0, 4096.0, 1.0), 1024.0 * (4.0 + 1e-6), 1e-9);
}

}  // namespace
}  // namespace zerosim::exec
