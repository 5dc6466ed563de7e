#include "models/layers/attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/errors.hpp"
#include "models/blas.hpp"
#include "models/exp_kernels.hpp"
#include "models/init.hpp"

namespace ibt::models {

SelfAttention::SelfAttention(const ModelConfig& m, uint64_t seed, int layer, Shard tp) : hidden_(m.hidden) {
  if (m.attention != Attention::standard)
    throw UsageError("model " + m.name + ": the CPU engine implements standard (GQA) attention only, not MLA");
  if (m.heads % m.kv_heads != 0)
    throw UsageError("model " + m.name + ": heads must be a multiple of kv_heads");
  head_dim_ = m.head_dim();
  heads_ = tp.size_of(m.heads, "heads");
  kv_heads_ = tp.size_of(m.kv_heads, "kv_heads");
  const std::string p = "layers." + std::to_string(layer) + ".attention.";
  const int64_t d = head_dim_, h = hidden_;
  const Tensor q = init_normal(seed, p + "wq", {m.heads * d, h}, init_std(m));
  const Tensor k = init_normal(seed, p + "wk", {m.kv_heads * d, h}, init_std(m));
  const Tensor v = init_normal(seed, p + "wv", {m.kv_heads * d, h}, init_std(m));
  const Tensor o = init_normal(seed, p + "wo", {h, m.heads * d}, residual_init_std(m));
  wq = make_param(p + "wq", slice_rows(q, tp.index * heads_ * d, heads_ * d), true);
  wk = make_param(p + "wk", slice_rows(k, tp.index * kv_heads_ * d, kv_heads_ * d), true);
  wv = make_param(p + "wv", slice_rows(v, tp.index * kv_heads_ * d, kv_heads_ * d), true);
  wo = make_param(p + "wo", slice_cols(o, tp.index * heads_ * d, heads_ * d), true);
}

void SelfAttention::forward(const Tensor& x, int batch, int seq, Tensor& out, AttentionCache& c,
                            ContextExchange* cp) const {
  const int64_t T = x.rows(), d = head_dim_, qw = heads_ * d, kw = kv_heads_ * d;
  const int64_t group = heads_ / kv_heads_;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  c.x = x;
  // Every output below is written in full (GEMMs with beta 0, the softmax rows and
  // their masked tails), so the buffers are resized, not cleared.
  c.q.resize({T, qw});
  c.k.resize({T, kw});
  c.v.resize({T, kw});
  linear_forward(x.ptr(), wq.value.ptr(), c.q.ptr(), T, hidden_, qw);
  linear_forward(x.ptr(), wk.value.ptr(), c.k.ptr(), T, hidden_, kw);
  linear_forward(x.ptr(), wv.value.ptr(), c.v.ptr(), T, hidden_, kw);
  if (cp && cp->size() > 1 && cp->ring()) {
    cp_ring_attention_forward(c.q, c.k, c.v, batch, seq * cp->size(), heads_, kv_heads_, d, *cp, c.lse, c.context);
  } else if (cp && cp->size() > 1) {
    const int full = seq * cp->size();
    c.k_full = cp_gather_sequence(c.k, batch, full, *cp);
    c.v_full = cp_gather_sequence(c.v, batch, full, *cp);
    cp_attention_forward(c.q, c.k_full, c.v_full, batch, full, heads_, kv_heads_, d, cp->size(), cp->rank(),
                         c.probs, c.context);
  } else {
    c.probs.resize({batch, heads_, seq, seq});  // every element written below
    c.context.resize({T, qw});
    for (int b = 0; b < batch; ++b) {
      for (int64_t hq = 0; hq < heads_; ++hq) {
        const int64_t hk = hq / group;
        const float* q = c.q.ptr() + b * seq * qw + hq * d;
        const float* k = c.k.ptr() + b * seq * kw + hk * d;
        const float* v = c.v.ptr() + b * seq * kw + hk * d;
        float* p = c.probs.ptr() + (b * heads_ + hq) * seq * seq;
        gemm(false, true, seq, seq, d, scale, q, qw, k, kw, 0.0f, p, seq);
        for (int i = 0; i < seq; ++i) {  // causal softmax of row i over keys 0..i
          float* row = p + static_cast<int64_t>(i) * seq;
          const float mx = *std::max_element(row, row + i + 1);
          float sum = 0;
          for (int j = 0; j <= i; ++j) row[j] = exp_fp32(row[j] - mx);  // vectorises
          for (int j = 0; j <= i; ++j) sum += row[j];
          for (int j = 0; j <= i; ++j) row[j] /= sum;
          std::fill(row + i + 1, row + seq, 0.0f);
        }
        gemm(false, false, seq, d, seq, 1.0f, p, seq, v, kw, 0.0f,
             c.context.ptr() + b * seq * qw + hq * d, qw);
      }
    }
  }
  out.resize({T, hidden_});
  linear_forward(c.context.ptr(), wo.value.ptr(), out.ptr(), T, qw, hidden_);
}

void SelfAttention::backward(const AttentionCache& c, int batch, int seq, const Tensor& d_out, Tensor& dx,
                             ContextExchange* cp) {
  const int64_t T = c.x.rows(), d = head_dim_, qw = heads_ * d, kw = kv_heads_ * d;
  const int64_t group = heads_ / kv_heads_;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  Tensor d_context({T, qw});
  linear_backward_weight(d_out.ptr(), c.context.ptr(), wo.grad.ptr(), T, qw, hidden_);
  linear_backward_input(d_out.ptr(), wo.value.ptr(), d_context.ptr(), T, qw, hidden_, false);

  Tensor dq({T, qw}), dk({T, kw}), dv({T, kw});
  if (cp && cp->size() > 1 && cp->ring()) {
    cp_ring_attention_backward(c.q, c.k, c.v, c.context, c.lse, d_context, batch, seq * cp->size(), heads_,
                               kv_heads_, d, *cp, dq, dk, dv);
  } else if (cp && cp->size() > 1) {
    const int full = seq * cp->size();
    Tensor dk_full, dv_full;
    cp_attention_backward(c.q, c.k_full, c.v_full, c.probs, d_context, batch, full, heads_, kv_heads_, d, dq,
                          dk_full, dv_full);
    dk = cp_scatter_sequence(dk_full, batch, full, *cp);
    dv = cp_scatter_sequence(dv_full, batch, full, *cp);
  } else {
    std::vector<float> dp(static_cast<size_t>(seq) * seq);
    for (int b = 0; b < batch; ++b) {
      for (int64_t hq = 0; hq < heads_; ++hq) {
        const int64_t hk = hq / group;
        const int64_t qo = b * seq * qw + hq * d, ko = b * seq * kw + hk * d;
        const float* p = c.probs.ptr() + (b * heads_ + hq) * seq * seq;
        const float* dctx = d_context.ptr() + qo;
        // dV += P^T dO (KV heads are shared by `group` query heads: accumulate).
        gemm(true, false, seq, d, seq, 1.0f, p, seq, dctx, qw, 1.0f, dv.ptr() + ko, kw);
        // dP = dO V^T, then through the softmax: dS = P * (dP - rowsum(dP * P)).
        gemm(false, true, seq, seq, d, 1.0f, dctx, qw, c.v.ptr() + ko, kw, 0.0f, dp.data(), seq);
        for (int i = 0; i < seq; ++i) {
          const float* pr = p + static_cast<int64_t>(i) * seq;
          float* dr = dp.data() + static_cast<int64_t>(i) * seq;
          float dot = 0;
          for (int j = 0; j <= i; ++j) dot += dr[j] * pr[j];
          for (int j = 0; j <= i; ++j) dr[j] = pr[j] * (dr[j] - dot);
          std::fill(dr + i + 1, dr + seq, 0.0f);
        }
        // S = scale * Q K^T:  dQ = scale * dS K,  dK += scale * dS^T Q.
        gemm(false, false, seq, d, seq, scale, dp.data(), seq, c.k.ptr() + ko, kw, 0.0f, dq.ptr() + qo, qw);
        gemm(true, false, seq, d, seq, scale, dp.data(), seq, c.q.ptr() + qo, qw, 1.0f, dk.ptr() + ko, kw);
      }
    }
  }
  linear_backward_weight(dq.ptr(), c.x.ptr(), wq.grad.ptr(), T, hidden_, qw);
  linear_backward_weight(dk.ptr(), c.x.ptr(), wk.grad.ptr(), T, hidden_, kw);
  linear_backward_weight(dv.ptr(), c.x.ptr(), wv.grad.ptr(), T, hidden_, kw);
  dx.resize({T, hidden_});
  linear_backward_input(dq.ptr(), wq.value.ptr(), dx.ptr(), T, hidden_, qw, false);
  linear_backward_input(dk.ptr(), wk.value.ptr(), dx.ptr(), T, hidden_, kw, true);
  linear_backward_input(dv.ptr(), wv.value.ptr(), dx.ptr(), T, hidden_, kw, true);
}

}  // namespace ibt::models
