// AdamW against hand-computed steps.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "models/engine/optimizer.hpp"

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

TEST(AdamW, UpdateWithSumsEqualsUpdateAndSumSquares) {
  // The step's norms come out of the update's pass: the same weights and moments as
  // adamw_update(), and sums equal to sum_squares() of the gradient read and the values
  // written, bit for bit. 37 elements: four blocks of eight lanes and a tail of five.
  const int n = 37;
  std::vector<float> w(n), g(n), m(n), v(n);
  for (int i = 0; i < n; ++i) {
    w[i] = 0.37f * std::sin(1.3f * i);
    g[i] = 0.11f * std::cos(0.7f * i) - 0.02f;
    m[i] = 0.01f * (i % 5);
    v[i] = 0.001f * (i % 3);
  }
  std::vector<float> w2 = w, m2 = m, v2 = v;
  AdamWConfig c;
  adamw_update(w.data(), g.data(), m.data(), v.data(), n, 3, c, true);
  const SquareSums s = adamw_update_with_sums(w2.data(), g.data(), m2.data(), v2.data(), n, 3, c, true);
  EXPECT_EQ(w, w2);
  EXPECT_EQ(m, m2);
  EXPECT_EQ(v, v2);
  EXPECT_EQ(s.grad, sum_squares(g.data(), n));
  EXPECT_EQ(s.value, sum_squares(w.data(), n));

  // The clearing variant (the executor's: no separate pass zeroes the gradients before
  // the next step): the same update and sums, and every gradient element zero after.
  std::vector<float> w3 = w2, m3 = m2, v3 = v2, g3 = g, w4 = w2, m4 = m2, v4 = v2;
  const SquareSums kept = adamw_update_with_sums(w4.data(), g.data(), m4.data(), v4.data(), n, 4, c, true);
  const SquareSums cleared =
      adamw_update_with_sums_clearing_grad(w3.data(), g3.data(), m3.data(), v3.data(), n, 4, c, true);
  EXPECT_EQ(w3, w4);
  EXPECT_EQ(m3, m4);
  EXPECT_EQ(v3, v4);
  EXPECT_EQ(cleared.grad, kept.grad);
  EXPECT_EQ(cleared.value, kept.value);
  EXPECT_EQ(g3, std::vector<float>(n, 0.0f));
}

TEST(AdamW, StepReportsEachParametersSums) {
  Param a = make_param("a", Tensor({3}), true), b = make_param("b", Tensor({10}), false);
  for (int i = 0; i < 3; ++i) a.value.data[i] = 1.0f + i, a.grad.data[i] = 0.5f - i;
  for (int i = 0; i < 10; ++i) b.value.data[i] = -0.1f * i, b.grad.data[i] = 0.25f * i;
  AdamW opt(AdamWConfig{}, {&a, &b});
  std::vector<SquareSums> sums;
  const Tensor ga = a.grad, gb = b.grad;
  opt.step(&sums);
  ASSERT_EQ(sums.size(), 2u);
  EXPECT_EQ(sums[0].grad, sum_squares(ga));
  EXPECT_EQ(sums[1].grad, sum_squares(gb));
  EXPECT_EQ(sums[0].value, sum_squares(a.value));
  EXPECT_EQ(sums[1].value, sum_squares(b.value));

  // clear_grads, with and without sums: the gradients are zero after the step.
  a.grad.data = {1.0f, 2.0f, 3.0f};
  b.grad.data.assign(10, 0.5f);
  opt.step(&sums, true);
  EXPECT_EQ(a.grad.data, std::vector<float>(3, 0.0f));
  EXPECT_EQ(b.grad.data, std::vector<float>(10, 0.0f));
  a.grad.data = {1.0f, 2.0f, 3.0f};
  opt.step(nullptr, true);
  EXPECT_EQ(a.grad.data, std::vector<float>(3, 0.0f));
}

}  // namespace
}  // namespace ibt::models
