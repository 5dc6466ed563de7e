#include "models/cuda/executor/attention_gemm.hpp"

#include <cmath>
#include <cstdint>

namespace ibt::gpu {

namespace {

// Where one batch element's heads start, and the strides between the kv_heads products
// of one call: query head h = hk * group + g serves kv head hk, so for a fixed (b, g) the
// kv_heads products step by group heads in q, the context and the probabilities, and by
// one head in k and v.
struct HeadBatch {
  const AttentionShape& s;
  std::int64_t d() const { return s.head_dim; }
  std::int64_t seq() const { return s.seq; }
  std::int64_t group() const { return s.heads / s.kv_heads; }
  std::int64_t qw() const { return std::int64_t(s.heads) * s.head_dim; }
  std::int64_t kw() const { return std::int64_t(s.kv_heads) * s.head_dim; }
  std::int64_t square() const { return seq() * seq(); }
  // Offsets of batch element b, query head g of each group.
  std::int64_t q_at(int b, int g) const { return b * seq() * qw() + g * d(); }
  std::int64_t kv_at(int b) const { return b * seq() * kw(); }
  std::int64_t probs_at(int b, int g) const { return (std::int64_t(b) * s.heads + g) * square(); }
  std::int64_t q_stride() const { return group() * d(); }
  std::int64_t probs_stride() const { return group() * square(); }
};

float softmax_scale(const AttentionShape& s) { return 1.0f / std::sqrt(static_cast<float>(s.head_dim)); }

}  // namespace

void attention_forward_gemm(DeviceBlas& blas, const AttentionShape& s, const float* q, const float* k, const float* v,
                            float* probs, float* context, cudaStream_t stream) {
  const HeadBatch h{s};
  const bool tf32 = blas.bf16();
  for (int b = 0; b < s.batch; ++b)
    for (int g = 0; g < h.group(); ++g) {
      // S = scale Q K^T, [seq, seq] per head.
      blas.batched_f32(false, true, h.seq(), h.seq(), h.d(), softmax_scale(s), q + h.q_at(b, g), h.qw(), h.q_stride(),
                       k + h.kv_at(b), h.kw(), h.d(), 0.0f, probs + h.probs_at(b, g), h.seq(), h.probs_stride(),
                       s.kv_heads, tf32);
    }
  causal_softmax(probs, std::int64_t(s.batch) * s.heads * s.seq, s.seq, stream);
  for (int b = 0; b < s.batch; ++b)
    for (int g = 0; g < h.group(); ++g) {
      // context = P V, [seq, d] per head.
      blas.batched_f32(false, false, h.seq(), h.d(), h.seq(), 1.0f, probs + h.probs_at(b, g), h.seq(),
                       h.probs_stride(), v + h.kv_at(b), h.kw(), h.d(), 0.0f, context + h.q_at(b, g), h.qw(),
                       h.q_stride(), s.kv_heads, tf32);
    }
}

void attention_backward_gemm(DeviceBlas& blas, const AttentionShape& s, const float* q, const float* k,
                             const float* v, const float* probs, const float* d_context, float* d_probs, float* dq,
                             float* dk, float* dv, cudaStream_t stream) {
  const HeadBatch h{s};
  const bool tf32 = blas.bf16();
  const float scale = softmax_scale(s);
  for (int b = 0; b < s.batch; ++b)
    for (int g = 0; g < h.group(); ++g) {
      // dP = dcontext V^T
      blas.batched_f32(false, true, h.seq(), h.seq(), h.d(), 1.0f, d_context + h.q_at(b, g), h.qw(), h.q_stride(),
                       v + h.kv_at(b), h.kw(), h.d(), 0.0f, d_probs + h.probs_at(b, g), h.seq(), h.probs_stride(),
                       s.kv_heads, tf32);
    }
  causal_softmax_backward(probs, d_probs, std::int64_t(s.batch) * s.heads * s.seq, s.seq, stream);  // dP -> dS
  for (int b = 0; b < s.batch; ++b)
    for (int g = 0; g < h.group(); ++g) {
      const float keep = g == 0 ? 0.0f : 1.0f;  // a kv head sums the gradients of its group's query heads
      // dq = scale dS K
      blas.batched_f32(false, false, h.seq(), h.d(), h.seq(), scale, d_probs + h.probs_at(b, g), h.seq(),
                       h.probs_stride(), k + h.kv_at(b), h.kw(), h.d(), 0.0f, dq + h.q_at(b, g), h.qw(), h.q_stride(),
                       s.kv_heads, tf32);
      // dk (+)= scale dS^T Q
      blas.batched_f32(true, false, h.seq(), h.d(), h.seq(), scale, d_probs + h.probs_at(b, g), h.seq(),
                       h.probs_stride(), q + h.q_at(b, g), h.qw(), h.q_stride(), keep, dk + h.kv_at(b), h.kw(), h.d(),
                       s.kv_heads, tf32);
      // dv (+)= P^T dcontext
      blas.batched_f32(true, false, h.seq(), h.d(), h.seq(), 1.0f, probs + h.probs_at(b, g), h.seq(),
                       h.probs_stride(), d_context + h.q_at(b, g), h.qw(), h.q_stride(), keep, dv + h.kv_at(b), h.kw(),
                       h.d(), s.kv_heads, tf32);
    }
}

}  // namespace ibt::gpu
