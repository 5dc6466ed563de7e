#include "models/engine/layers/causal_attention.hpp"

#include <algorithm>

#include "models/engine/blas.hpp"
#include "models/engine/exp_kernels.hpp"

namespace ibt::models {

namespace {
// The softmax's row passes, cloned for AVX2 (the build targets baseline x86-64) so they
// run eight lanes wide. Reductions keep eight partial results (element j in lane j mod
// 8) combined in a fixed order at the end: every clone gives the same bits, and the
// loops need no reassociation from the compiler.
constexpr int kLanes = 8;

float lanes_total(const float* lane) {
  return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

// row[0, n) = softmax(row[0, n)); row[n, len) = 0.
__attribute__((target_clones("avx2", "default"))) void softmax_prefix(float* __restrict row, int64_t n, int64_t len) {
  float top[kLanes], sum[kLanes];
  for (int l = 0; l < kLanes; ++l) top[l] = row[0], sum[l] = 0.0f;
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l) top[l] = std::max(top[l], row[j + l]);
  for (; j < n; ++j) top[0] = std::max(top[0], row[j]);
  const float mx = *std::max_element(top, top + kLanes);
  for (j = 0; j < n; ++j) row[j] = exp_fp32(row[j] - mx);
  for (j = 0; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l) sum[l] += row[j + l];
  for (; j < n; ++j) sum[j % kLanes] += row[j];
  const float total = lanes_total(sum);
  for (j = 0; j < n; ++j) row[j] /= total;
  std::fill(row + n, row + len, 0.0f);
}

// The softmax's backward on row prefix [0, n): ds = p * (ds - sum(ds * p)), where ds
// holds dP on entry; ds[n, len) = 0.
__attribute__((target_clones("avx2", "default"))) void softmax_backward_prefix(const float* __restrict p,
                                                                               float* __restrict ds, int64_t n,
                                                                               int64_t len) {
  float dot[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l) dot[l] += ds[j + l] * p[j + l];
  for (; j < n; ++j) dot[j % kLanes] += ds[j] * p[j];
  const float total = lanes_total(dot);
  for (j = 0; j < n; ++j) ds[j] = p[j] * (ds[j] - total);
  std::fill(ds + n, ds + len, 0.0f);
}
}  // namespace

void causal_attention_head_forward(const float* q, int64_t ldq, const float* k, int64_t ldk, const float* v,
                                   int64_t ldv, int64_t seq, int64_t d, float scale, float* probs, float* context,
                                   int64_t ldc, int64_t block) {
  for (int64_t i0 = 0; i0 < seq; i0 += block) {
    const int64_t i1 = std::min(seq, i0 + block), rows = i1 - i0;
    float* p = probs + i0 * seq;
    gemm(false, true, rows, i1, d, scale, q + i0 * ldq, ldq, k, ldk, 0.0f, p, seq);
    for (int64_t i = i0; i < i1; ++i) softmax_prefix(probs + i * seq, i + 1, seq);  // keys 0..i
    // Keys past i1 have zero probability for these rows: left out of the product.
    gemm(false, false, rows, d, i1, 1.0f, p, seq, v, ldv, 0.0f, context + i0 * ldc, ldc);
  }
}

void causal_attention_head_backward(const float* q, int64_t ldq, const float* k, int64_t ldk, const float* v,
                                    int64_t ldv, const float* probs, const float* d_context, int64_t ldo, int64_t seq,
                                    int64_t d, float scale, float* ds, float* dq, float* dk, float* dv, int64_t ldkv,
                                    bool accumulate_kv, int64_t block) {
  // Query-row blocks: dP = dO V^T over keys [0, i1), through the softmax
  // dS = P * (dP - rowsum(dP * P)), then dQ = scale * dS K (S = scale * Q K^T).
  for (int64_t i0 = 0; i0 < seq; i0 += block) {
    const int64_t i1 = std::min(seq, i0 + block), rows = i1 - i0;
    gemm(false, true, rows, i1, d, 1.0f, d_context + i0 * ldo, ldo, v, ldv, 0.0f, ds + i0 * seq, seq);
    // Zeros to i1: the masked part of the block that the dK GEMM reads.
    for (int64_t i = i0; i < i1; ++i) softmax_backward_prefix(probs + i * seq, ds + i * seq, i + 1, i1);
    gemm(false, false, rows, d, i1, scale, ds + i0 * seq, seq, k, ldk, 0.0f, dq + i0 * ldq, ldq);
  }
  // Key blocks [j0, j1): only queries j0.. see them. dV = P^T dO, dK = scale * dS^T Q,
  // each element summed over its queries in one GEMM (in query order, as unblocked).
  const float beta = accumulate_kv ? 1.0f : 0.0f;
  for (int64_t j0 = 0; j0 < seq; j0 += block) {
    const int64_t cols = std::min(seq, j0 + block) - j0, rows = seq - j0;
    gemm(true, false, cols, d, rows, 1.0f, probs + j0 * seq + j0, seq, d_context + j0 * ldo, ldo, beta, dv + j0 * ldkv,
         ldkv);
    gemm(true, false, cols, d, rows, scale, ds + j0 * seq + j0, seq, q + j0 * ldq, ldq, beta, dk + j0 * ldkv, ldkv);
  }
}

}  // namespace ibt::models
