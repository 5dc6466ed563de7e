#include "models/engine/optimizer.hpp"

#include <cmath>

namespace ibt::models {

namespace {

// The per-element update in fp32, written so the compiler vectorises it (no
// loop-carried dependence; sqrt and division are IEEE-exact in SSE and AVX alike, and no
// FMA is enabled, so every clone gives the same bits and a slice updated alone equals
// the same slice of a whole update, as ZeRO-1 needs). The AdamW formula is rearranged
// with the step's scalars folded once per call:
//   p <- p * (1 - lr*wd) - (lr/bc1) * m / (sqrt(v) / sqrt(bc2) + eps)
// which equals p - lr * ((m/bc1) / (sqrt(v/bc2) + eps) + wd * p).
struct AdamWScalars {
  float beta1, one_minus_beta1, beta2, one_minus_beta2;
  float keep;  // 1 - lr * wd
  float step;  // lr / bc1
  float inv_sqrt_bc2, eps;
};

// One element's update; returns the new parameter value.
inline float adamw_element(float& param, float g, float& m, float& v, const AdamWScalars& s) {
  const float mi = s.beta1 * m + s.one_minus_beta1 * g;
  const float vi = s.beta2 * v + s.one_minus_beta2 * (g * g);
  m = mi;
  v = vi;
  return param = param * s.keep - s.step * mi / (__builtin_sqrtf(vi) * s.inv_sqrt_bc2 + s.eps);
}

__attribute__((target_clones("avx2", "default"))) void adamw_kernel(float* __restrict param,
                                                                    const float* __restrict grad, float* __restrict m,
                                                                    float* __restrict v, int64_t n, AdamWScalars s) {
  for (int64_t i = 0; i < n; ++i) adamw_element(param[i], grad[i], m[i], v[i], s);
}

// The same update, also summing the squares of the gradient it reads and of the values
// it writes in double, in sum_squares()'s order (eight lanes over blocks of eight, the
// tail, then the lanes), so each sum is sum_squares() of that array bit for bit. With
// kClearGrad it also sets each gradient element to zero once read.
template <bool kClearGrad>
[[gnu::always_inline]] inline SquareSums adamw_pass_with_sums(float* __restrict param, float* __restrict grad,
                                                              float* __restrict m, float* __restrict v, int64_t n,
                                                              const AdamWScalars& s) {
  constexpr int kLanes = 8;
  double grad_lane[kLanes] = {}, value_lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      const float g = grad[i + l];
      if constexpr (kClearGrad) grad[i + l] = 0.0f;
      grad_lane[l] += static_cast<double>(g) * g;
      const float p = adamw_element(param[i + l], g, m[i + l], v[i + l], s);
      value_lane[l] += static_cast<double>(p) * p;
    }
  SquareSums out;
  for (; i < n; ++i) {
    const float g = grad[i];
    if constexpr (kClearGrad) grad[i] = 0.0f;
    out.grad += static_cast<double>(g) * g;
    const float p = adamw_element(param[i], g, m[i], v[i], s);
    out.value += static_cast<double>(p) * p;
  }
  for (int l = 0; l < kLanes; ++l) {
    out.grad += grad_lane[l];
    out.value += value_lane[l];
  }
  return out;
}

__attribute__((target_clones("avx2", "default"))) SquareSums adamw_kernel_with_sums(float* __restrict param,
                                                                                    const float* __restrict grad,
                                                                                    float* __restrict m,
                                                                                    float* __restrict v, int64_t n,
                                                                                    AdamWScalars s) {
  return adamw_pass_with_sums<false>(param, const_cast<float*>(grad), m, v, n, s);  // grad only read
}

__attribute__((target_clones("avx2", "default"))) SquareSums adamw_kernel_with_sums_clearing(
    float* __restrict param, float* __restrict grad, float* __restrict m, float* __restrict v, int64_t n,
    AdamWScalars s) {
  return adamw_pass_with_sums<true>(param, grad, m, v, n, s);
}

AdamWScalars scalars_of_step(int64_t t, const AdamWConfig& c, bool decay) {
  // Scalars in double, rounded once to fp32.
  const double bc1 = 1.0 - std::pow(c.beta1, static_cast<double>(t));
  const double bc2 = 1.0 - std::pow(c.beta2, static_cast<double>(t));
  const double wd = decay ? c.weight_decay : 0.0;
  AdamWScalars s{};
  s.beta1 = static_cast<float>(c.beta1);
  s.one_minus_beta1 = static_cast<float>(1.0 - c.beta1);
  s.beta2 = static_cast<float>(c.beta2);
  s.one_minus_beta2 = static_cast<float>(1.0 - c.beta2);
  s.keep = static_cast<float>(1.0 - c.lr * wd);
  s.step = static_cast<float>(c.lr / bc1);
  s.inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bc2));
  s.eps = static_cast<float>(c.eps);
  return s;
}

}  // namespace

void adamw_update(float* param, const float* grad, float* m, float* v, int64_t n, int64_t t, const AdamWConfig& c,
                  bool decay) {
  adamw_kernel(param, grad, m, v, n, scalars_of_step(t, c, decay));
}

SquareSums adamw_update_with_sums(float* param, const float* grad, float* m, float* v, int64_t n, int64_t t,
                                  const AdamWConfig& c, bool decay) {
  return adamw_kernel_with_sums(param, grad, m, v, n, scalars_of_step(t, c, decay));
}

SquareSums adamw_update_with_sums_clearing_grad(float* param, float* grad, float* m, float* v, int64_t n, int64_t t,
                                                const AdamWConfig& c, bool decay) {
  return adamw_kernel_with_sums_clearing(param, grad, m, v, n, scalars_of_step(t, c, decay));
}

AdamW::AdamW(AdamWConfig config, std::vector<Param*> params) : config_(config), params_(std::move(params)) {
  for (Param* p : params_) {
    m_.emplace_back(p->value.numel(), 0.0f);
    v_.emplace_back(p->value.numel(), 0.0f);
  }
}

void AdamW::step(std::vector<SquareSums>* sums, bool clear_grads) {
  ++t_;
  if (sums) sums->resize(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    Param& p = *params_[i];
    float* const value = p.value.ptr();
    const int64_t n = p.value.numel();
    if (sums && clear_grads)
      (*sums)[i] = adamw_update_with_sums_clearing_grad(value, p.grad.ptr(), m_[i].data(), v_[i].data(), n, t_, config_,
                                                        p.decay);
    else if (sums)
      (*sums)[i] = adamw_update_with_sums(value, p.grad.ptr(), m_[i].data(), v_[i].data(), n, t_, config_, p.decay);
    else
      adamw_update(value, p.grad.ptr(), m_[i].data(), v_[i].data(), n, t_, config_, p.decay);
    if (clear_grads && !sums) p.grad.zero();
  }
}

void AdamW::zero_grad() {
  for (Param* p : params_) p->grad.zero();
}

}  // namespace ibt::models
