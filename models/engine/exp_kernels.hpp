#pragma once
// Vectorisable fp32 exponentials for the softmax over the vocabulary (the cross-entropy's
// two passes over [tokens, vocab]: at small-dense's shapes libm's scalar expf cost as
// much as a third of the LM head's GEMMs).
//
// exp(x) = 2^n * exp(r), n = round(x / ln 2), r = x - n ln 2 (ln 2 split in a high part
// exact in fp32 and a low remainder, Cody & Waite), |r| <= ln2/2, and exp(r) by its
// Taylor series to r^7 (truncation below 6e-9 relative, under 0.1 ulp); 2^n is built in
// the exponent bits. Accuracy: about 1 ulp over [-87, 88] (tests/models). Inputs are
// clamped to that range: below it the result is about 1e-38 instead of a subnormal or 0,
// which no probability here can tell apart.
#include <algorithm>
#include <bit>
#include <cstdint>

namespace ibt::models {

inline float exp_fp32(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f;     // 8 significant bits: n * kLn2Hi is exact
  constexpr float kLn2Lo = -2.12194440e-4f;  // ln 2 - kLn2Hi
  constexpr float kRound = 12582912.0f;      // 1.5 * 2^23: adding it rounds to an integer
  x = std::min(std::max(x, -87.0f), 88.0f);
  // n = round(x / ln 2) without a branch or a conversion: in t's low mantissa bits.
  const float t = x * kLog2e + kRound;
  const float nf = t - kRound;
  const int32_t n = std::bit_cast<int32_t>(t) - std::bit_cast<int32_t>(kRound);
  const float r = (x - nf * kLn2Hi) - nf * kLn2Lo;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  return p * std::bit_cast<float>((n + 127) << 23);  // 2^n, n in [-126, 127] after the clamp
}

// sum_j exp(z[j] - shift), accumulated in double (eight lanes, like sum_squares).
double sum_exp_shifted(const float* z, int64_t n, float shift);
// out[j] = coeff * exp(z[j] - shift).
void scaled_exp_shifted(const float* z, int64_t n, float shift, float coeff, float* out);

}  // namespace ibt::models
