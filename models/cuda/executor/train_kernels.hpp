#pragma once
// The small CUDA kernels of the cuda executor's transformer, each the device twin of a
// CPU engine function (models/layers/*, models/engine/loss.cpp, models/engine/optimizer.cpp) with the
// same formula: everything outside the GEMMs is computed in fp32 (reductions of a row in
// fp32 or double as the CPU does). Activations are row-major [tokens, features], weights
// [out, in] as in models/engine/tensor.hpp. All launches are asynchronous on `stream`.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace ibt::gpu {

// GEMM operands: fp32 values rounded to bf16 (bf16 == true) or copied as fp32.
void to_operand(const float* src, void* dst, std::int64_t n, bool bf16, cudaStream_t stream);

// A kernel output whose only reader is a GEMM: written in the operand precision (bf16 in
// bf16 runs, fp32 otherwise), so no to_operand() pass reads it back. A plain float*
// converts to an fp32 one.
struct OperandOut {
  void* data = nullptr;
  bool bf16 = false;
  OperandOut(float* fp32) : data(fp32) {}  // NOLINT(google-explicit-constructor): fp32 outputs read as before
  OperandOut(void* d, bool is_bf16) : data(d), bf16(is_bf16) {}
};
// The same for an input a kernel reads in the operand precision.
struct OperandIn {
  const void* data = nullptr;
  bool bf16 = false;
  OperandIn(const float* fp32) : data(fp32) {}  // NOLINT(google-explicit-constructor)
  OperandIn(const void* d, bool is_bf16) : data(d), bf16(is_bf16) {}
};

// out[t] = table[tokens[t] - vocab_begin] when this shard owns the token, else 0.
void embedding_forward(const std::int32_t* tokens, std::int64_t count, const float* table, std::int64_t table_rows,
                       std::int64_t vocab_begin, std::int64_t hidden, float* out, cudaStream_t stream);
// table_grad[tokens[t] - vocab_begin] += d_out[t] for owned tokens (atomic: tokens repeat).
void embedding_backward(const std::int32_t* tokens, std::int64_t count, const float* d_out, std::int64_t table_rows,
                        std::int64_t vocab_begin, std::int64_t hidden, float* table_grad, cudaStream_t stream);

// RMSNorm (layernorm == false) or LayerNorm over rows of width n; bias may be null for
// RMSNorm. mean/rstd: [rows] saved for the backward (mean is 0 for RMSNorm).
void norm_forward(const float* x, const float* gain, const float* bias, std::int64_t rows, std::int64_t n,
                  bool layernorm, float eps, OperandOut y, float* mean, float* rstd, cudaStream_t stream);
// dx overwritten; gain_grad (and bias_grad for LayerNorm) accumulated.
void norm_backward(const float* x, const float* gain, const float* mean, const float* rstd, const float* dy,
                   std::int64_t rows, std::int64_t n, bool layernorm, float* dx, float* gain_grad, float* bias_grad,
                   cudaStream_t stream);

// SwiGLU: act = silu(gate) * up; backward gives d_gate and d_up from d_act (both in
// one precision).
void swiglu_forward(const float* gate, const float* up, OperandOut act, std::int64_t n, cudaStream_t stream);
void swiglu_backward(const float* gate, const float* up, const float* d_act, OperandOut d_gate, OperandOut d_up,
                     std::int64_t n, cudaStream_t stream);
// GELU (tanh form): act = gelu(pre); d_pre = d_act * gelu'(pre).
void gelu_forward(const float* pre, OperandOut act, std::int64_t n, cudaStream_t stream);
void gelu_backward(const float* pre, const float* d_act, OperandOut d_pre, std::int64_t n, cudaStream_t stream);

// Causal GQA attention core for `batch` sequences of `seq` tokens: q [T, heads*d],
// k, v [T, kv_heads*d], probs [batch, heads, seq, seq] (zero above the diagonal),
// context [T, heads*d].
struct AttentionShape {
  int batch = 0, seq = 0, heads = 0, kv_heads = 0, head_dim = 0;
};
void attention_forward(const AttentionShape& s, const float* q, const float* k, const float* v, float* probs,
                       float* context, cudaStream_t stream);
// The causal softmax of each row of scores [rows = batch * heads * seq, seq] into probs
// (probs may be the scores themselves when fp32), and its backward: d_scores = P * (dP -
// rowsum(dP * P)) (in the probabilities' precision; it may be d_probs when fp32). Each
// reads keys 0..i of row i. Keys after i are written as 0 up to the end of i's block of
// `block` rows and left unwritten beyond it: block = seq zeroes the whole row; a smaller
// block serves products that skip the masked blocks (attention_gemm.cpp).
void causal_softmax(const float* scores, OperandOut probs, std::int64_t rows, int seq, int block, cudaStream_t stream);
void causal_softmax_backward(OperandIn probs, const float* d_probs, OperandOut d_scores, std::int64_t rows, int seq,
                             int block, cudaStream_t stream);
// d_probs: scratch [batch, heads, seq, seq]. dq, dk, dv overwritten.
void attention_backward(const AttentionShape& s, const float* q, const float* k, const float* v, const float* probs,
                        const float* d_context, float* d_probs, float* dq, float* dk, float* dv, cudaStream_t stream);

// Vocab-parallel cross-entropy, the stages of models/engine/loss.hpp with the TP reductions
// between them done by the caller: row_max over this shard's columns; then sum_exp
// (given the global row_max) and the target logit (0 where not owned); then per-row
// loss log(sum_exp) + row_max - target; then d_logits = scale * (softmax - onehot).
void logits_row_max(const float* logits, std::int64_t rows, std::int64_t v, float* row_max, cudaStream_t stream);
void logits_sum_exp_and_target(const float* logits, const std::int32_t* targets, std::int64_t rows, std::int64_t v,
                               std::int64_t vocab_begin, const float* row_max, float* sum_exp, float* target_logit,
                               cudaStream_t stream);
void cross_entropy_rows(const float* row_max, const float* sum_exp, const float* target_logit, std::int64_t rows,
                        double* loss, cudaStream_t stream);
void logits_grad(const float* logits, const std::int32_t* targets, std::int64_t rows, std::int64_t v,
                 std::int64_t vocab_begin, const float* row_max, const float* sum_exp, float scale, float* d_logits,
                 cudaStream_t stream);

// dst += src (n elements).
void add_into(float* dst, const float* src, std::int64_t n, cudaStream_t stream);

// AdamW on fp32 master weights (models/engine/optimizer.cpp's formula, step t from 1), then
// the GEMM operand copy of the updated weights (bf16 or fp32; null to skip).
struct AdamWParams {
  double lr = 0, beta1 = 0, beta2 = 0, eps = 0, weight_decay = 0;
};
void adamw_step(float* master, const float* grad, float* m, float* v, std::int64_t n, std::int64_t t,
                const AdamWParams& c, bool decay, void* operand, bool bf16, cudaStream_t stream);

// *out += sum of squares of x in double (out is device memory).
void sum_squares(const float* x, std::int64_t n, double* out, cudaStream_t stream);

}  // namespace ibt::gpu
