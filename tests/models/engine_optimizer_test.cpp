// AdamW against hand-computed steps.
#include <gtest/gtest.h>

#include <cmath>

#include "models/optimizer.hpp"

namespace ibt::models {
namespace {

TEST(AdamW, FirstStepIsLrTimesSignPlusDecay) {
  // Step 1: m_hat = g, v_hat = g^2, so the Adam part is g/(|g| + eps) = sign(g).
  Param p = make_param("w", Tensor({2}), true);
  p.value.data = {1.0f, -2.0f};
  p.grad.data = {0.5f, -3.0f};
  AdamWConfig c;
  c.lr = 0.1;
  c.weight_decay = 0.01;
  c.eps = 0;
  AdamW opt(c, {&p});
  opt.step();
  EXPECT_NEAR(p.value.data[0], 1.0 - 0.1 * (1.0 + 0.01 * 1.0), 1e-7);
  EXPECT_NEAR(p.value.data[1], -2.0 - 0.1 * (-1.0 + 0.01 * -2.0), 1e-6);
}

TEST(AdamW, SecondStepWithBiasCorrection) {
  Param p = make_param("w", Tensor({1}), false);  // no decay
  p.value.data = {0.5f};
  AdamWConfig c;
  c.lr = 0.01;
  c.beta1 = 0.9;
  c.beta2 = 0.99;
  c.eps = 1e-8;
  c.weight_decay = 0.5;  // ignored: decay == false
  AdamW opt(c, {&p});
  p.grad.data = {1.0f};
  opt.step();
  p.grad.data = {-2.0f};
  opt.step();
  // By hand: m1 = 0.1, v1 = 0.01; p1 = 0.5 - 0.01 * 1 = 0.49.
  // m2 = 0.09 - 0.2 = -0.11, v2 = 0.0099 + 0.04 = 0.0499;
  // m_hat = -0.11 / 0.19, v_hat = 0.0499 / 0.0199.
  const double m_hat = -0.11 / (1 - 0.81), v_hat = 0.0499 / (1 - 0.9801);
  const double expect = 0.49 - 0.01 * m_hat / (std::sqrt(v_hat) + 1e-8);
  EXPECT_NEAR(p.value.data[0], expect, 1e-6);
  EXPECT_EQ(opt.steps(), 2);
}

TEST(AdamW, SliceUpdateEqualsWholeUpdate) {
  // ZeRO-1 steps each shard separately: the result must be identical.
  std::vector<float> w(6), g(6), m(6, 0), v(6, 0);
  for (int i = 0; i < 6; ++i) w[i] = 0.1f * i, g[i] = 0.3f - 0.1f * i;
  std::vector<float> w2 = w, m2 = m, v2 = v;
  AdamWConfig c;
  adamw_update(w.data(), g.data(), m.data(), v.data(), 6, 1, c, true);
  adamw_update(w2.data(), g.data(), m2.data(), v2.data(), 3, 1, c, true);
  adamw_update(w2.data() + 3, g.data() + 3, m2.data() + 3, v2.data() + 3, 3, 1, c, true);
  EXPECT_EQ(w, w2);
}

}  // namespace
}  // namespace ibt::models
