#include "models/engine/layers/attention.hpp"

#include <algorithm>
#include <cmath>

#include "core/errors.hpp"
#include "models/engine/blas.hpp"
#include "models/engine/init.hpp"
#include "models/engine/layers/causal_attention.hpp"

namespace ibt::models {

SelfAttention::SelfAttention(const ModelConfig& m, uint64_t seed, int layer, Shard tp) : hidden_(m.hidden) {
  if (m.attention != Attention::standard)
    throw UsageError("model " + m.name + ": the CPU engine implements standard (GQA) attention only, not MLA");
  if (m.heads % m.kv_heads != 0) throw UsageError("model " + m.name + ": heads must be a multiple of kv_heads");
  head_dim_ = m.head_dim();
  heads_ = tp.size_of(m.heads, "heads");
  // KV heads split over TP, or (tp > kv_heads) replicated: rank r holds head
  // r / kv_replicas, the one its query heads use (model_config.hpp).
  const int replicas = m.kv_replicas(tp.count);
  if (replicas > 1 && tp.count % m.kv_heads != 0)
    throw UsageError("model " + m.name + ": tp (" + std::to_string(tp.count) + ") not a multiple of kv_heads (" +
                     std::to_string(m.kv_heads) + ")");
  kv_heads_ = replicas > 1 ? 1 : tp.size_of(m.kv_heads, "kv_heads");
  const int64_t kv_first = replicas > 1 ? tp.index / replicas : tp.index * kv_heads_;
  const std::string p = "layers." + std::to_string(layer) + ".attention.";
  const int64_t d = head_dim_, h = hidden_;
  const Tensor q = init_normal(seed, p + "wq", {m.heads * d, h}, init_std(m));
  const Tensor k = init_normal(seed, p + "wk", {m.kv_heads * d, h}, init_std(m));
  const Tensor v = init_normal(seed, p + "wv", {m.kv_heads * d, h}, init_std(m));
  const Tensor o = init_normal(seed, p + "wo", {h, m.heads * d}, residual_init_std(m));
  wq = make_shard(p + "wq", q, 0, tp.index * heads_ * d, heads_ * d, true);
  wk = make_shard(p + "wk", k, 0, kv_first * d, kv_heads_ * d, true);
  wv = make_shard(p + "wv", v, 0, kv_first * d, kv_heads_ * d, true);
  wo = make_shard(p + "wo", o, 1, tp.index * heads_ * d, heads_ * d, true);
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
    cp_attention_forward(c.q, c.k_full, c.v_full, batch, full, heads_, kv_heads_, d, cp->size(), cp->rank(), c.probs,
                         c.context);
  } else {
    c.probs.resize({batch, heads_, seq, seq});  // every element written below
    c.context.resize({T, qw});
    for (int b = 0; b < batch; ++b)
      for (int64_t hq = 0; hq < heads_; ++hq) {
        const int64_t hk = hq / group, qo = b * seq * qw + hq * d, ko = b * seq * kw + hk * d;
        causal_attention_head_forward(c.q.ptr() + qo, qw, c.k.ptr() + ko, kw, c.v.ptr() + ko, kw, seq, d, scale,
                                      c.probs.ptr() + (b * heads_ + hq) * seq * seq, c.context.ptr() + qo, qw);
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
  // Scratch reused from call to call: every element is written before it is read.
  Tensor& d_context = scratch_.d_context;
  Tensor& dq = scratch_.dq;
  Tensor& dk = scratch_.dk;
  Tensor& dv = scratch_.dv;
  d_context.resize({T, qw});
  linear_backward_weight(d_out.ptr(), c.context.ptr(), wo.grad.ptr(), T, qw, hidden_);
  linear_backward_input(d_out.ptr(), wo.value.ptr(), d_context.ptr(), T, qw, hidden_, false);

  dq.resize({T, qw});
  dk.resize({T, kw});
  dv.resize({T, kw});
  if (cp && cp->size() > 1 && cp->ring()) {
    cp_ring_attention_backward(c.q, c.k, c.v, c.context, c.lse, d_context, batch, seq * cp->size(), heads_, kv_heads_,
                               d, *cp, dq, dk, dv);
  } else if (cp && cp->size() > 1) {
    const int full = seq * cp->size();
    Tensor dk_full, dv_full;
    cp_attention_backward(c.q, c.k_full, c.v_full, c.probs, d_context, batch, full, heads_, kv_heads_, d, dq, dk_full,
                          dv_full);
    dk = cp_scatter_sequence(dk_full, batch, full, *cp);
    dv = cp_scatter_sequence(dv_full, batch, full, *cp);
  } else {
    scratch_.ds.resize({seq, seq});
    for (int b = 0; b < batch; ++b)
      for (int64_t hq = 0; hq < heads_; ++hq) {
        // A KV head serves `group` query heads: the first writes dK, dV, the others add.
        const int64_t hk = hq / group, qo = b * seq * qw + hq * d, ko = b * seq * kw + hk * d;
        causal_attention_head_backward(c.q.ptr() + qo, qw, c.k.ptr() + ko, kw, c.v.ptr() + ko, kw,
                                       c.probs.ptr() + (b * heads_ + hq) * seq * seq, d_context.ptr() + qo, qw, seq, d,
                                       scale, scratch_.ds.ptr(), dq.ptr() + qo, dk.ptr() + ko, dv.ptr() + ko, kw,
                                       hq % group != 0);
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
