// The split backward's engine side (models/engine/deferred_weight_grads.hpp): a weight-gradient
// GEMM issued while deferring is queued, not computed, and run() later gives exactly
// what computing it at once gives, even after the operands' buffers were overwritten.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "models/engine/blas.hpp"
#include "models/engine/deferred_weight_grads.hpp"

namespace ibt::models {
namespace {

TEST(EngineDeferredWeightGrads, QueuedGemmEqualsTheImmediateOne) {
  const int64_t tokens = 5, in = 3, out = 4;
  std::vector<float> dy(tokens * out), x(tokens * in);
  for (size_t i = 0; i < dy.size(); ++i) dy[i] = 0.25f * static_cast<float>(i) - 1.0f;
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.5f - 0.125f * static_cast<float>(i);
  std::vector<float> now(out * in, 1.0f), later(out * in, 1.0f);
  linear_backward_weight(dy.data(), x.data(), now.data(), tokens, in, out);

  WeightGradQueue queue;
  {
    DeferWeightGrads defer(queue);
    linear_backward_weight(dy.data(), x.data(), later.data(), tokens, in, out);
    EXPECT_THROW(DeferWeightGrads again(queue), std::logic_error);  // not nestable
    EXPECT_THROW(queue.run(), std::logic_error);                    // would queue again
  }
  EXPECT_FALSE(queue.empty());
  EXPECT_DOUBLE_EQ(queue.bytes(), static_cast<double>(tokens * (in + out)) * sizeof(float));
  for (float v : later) EXPECT_EQ(v, 1.0f);  // nothing computed in B
  // The queue holds copies: the B's buffers may be reused before W.
  std::fill(dy.begin(), dy.end(), 7.0f);
  std::fill(x.begin(), x.end(), -3.0f);
  queue.run();
  EXPECT_TRUE(queue.empty());
  EXPECT_EQ(later, now);
}

}  // namespace
}  // namespace ibt::models
