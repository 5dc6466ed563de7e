#include "models/layers/causal_attention.hpp"

#include <algorithm>

#include "models/blas.hpp"
#include "models/exp_kernels.hpp"

namespace ibt::models {

void causal_attention_head_forward(const float* q, int64_t ldq, const float* k, int64_t ldk, const float* v,
                                   int64_t ldv, int64_t seq, int64_t d, float scale, float* probs, float* context,
                                   int64_t ldc, int64_t block) {
  for (int64_t i0 = 0; i0 < seq; i0 += block) {
    const int64_t i1 = std::min(seq, i0 + block), rows = i1 - i0;
    float* p = probs + i0 * seq;
    gemm(false, true, rows, i1, d, scale, q + i0 * ldq, ldq, k, ldk, 0.0f, p, seq);
    for (int64_t i = i0; i < i1; ++i) {  // causal softmax of row i over keys 0..i
      float* row = probs + i * seq;
      const float mx = *std::max_element(row, row + i + 1);
      float sum = 0;
      for (int64_t j = 0; j <= i; ++j) row[j] = exp_fp32(row[j] - mx);  // vectorises
      for (int64_t j = 0; j <= i; ++j) sum += row[j];
      for (int64_t j = 0; j <= i; ++j) row[j] /= sum;
      std::fill(row + i + 1, row + seq, 0.0f);
    }
    // Keys past i1 have zero probability for these rows: left out of the product.
    gemm(false, false, rows, d, i1, 1.0f, p, seq, v, ldv, 0.0f, context + i0 * ldc, ldc);
  }
}

void causal_attention_head_backward(const float* q, int64_t ldq, const float* k, int64_t ldk, const float* v,
                                    int64_t ldv, const float* probs, const float* d_context, int64_t ldo,
                                    int64_t seq, int64_t d, float scale, float* ds, float* dq, float* dk,
                                    float* dv, int64_t ldkv, bool accumulate_kv, int64_t block) {
  // Query-row blocks: dP = dO V^T over keys [0, i1), through the softmax
  // dS = P * (dP - rowsum(dP * P)), then dQ = scale * dS K (S = scale * Q K^T).
  for (int64_t i0 = 0; i0 < seq; i0 += block) {
    const int64_t i1 = std::min(seq, i0 + block), rows = i1 - i0;
    gemm(false, true, rows, i1, d, 1.0f, d_context + i0 * ldo, ldo, v, ldv, 0.0f, ds + i0 * seq, seq);
    for (int64_t i = i0; i < i1; ++i) {
      const float* pr = probs + i * seq;
      float* dr = ds + i * seq;
      float dot = 0;
      for (int64_t j = 0; j <= i; ++j) dot += dr[j] * pr[j];
      for (int64_t j = 0; j <= i; ++j) dr[j] = pr[j] * (dr[j] - dot);
      std::fill(dr + i + 1, dr + i1, 0.0f);  // the masked part of the block the dK GEMM reads
    }
    gemm(false, false, rows, d, i1, scale, ds + i0 * seq, seq, k, ldk, 0.0f, dq + i0 * ldq, ldq);
  }
  // Key blocks [j0, j1): only queries j0.. see them. dV = P^T dO, dK = scale * dS^T Q,
  // each element summed over its queries in one GEMM (in query order, as unblocked).
  const float beta = accumulate_kv ? 1.0f : 0.0f;
  for (int64_t j0 = 0; j0 < seq; j0 += block) {
    const int64_t cols = std::min(seq, j0 + block) - j0, rows = seq - j0;
    gemm(true, false, cols, d, rows, 1.0f, probs + j0 * seq + j0, seq, d_context + j0 * ldo, ldo, beta,
         dv + j0 * ldkv, ldkv);
    gemm(true, false, cols, d, rows, scale, ds + j0 * seq + j0, seq, q + j0 * ldq, ldq, beta, dk + j0 * ldkv,
         ldkv);
  }
}

}  // namespace ibt::models
