// The blockwise causal attention kernels (layers/causal_attention.hpp) against the
// masked full computation, written out here in double: scores for every (query, key)
// pair, -inf above the diagonal, softmax, P·V, and the backward through them. Odd
// sequence lengths and block sizes that do not divide them, strided heads (leading
// dimensions wider than head_dim) and the accumulate-into-dK/dV mode.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "engine_test_util.hpp"
#include "models/engine/layers/causal_attention.hpp"

namespace ibt::models {
namespace {

using test::random_tensor;

// One head, [seq, d] operands at leading dimension ld (column offset 0).
struct Reference {
  std::vector<double> probs, context, dq, dk, dv;
};

Reference masked_full(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& dout, int64_t ld, int64_t seq,
                      int64_t d, double scale) {
  auto at = [ld](const Tensor& t, int64_t i, int64_t c) { return static_cast<double>(t.data[i * ld + c]); };
  Reference r;
  r.probs.assign(seq * seq, 0.0);
  for (int64_t i = 0; i < seq; ++i) {
    std::vector<double> s(seq);
    for (int64_t j = 0; j < seq; ++j) {
      double dot = 0;
      for (int64_t c = 0; c < d; ++c) dot += at(q, i, c) * at(k, j, c);
      s[j] = j <= i ? scale * dot : -std::numeric_limits<double>::infinity();
    }
    const double mx = *std::max_element(s.begin(), s.end());
    double sum = 0;
    for (int64_t j = 0; j < seq; ++j) sum += std::exp(s[j] - mx);
    for (int64_t j = 0; j < seq; ++j) r.probs[i * seq + j] = std::exp(s[j] - mx) / sum;
  }
  r.context.assign(seq * d, 0.0);
  r.dq.assign(seq * d, 0.0);
  r.dk.assign(seq * d, 0.0);
  r.dv.assign(seq * d, 0.0);
  std::vector<double> ds(seq * seq);
  for (int64_t i = 0; i < seq; ++i) {
    for (int64_t j = 0; j < seq; ++j)
      for (int64_t c = 0; c < d; ++c) r.context[i * d + c] += r.probs[i * seq + j] * at(v, j, c);
    double rowdot = 0;
    std::vector<double> dp(seq);
    for (int64_t j = 0; j < seq; ++j) {
      for (int64_t c = 0; c < d; ++c) dp[j] += at(dout, i, c) * at(v, j, c);
      rowdot += dp[j] * r.probs[i * seq + j];
    }
    for (int64_t j = 0; j < seq; ++j) ds[i * seq + j] = r.probs[i * seq + j] * (dp[j] - rowdot);
  }
  for (int64_t i = 0; i < seq; ++i)
    for (int64_t j = 0; j < seq; ++j)
      for (int64_t c = 0; c < d; ++c) {
        r.dv[j * d + c] += r.probs[i * seq + j] * at(dout, i, c);
        r.dq[i * d + c] += scale * ds[i * seq + j] * at(k, j, c);
        r.dk[j * d + c] += scale * ds[i * seq + j] * at(q, i, c);
      }
  return r;
}

// Largest |got - want| over the [seq, d] block of `got` (leading dimension ld), against
// want + base (base: what an accumulating kernel started from).
double worst_error(const float* got, int64_t ld, const std::vector<double>& want, int64_t seq, int64_t d,
                   const float* base = nullptr) {
  double worst = 0;
  for (int64_t i = 0; i < seq; ++i)
    for (int64_t c = 0; c < d; ++c) {
      const double expected = want[i * d + c] + (base ? base[i * ld + c] : 0.0);
      worst = std::max(worst, std::fabs(got[i * ld + c] - expected));
    }
  return worst;
}

void check(int64_t seq, int64_t d, int64_t ld, int64_t block, bool accumulate_kv) {
  SCOPED_TRACE("seq " + std::to_string(seq) + " d " + std::to_string(d) + " ld " + std::to_string(ld) + " block " +
               std::to_string(block) + (accumulate_kv ? " accumulating" : ""));
  const Tensor q = random_tensor({seq, ld}, 1), k = random_tensor({seq, ld}, 2), v = random_tensor({seq, ld}, 3);
  const Tensor dout = random_tensor({seq, ld}, 4);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const Reference want = masked_full(q, k, v, dout, ld, seq, d, scale);

  std::vector<float> probs(seq * seq, std::nanf("")), context(seq * ld, std::nanf(""));
  causal_attention_head_forward(q.ptr(), ld, k.ptr(), ld, v.ptr(), ld, seq, d, scale, probs.data(), context.data(), ld,
                                block);
  double worst_p = 0;
  for (int64_t i = 0; i < seq * seq; ++i) worst_p = std::max(worst_p, std::fabs(probs[i] - want.probs[i]));
  EXPECT_LT(worst_p, 1e-6) << "softmax probabilities (zero above the diagonal)";
  EXPECT_LT(worst_error(context.data(), ld, want.context, seq, d), 1e-5) << "context";

  // The kernel's outputs start as NaN (overwritten) or as random values (accumulated).
  const Tensor kv_base = random_tensor({seq, ld}, 5);
  std::vector<float> dq(seq * ld, std::nanf("")), ds(seq * seq, std::nanf(""));
  std::vector<float> dk(kv_base.data), dv(kv_base.data);
  if (!accumulate_kv) std::fill(dk.begin(), dk.end(), std::nanf("")), std::fill(dv.begin(), dv.end(), std::nanf(""));
  causal_attention_head_backward(q.ptr(), ld, k.ptr(), ld, v.ptr(), ld, probs.data(), dout.ptr(), ld, seq, d, scale,
                                 ds.data(), dq.data(), dk.data(), dv.data(), ld, accumulate_kv, block);
  const float* base = accumulate_kv ? kv_base.ptr() : nullptr;
  EXPECT_LT(worst_error(dq.data(), ld, want.dq, seq, d), 1e-5) << "dQ";
  EXPECT_LT(worst_error(dk.data(), ld, want.dk, seq, d, base), 1e-5) << "dK";
  EXPECT_LT(worst_error(dv.data(), ld, want.dv, seq, d, base), 1e-5) << "dV";
}

TEST(CausalAttention, BlocksThatDoNotDivideTheSequence) {
  check(37, 5, 5, 8, false);
  check(37, 5, 5, 8, true);
  check(23, 4, 4, 7, false);
}

TEST(CausalAttention, OneBlockAndOneRowBlocks) {
  check(19, 6, 6, 64, false);  // the block covers the sequence: the unblocked computation
  check(19, 6, 6, 1, true);    // a block per query row
}

TEST(CausalAttention, StridedHeadsAsInTheLayer) {
  // A head's columns inside a [T, heads * d] activation: leading dimension > d.
  check(33, 8, 24, 16, false);
  check(33, 8, 24, 16, true);
}

}  // namespace
}  // namespace ibt::models
