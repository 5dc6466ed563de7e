#include "models/engine/layers/context_parallel.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "models/engine/blas.hpp"

namespace ibt::models {

int64_t cp_position(int64_t r, int64_t seq, int cp, int rank) {
  const int64_t chunk = seq / (2 * cp);
  return r < chunk ? rank * chunk + r : (2 * cp - 1 - rank) * chunk + (r - chunk);
}

Batch cp_local_batch(const Batch& b, int cp, int rank) {
  if (cp == 1) return b;
  if (b.seq_len % (2 * cp) != 0) throw std::logic_error("context parallel: seq_len not divisible by 2*cp");
  Batch out;
  out.sequences = b.sequences;
  out.seq_len = b.seq_len / cp;
  for (int s = 0; s < b.sequences; ++s)
    for (int64_t r = 0; r < out.seq_len; ++r) {
      const size_t at = static_cast<size_t>(s) * b.seq_len + cp_position(r, b.seq_len, cp, rank);
      out.inputs.push_back(b.inputs[at]);
      out.targets.push_back(b.targets[at]);
    }
  return out;
}

Tensor cp_gather_sequence(const Tensor& local, int batch, int seq, ContextExchange& cp) {
  const int n = cp.size();
  const int64_t sl = seq / n, w = local.row_size();
  Tensor stacked;  // [cp rank][sequence][local row]
  cp.all_gather_rows(local, stacked);
  Tensor full({static_cast<int64_t>(batch) * seq, w});
  for (int j = 0; j < n; ++j)
    for (int b = 0; b < batch; ++b)
      for (int64_t r = 0; r < sl; ++r)
        std::copy_n(stacked.row((static_cast<int64_t>(j) * batch + b) * sl + r), w,
                    full.row(static_cast<int64_t>(b) * seq + cp_position(r, seq, n, j)));
  return full;
}

Tensor cp_scatter_sequence(const Tensor& full, int batch, int seq, ContextExchange& cp) {
  const int n = cp.size();
  const int64_t sl = seq / n, w = full.row_size();
  Tensor stacked({static_cast<int64_t>(n) * batch * sl, w});
  for (int j = 0; j < n; ++j)
    for (int b = 0; b < batch; ++b)
      for (int64_t r = 0; r < sl; ++r)
        std::copy_n(full.row(static_cast<int64_t>(b) * seq + cp_position(r, seq, n, j)), w,
                    stacked.row((static_cast<int64_t>(j) * batch + b) * sl + r));
  Tensor local;
  cp.reduce_scatter_rows(stacked, local);
  return local;
}

void cp_attention_forward(const Tensor& q_local, const Tensor& k_full, const Tensor& v_full, int batch, int seq,
                          int64_t heads, int64_t kv_heads, int64_t d, int cp, int rank, Tensor& probs,
                          Tensor& context) {
  const int64_t sl = seq / cp, qw = heads * d, kw = kv_heads * d, group = heads / kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  probs.reset({batch, heads, sl, seq});
  context.reset({batch * sl, qw});
  for (int b = 0; b < batch; ++b)
    for (int64_t hq = 0; hq < heads; ++hq) {
      const int64_t hk = hq / group;
      const float* q = q_local.ptr() + b * sl * qw + hq * d;
      const float* k = k_full.ptr() + b * seq * kw + hk * d;
      const float* v = v_full.ptr() + b * seq * kw + hk * d;
      float* p = probs.ptr() + (b * heads + hq) * sl * seq;
      gemm(false, true, sl, seq, d, scale, q, qw, k, kw, 0.0f, p, seq);
      for (int64_t i = 0; i < sl; ++i) {  // causal softmax over keys 0..position(i)
        const int64_t last = cp_position(i, seq, cp, rank);
        float* row = p + i * seq;
        const float mx = *std::max_element(row, row + last + 1);
        float sum = 0;
        for (int64_t j = 0; j <= last; ++j) sum += (row[j] = std::exp(row[j] - mx));
        for (int64_t j = 0; j <= last; ++j) row[j] /= sum;
        std::fill(row + last + 1, row + seq, 0.0f);
      }
      gemm(false, false, sl, d, seq, 1.0f, p, seq, v, kw, 0.0f, context.ptr() + b * sl * qw + hq * d, qw);
    }
}

void cp_attention_backward(const Tensor& q_local, const Tensor& k_full, const Tensor& v_full, const Tensor& probs,
                           const Tensor& d_context, int batch, int seq, int64_t heads, int64_t kv_heads, int64_t d,
                           Tensor& dq, Tensor& dk_full, Tensor& dv_full) {
  const int64_t sl = probs.shape.at(2), qw = heads * d, kw = kv_heads * d, group = heads / kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  dq.reset({batch * sl, qw});
  dk_full.reset({static_cast<int64_t>(batch) * seq, kw});
  dv_full.reset({static_cast<int64_t>(batch) * seq, kw});
  std::vector<float> dp(static_cast<size_t>(sl) * seq);
  for (int b = 0; b < batch; ++b)
    for (int64_t hq = 0; hq < heads; ++hq) {
      const int64_t hk = hq / group;
      const int64_t qo = b * sl * qw + hq * d, ko = b * seq * kw + hk * d;
      const float* p = probs.ptr() + (b * heads + hq) * sl * seq;
      const float* dctx = d_context.ptr() + qo;
      // dV += P^T dO (a KV head serves `group` query heads: accumulate).
      gemm(true, false, seq, d, sl, 1.0f, p, seq, dctx, qw, 1.0f, dv_full.ptr() + ko, kw);
      // dP = dO V^T; through the softmax dS = P * (dP - rowsum(dP * P)). Masked
      // entries have P = 0, so dS is 0 there.
      gemm(false, true, sl, seq, d, 1.0f, dctx, qw, v_full.ptr() + ko, kw, 0.0f, dp.data(), seq);
      for (int64_t i = 0; i < sl; ++i) {
        const float* pr = p + i * seq;
        float* dr = dp.data() + i * seq;
        float dot = 0;
        for (int64_t j = 0; j < seq; ++j) dot += dr[j] * pr[j];
        for (int64_t j = 0; j < seq; ++j) dr[j] = pr[j] * (dr[j] - dot);
      }
      gemm(false, false, sl, d, seq, scale, dp.data(), seq, k_full.ptr() + ko, kw, 0.0f, dq.ptr() + qo, qw);
      gemm(true, false, seq, d, sl, scale, dp.data(), seq, q_local.ptr() + qo, qw, 1.0f, dk_full.ptr() + ko, kw);
    }
}

}  // namespace ibt::models
