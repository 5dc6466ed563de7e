#include "models/optimizer.hpp"

#include <cmath>

namespace ibt::models {

void adamw_update(float* param, const float* grad, float* m, float* v, int64_t n, int64_t t,
                  const AdamWConfig& c, bool decay) {
  const double bc1 = 1.0 - std::pow(c.beta1, static_cast<double>(t));
  const double bc2 = 1.0 - std::pow(c.beta2, static_cast<double>(t));
  const double wd = decay ? c.weight_decay : 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double g = grad[i];
    m[i] = static_cast<float>(c.beta1 * m[i] + (1.0 - c.beta1) * g);
    v[i] = static_cast<float>(c.beta2 * v[i] + (1.0 - c.beta2) * g * g);
    const double update = (m[i] / bc1) / (std::sqrt(v[i] / bc2) + c.eps) + wd * param[i];
    param[i] = static_cast<float>(param[i] - c.lr * update);
  }
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
