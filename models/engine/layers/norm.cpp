#include "models/engine/layers/norm.hpp"

#include <cmath>

#include "models/engine/init.hpp"

namespace ibt::models {

NormLayer::NormLayer(Norm k, int64_t width, const std::string& name) : kind(k) {
  gain = make_param(name + ".weight", init_constant({width}, 1.0f), false);
  if (kind == Norm::layernorm) bias = make_param(name + ".bias", init_constant({width}, 0.0f), false);
}

std::vector<Param*> NormLayer::params() {
  if (kind == Norm::layernorm) return {&gain, &bias};
  return {&gain};
}

void NormLayer::forward(const Tensor& x, Tensor& y, NormCache& c) const {
  const int64_t rows = x.rows(), n = x.row_size();
  c.x = x;
  c.mean.assign(rows, 0.0f);
  c.rstd.assign(rows, 0.0f);
  y.resize(x.shape);  // every element written below
  const float* g = gain.value.ptr();
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x.row(r);
    float* yr = y.row(r);
    double mean = 0;
    if (kind == Norm::layernorm) {
      for (int64_t j = 0; j < n; ++j) mean += xr[j];
      mean /= n;
    }
    double var = 0;
    for (int64_t j = 0; j < n; ++j) var += (xr[j] - mean) * (xr[j] - mean);
    const float rstd = static_cast<float>(1.0 / std::sqrt(var / n + kEps));
    c.mean[r] = static_cast<float>(mean);
    c.rstd[r] = rstd;
    for (int64_t j = 0; j < n; ++j) yr[j] = (xr[j] - c.mean[r]) * rstd * g[j];
    if (kind == Norm::layernorm)
      for (int64_t j = 0; j < n; ++j) yr[j] += bias.value.data[j];
  }
}

void NormLayer::backward(const NormCache& c, const Tensor& dy, Tensor& dx) {
  const int64_t rows = c.x.rows(), n = c.x.row_size();
  dx.resize(c.x.shape);  // every element written below
  const float* g = gain.value.ptr();
  float* dg = gain.grad.ptr();
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = c.x.row(r);
    const float* dyr = dy.row(r);
    float* dxr = dx.row(r);
    const float rstd = c.rstd[r], mean = c.mean[r];
    // xhat = (x - mean) * rstd;  dxhat = dy * g.
    double sum_dxhat = 0, sum_dxhat_xhat = 0;
    for (int64_t j = 0; j < n; ++j) {
      const float xhat = (xr[j] - mean) * rstd;
      const float dxhat = dyr[j] * g[j];
      sum_dxhat += dxhat;
      sum_dxhat_xhat += dxhat * xhat;
      dg[j] += dyr[j] * xhat;
    }
    // RMSNorm has no mean subtraction, so the mean-of-dxhat term is absent.
    const float mean_dxhat = kind == Norm::layernorm ? static_cast<float>(sum_dxhat / n) : 0.0f;
    const float mean_dxhat_xhat = static_cast<float>(sum_dxhat_xhat / n);
    for (int64_t j = 0; j < n; ++j) {
      const float xhat = (xr[j] - mean) * rstd;
      dxr[j] = rstd * (dyr[j] * g[j] - mean_dxhat - xhat * mean_dxhat_xhat);
    }
    if (kind == Norm::layernorm)
      for (int64_t j = 0; j < n; ++j) bias.grad.data[j] += dyr[j];
  }
}

}  // namespace ibt::models
