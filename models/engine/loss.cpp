#include "models/engine/loss.hpp"

#include <cmath>
#include <limits>

#include "models/engine/blas.hpp"
#include "models/engine/exp_kernels.hpp"
#include "models/engine/init.hpp"

namespace ibt::models {

__attribute__((target_clones("avx2", "default"))) double sum_exp_shifted(const float* z, int64_t n, float shift) {
  constexpr int kLanes = 8;
  double lane[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l) lane[l] += exp_fp32(z[j + l] - shift);
  double sum = 0;
  for (; j < n; ++j) sum += exp_fp32(z[j] - shift);
  for (double l : lane) sum += l;
  return sum;
}

__attribute__((target_clones("avx2", "default"))) void scaled_exp_shifted(const float* z, int64_t n, float shift,
                                                                          float coeff, float* out) {
  for (int64_t j = 0; j < n; ++j) out[j] = coeff * exp_fp32(z[j] - shift);
}

LmHead::LmHead(const ModelConfig& m, uint64_t seed, Shard tp, Param* tied_table) : hidden_(m.hidden) {
  const int64_t rows = tp.size_of(m.vocab, "vocab");
  vocab_begin_ = tp.begin_of(m.vocab, "vocab");
  if (tied_table) {
    weight_ = tied_table;
  } else {
    own_ = make_shard("lm_head.weight", init_normal(seed, "lm_head.weight", {m.vocab, m.hidden}, init_std(m)), 0,
                      vocab_begin_, rows, true);
    weight_ = &own_;
  }
}

void LmHead::forward(const Tensor& x, Tensor& logits) const {
  const int64_t v = weight_->value.rows();
  logits.resize({x.rows(), v});  // beta-0 GEMM: every element written
  linear_forward(x.ptr(), weight_->value.ptr(), logits.ptr(), x.rows(), hidden_, v);
}

void LmHead::backward(const Tensor& x, const Tensor& d_logits, Tensor& dx) {
  const int64_t v = weight_->value.rows();
  linear_backward_weight(d_logits.ptr(), x.ptr(), weight_->grad.ptr(), x.rows(), hidden_, v);
  dx.resize({x.rows(), hidden_});
  linear_backward_input(d_logits.ptr(), weight_->value.ptr(), dx.ptr(), x.rows(), hidden_, v, false);
}

void local_row_max(const Tensor& logits, std::vector<float>& row_max) {
  row_max.assign(logits.rows(), -std::numeric_limits<float>::infinity());
  for (int64_t t = 0; t < logits.rows(); ++t) {
    const float* z = logits.row(t);
    for (int64_t j = 0; j < logits.row_size(); ++j) row_max[t] = std::max(row_max[t], z[j]);
  }
}

void local_sum_exp_and_target(const Tensor& logits, const std::vector<int32_t>& targets, int64_t vocab_begin,
                              SoftmaxStats& s) {
  const int64_t T = logits.rows(), v = logits.row_size();
  s.sum_exp.assign(T, 0.0f);
  s.target_logit.assign(T, 0.0f);
  for (int64_t t = 0; t < T; ++t) {
    const float* z = logits.row(t);
    s.sum_exp[t] = static_cast<float>(sum_exp_shifted(z, v, s.row_max[t]));
    const int64_t local = targets[t] - vocab_begin;
    if (local >= 0 && local < v) s.target_logit[t] = z[local];
  }
}

double loss_sum(const SoftmaxStats& s) {
  double total = 0;
  for (size_t t = 0; t < s.sum_exp.size(); ++t)
    total += std::log(static_cast<double>(s.sum_exp[t])) + s.row_max[t] - s.target_logit[t];
  return total;
}

void logits_grad(const Tensor& logits, const std::vector<int32_t>& targets, int64_t vocab_begin, const SoftmaxStats& s,
                 float scale, Tensor& d_logits) {
  const int64_t T = logits.rows(), v = logits.row_size();
  d_logits.resize({T, v});  // every element written below
  for (int64_t t = 0; t < T; ++t) {
    const float* z = logits.row(t);
    float* d = d_logits.row(t);
    scaled_exp_shifted(z, v, s.row_max[t], static_cast<float>(scale / static_cast<double>(s.sum_exp[t])), d);
    const int64_t local = targets[t] - vocab_begin;
    if (local >= 0 && local < v) d[local] -= scale;
  }
}

double cross_entropy(const Tensor& logits, const std::vector<int32_t>& targets, float scale, Tensor& d_logits) {
  SoftmaxStats s;
  local_row_max(logits, s.row_max);
  local_sum_exp_and_target(logits, targets, 0, s);
  logits_grad(logits, targets, 0, s, scale, d_logits);
  return loss_sum(s);
}

}  // namespace ibt::models
