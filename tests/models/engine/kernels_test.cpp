// The engine's hand-vectorised kernels against plain references: the fp32 exp of the
// softmax (exp_kernels.hpp), the double sum of squares behind the grad/param norms,
// and Tensor::resize's promise (same size: the buffer and its contents stay).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "models/engine/exp_kernels.hpp"
#include "models/engine/tensor.hpp"

namespace ibt::models {
namespace {

TEST(EngineKernels, ExpIsWithinTwoUlpsOverItsRange) {
  double worst = 0;
  for (float x = -87.0f; x <= 88.0f; x += 0.0007f) {
    const double exact = std::exp(static_cast<double>(x));
    worst = std::max(worst, std::fabs(exp_fp32(x) - exact) / exact);
  }
  // One ulp of a float is 2^-23 relative at most: 2 ulps.
  EXPECT_LT(worst, 2.0 * std::ldexp(1.0, -23));
  EXPECT_EQ(exp_fp32(0.0f), 1.0f);
  EXPECT_GT(exp_fp32(-1000.0f), 0.0f);  // clamped, not a NaN or a negative
  EXPECT_LT(exp_fp32(-1000.0f), 1e-37f);
}

TEST(EngineKernels, SumExpAndScaledExpMatchTheScalarFormula) {
  std::vector<float> z(1003), out(z.size());
  for (size_t i = 0; i < z.size(); ++i) z[i] = std::sin(0.37f * static_cast<float>(i)) * 9.0f;
  const float shift = 9.0f;
  // The reference takes the same fp32 argument z - shift (its rounding is not the exp's).
  double expect = 0;
  for (float v : z) expect += std::exp(static_cast<double>(v - shift));
  EXPECT_NEAR(sum_exp_shifted(z.data(), static_cast<int64_t>(z.size()), shift), expect, expect * 1e-6);
  scaled_exp_shifted(z.data(), static_cast<int64_t>(z.size()), shift, 0.5f, out.data());
  for (size_t i = 0; i < z.size(); ++i)
    EXPECT_NEAR(out[i], 0.5 * std::exp(static_cast<double>(z[i] - shift)), 0.5 * std::exp(z[i] - shift) * 3e-7) << i;
}

TEST(EngineKernels, SumSquaresEqualsTheSequentialDoubleSum) {
  std::vector<float> x(12345);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::cos(0.01f * static_cast<float>(i)) * 3.0f;
  double expect = 0;
  for (float v : x) expect += static_cast<double>(v) * v;
  EXPECT_NEAR(sum_squares(x.data(), static_cast<int64_t>(x.size())), expect,
              expect * 1e-12);  // only the order of the sum differs
  EXPECT_EQ(sum_squares(x.data(), 3),
            static_cast<double>(x[0]) * x[0] + static_cast<double>(x[1]) * x[1] + static_cast<double>(x[2]) * x[2]);
}

TEST(EngineKernels, ResizeKeepsTheBufferAndResetClearsIt) {
  Tensor t({4, 8});
  t.data[5] = 3.0f;
  const float* before = t.ptr();
  t.resize({8, 4});  // same element count: neither reallocated nor cleared
  EXPECT_EQ(t.ptr(), before);
  EXPECT_EQ(t.data[5], 3.0f);
  EXPECT_EQ(t.row_size(), 4);
  t.reset({2, 16});
  EXPECT_EQ(t.ptr(), before);
  EXPECT_EQ(t.data[5], 0.0f);
  t.resize({2, 3, 4});
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.row_size(), 12);
}

}  // namespace
}  // namespace ibt::models
