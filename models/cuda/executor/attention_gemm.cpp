#include "models/cuda/executor/attention_gemm.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace ibt::gpu {

namespace {

using Output = DeviceBlas::Output;

// Where one batch element's heads start, and the strides between the kv_heads products
// of one call: query head h = hk * group + g serves kv head hk, so for a fixed (b, g) the
// kv_heads products step by group heads in q, the context and the probabilities, and by
// one head in k and v. Offsets count elements; at() turns them into addresses for the
// operand precision.
//
// The causal mask makes the blocks above the diagonal zero, so the products skip them:
// the sequence splits into blocks of block() rows (about seq / 8, a multiple of 16), and
// query block r meets keys 0 .. end of block r only. With 8 blocks that is 9/16 of the
// square's FLOPs instead of all of it; the softmax kernels write the zeros inside the
// diagonal blocks, which are the only masked entries any product reads.
struct HeadBatch {
  const AttentionShape& s;
  std::size_t operand_bytes;
  std::int64_t d() const { return s.head_dim; }
  std::int64_t seq() const { return s.seq; }
  std::int64_t group() const { return s.heads / s.kv_heads; }
  std::int64_t qw() const { return std::int64_t(s.heads) * s.head_dim; }
  std::int64_t kw() const { return std::int64_t(s.kv_heads) * s.head_dim; }
  std::int64_t square() const { return seq() * seq(); }
  std::int64_t rows() const { return std::int64_t(s.batch) * s.heads * seq(); }
  // Offsets of batch element b, query head g of each group.
  std::int64_t q_at(int b, int g) const { return b * seq() * qw() + g * d(); }
  std::int64_t kv_at(int b) const { return b * seq() * kw(); }
  std::int64_t probs_at(int b, int g) const { return (std::int64_t(b) * s.heads + g) * square(); }
  std::int64_t q_stride() const { return group() * d(); }
  std::int64_t probs_stride() const { return group() * square(); }
  // Causal blocks: block() rows each, the last one shorter when seq is not a multiple.
  std::int64_t block() const { return std::max<std::int64_t>(16, (seq() / 8 + 15) / 16 * 16); }
  std::int64_t blocks() const { return (seq() + block() - 1) / block(); }
  std::int64_t block_begin(std::int64_t r) const { return r * block(); }
  std::int64_t block_rows(std::int64_t r) const { return std::min(block(), seq() - block_begin(r)); }
  std::int64_t block_end(std::int64_t r) const { return block_begin(r) + block_rows(r); }
  const void* at(const void* base, std::int64_t offset) const {
    return static_cast<const unsigned char*>(base) + offset * static_cast<std::int64_t>(operand_bytes);
  }
  void* at(void* base, std::int64_t offset) const {
    return static_cast<unsigned char*>(base) + offset * static_cast<std::int64_t>(operand_bytes);
  }
};

float softmax_scale(const AttentionShape& s) { return 1.0f / std::sqrt(static_cast<float>(s.head_dim)); }

}  // namespace

void attention_forward_gemm(DeviceBlas& blas, const AttentionShape& s, const void* q, const void* k, const void* v,
                            float* scores, void* probs, void* context, cudaStream_t stream) {
  const HeadBatch h{s, operand_bytes(blas.precision())};
  for (int b = 0; b < s.batch; ++b)
    for (int g = 0; g < h.group(); ++g)
      for (std::int64_t r = 0; r < h.blocks(); ++r) {
        // S[rows of block r, keys up to its end] = scale Q K^T, fp32.
        const std::int64_t r0 = h.block_begin(r);
        blas.batched(false, true, h.block_rows(r), h.block_end(r), h.d(), softmax_scale(s),
                     h.at(q, h.q_at(b, g) + r0 * h.qw()), h.qw(), h.q_stride(), h.at(k, h.kv_at(b)), h.kw(), h.d(),
                     0.0f, scores + h.probs_at(b, g) + r0 * h.seq(), h.seq(), h.probs_stride(), s.kv_heads);
      }
  causal_softmax(scores, OperandOut(probs, blas.bf16()), h.rows(), s.seq, static_cast<int>(h.block()), stream);
  for (int b = 0; b < s.batch; ++b)
    for (int g = 0; g < h.group(); ++g)
      for (std::int64_t r = 0; r < h.blocks(); ++r) {
        // context[block r] = P[block r, keys up to its end] V, in the operand precision (Wo's input).
        const std::int64_t r0 = h.block_begin(r);
        blas.batched(false, false, h.block_rows(r), h.d(), h.block_end(r), 1.0f,
                     h.at(probs, h.probs_at(b, g) + r0 * h.seq()), h.seq(), h.probs_stride(), h.at(v, h.kv_at(b)),
                     h.kw(), h.d(), 0.0f, h.at(context, h.q_at(b, g) + r0 * h.qw()), h.qw(), h.q_stride(), s.kv_heads,
                     Output::operand);
      }
}

void attention_backward_gemm(DeviceBlas& blas, const AttentionShape& s, const void* q, const void* k, const void* v,
                             const void* probs, const void* d_context, float* d_probs, void* d_scores, void* dq,
                             float* dk, float* dv, cudaStream_t stream) {
  const HeadBatch h{s, operand_bytes(blas.precision())};
  const float scale = softmax_scale(s);
  for (int b = 0; b < s.batch; ++b)
    for (int g = 0; g < h.group(); ++g)
      for (std::int64_t r = 0; r < h.blocks(); ++r) {
        // dP[block r, keys up to its end] = dcontext V^T, fp32.
        const std::int64_t r0 = h.block_begin(r);
        blas.batched(false, true, h.block_rows(r), h.block_end(r), h.d(), 1.0f,
                     h.at(d_context, h.q_at(b, g) + r0 * h.qw()), h.qw(), h.q_stride(), h.at(v, h.kv_at(b)), h.kw(),
                     h.d(), 0.0f, d_probs + h.probs_at(b, g) + r0 * h.seq(), h.seq(), h.probs_stride(), s.kv_heads);
      }
  causal_softmax_backward(OperandIn(probs, blas.bf16()), d_probs, OperandOut(d_scores, blas.bf16()), h.rows(), s.seq,
                          static_cast<int>(h.block()), stream);
  for (int b = 0; b < s.batch; ++b)
    for (int g = 0; g < h.group(); ++g) {
      const float keep = g == 0 ? 0.0f : 1.0f;  // a kv head sums the gradients of its group's query heads
      for (std::int64_t r = 0; r < h.blocks(); ++r) {
        // dq[block r] = scale dS[block r, keys up to its end] K (operand: Wq's gradient input)
        const std::int64_t r0 = h.block_begin(r);
        blas.batched(false, false, h.block_rows(r), h.d(), h.block_end(r), scale,
                     h.at(d_scores, h.probs_at(b, g) + r0 * h.seq()), h.seq(), h.probs_stride(), h.at(k, h.kv_at(b)),
                     h.kw(), h.d(), 0.0f, h.at(dq, h.q_at(b, g) + r0 * h.qw()), h.qw(), h.q_stride(), s.kv_heads,
                     Output::operand);
      }
      for (std::int64_t c = 0; c < h.blocks(); ++c) {
        // Key block c meets the queries from its start on: dS and P at [c0.., block c].
        const std::int64_t c0 = h.block_begin(c), queries = h.seq() - c0;
        const std::int64_t square_at = h.probs_at(b, g) + c0 * h.seq() + c0;
        // dk[block c] (+)= scale dS^T Q, fp32
        blas.batched(true, false, h.block_rows(c), h.d(), queries, scale, h.at(d_scores, square_at), h.seq(),
                     h.probs_stride(), h.at(q, h.q_at(b, g) + c0 * h.qw()), h.qw(), h.q_stride(), keep,
                     dk + h.kv_at(b) + c0 * h.kw(), h.kw(), h.d(), s.kv_heads);
        // dv[block c] (+)= P^T dcontext, fp32
        blas.batched(true, false, h.block_rows(c), h.d(), queries, 1.0f, h.at(probs, square_at), h.seq(),
                     h.probs_stride(), h.at(d_context, h.q_at(b, g) + c0 * h.qw()), h.qw(), h.q_stride(), keep,
                     dv + h.kv_at(b) + c0 * h.kw(), h.kw(), h.d(), s.kv_heads);
      }
    }
}

}  // namespace ibt::gpu
