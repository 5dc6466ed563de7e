#pragma once
// Shared helpers of the engine tests: random tensors and a finite-difference check.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "models/engine/init.hpp"
#include "models/engine/tensor.hpp"
#include "models/plan/model_config.hpp"

namespace ibt::models::test {

inline Tensor random_tensor(std::vector<int64_t> shape, uint64_t seed, double std = 1.0) {
  return init_normal(seed, "test", std::move(shape), std);
}

// 1, 2, 3, ... in storage order: every element names its own position, so a slice or a
// copy that lands on the wrong elements shows which ones.
inline Tensor counting(std::vector<int64_t> dims) {
  Tensor t(std::move(dims));
  for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = 1.0f + static_cast<float>(i);
  return t;
}

// sum(a * b) in double: the scalar "loss" L = <r, y> whose gradient w.r.t. y is r.
inline double dot(const Tensor& a, const Tensor& b) {
  double s = 0;
  for (int64_t i = 0; i < a.numel(); ++i) s += static_cast<double>(a.data[i]) * b.data[i];
  return s;
}

// Checks an analytic gradient against central finite differences along a random
// direction d (one number per tensor: g.d versus (L(x+eps d) - L(x-eps d)) / 2eps),
// and at `probes` single entries. fp32 forward passes limit the accuracy: with
// eps = 1e-2 and O(1) values the rounding error is ~1e-5 / 1e-2 = 1e-3 relative, so
// the tolerance is 2e-2 relative to the derivative's scale.
inline void expect_gradient_matches(const std::string& what, Tensor& value, const Tensor& grad,
                                    const std::function<double()>& loss, double eps = 1e-2, int probes = 3,
                                    double rtol = 2e-2) {
  ASSERT_EQ(value.numel(), grad.numel()) << what;
  const Tensor dir = init_normal(hash_name(what), "direction", value.shape, 1.0);
  const Tensor saved = value;
  // Step relative to the tensor's own scale: a fixed step on small weights (0.02-0.2)
  // leaves the linear regime of the softmaxes and norms.
  eps *= std::max(std::sqrt(sum_squares(value) / static_cast<double>(value.numel())), 0.05);
  auto shifted = [&](double s) {
    for (int64_t i = 0; i < value.numel(); ++i) value.data[i] = saved.data[i] + static_cast<float>(s * dir.data[i]);
    const double l = loss();
    value = saved;
    return l;
  };
  const double numeric = (shifted(eps) - shifted(-eps)) / (2 * eps);
  const double analytic = dot(grad, dir);
  // g.d of a random unit-normal direction has typical size ||g||: measure the error
  // against that, not against g.d itself (which can cancel to nearly zero).
  const double scale = std::max({std::abs(numeric), std::abs(analytic), std::sqrt(sum_squares(grad)), 1e-3});
  EXPECT_NEAR(analytic, numeric, rtol * scale) << what << ": directional derivative";
  double grad_max = 1e-3;
  for (float g : grad.data) grad_max = std::max(grad_max, static_cast<double>(std::abs(g)));
  for (int p = 0; p < probes; ++p) {
    const int64_t i = static_cast<int64_t>(mix64(hash_name(what) + p) % static_cast<uint64_t>(value.numel()));
    auto at = [&](double s) {
      value.data[i] = saved.data[i] + static_cast<float>(s);
      const double l = loss();
      value = saved;
      return l;
    };
    const double num_i = (at(eps) - at(-eps)) / (2 * eps);
    EXPECT_NEAR(grad.data[i], num_i, rtol * std::max(grad_max, std::abs(num_i))) << what << ": entry " << i;
  }
}

inline ModelConfig tiny_config(bool moe) {
  ModelConfig m;
  m.name = moe ? "test-moe" : "test-dense";
  m.layers = 2;
  m.hidden = 16;
  m.heads = 4;
  m.kv_heads = 2;
  m.ffn_hidden = 32;
  m.vocab = 32;
  m.seq_len = 6;
  if (moe) {
    m.num_experts = 4;
    m.top_k = 2;
    m.shared_experts = 1;
    m.expert_ffn_hidden = 8;
    m.first_dense_layers = 1;
    m.balance = RoutingBalance::aux_loss;
    m.aux_loss_coeff = 0.1;
  }
  return m;
}

}  // namespace ibt::models::test
