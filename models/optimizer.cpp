#include "models/optimizer.hpp"

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
  float keep;               // 1 - lr * wd
  float step;               // lr / bc1
  float inv_sqrt_bc2, eps;
};

__attribute__((target_clones("avx2", "default")))
void adamw_kernel(float* __restrict param, const float* __restrict grad, float* __restrict m,
                  float* __restrict v, int64_t n, AdamWScalars s) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = grad[i];
    const float mi = s.beta1 * m[i] + s.one_minus_beta1 * g;
    const float vi = s.beta2 * v[i] + s.one_minus_beta2 * (g * g);
    m[i] = mi;
    v[i] = vi;
    param[i] = param[i] * s.keep - s.step * mi / (__builtin_sqrtf(vi) * s.inv_sqrt_bc2 + s.eps);
  }
}

}  // namespace

void adamw_update(float* param, const float* grad, float* m, float* v, int64_t n, int64_t t,
                  const AdamWConfig& c, bool decay) {
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
  adamw_kernel(param, grad, m, v, n, s);
}

AdamW::AdamW(AdamWConfig config, std::vector<Param*> params) : config_(config), params_(std::move(params)) {
  for (Param* p : params_) {
    m_.emplace_back(p->value.numel(), 0.0f);
    v_.emplace_back(p->value.numel(), 0.0f);
  }
}

void AdamW::step() {
  ++t_;
  for (size_t i = 0; i < params_.size(); ++i) {
    Param& p = *params_[i];
    adamw_update(p.value.ptr(), p.grad.ptr(), m_[i].data(), v_[i].data(), p.value.numel(), t_, config_, p.decay);
  }
}

void AdamW::zero_grad() {
  for (Param* p : params_) p->grad.zero();
}

}  // namespace ibt::models
