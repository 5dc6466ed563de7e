// Ring context-parallel attention (context_parallel.hpp says the algorithm): the
// forward with the online-softmax merge, the backward with dK/dV passed back around
// the ring.
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "models/engine/blas.hpp"
#include "models/engine/layers/context_parallel.hpp"

namespace ibt::models {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// The shapes of one rank's share, and the global position of each local row.
struct RingShape {
  RingShape(int batch_size, int seq_len, int64_t n_heads, int64_t kv_heads, int64_t head_dim,
            const ContextExchange& exchange)
      : batch(batch_size),
        seq(seq_len),
        cp(exchange.size()),
        rank(exchange.rank()),
        sl(seq_len / exchange.size()),
        d(head_dim),
        heads(n_heads),
        group(n_heads / kv_heads),
        qw(n_heads * head_dim),
        kw(kv_heads * head_dim),
        block(static_cast<size_t>(batch_size) * sl * kw),
        scale(1.0f / std::sqrt(static_cast<float>(head_dim))),
        query_pos(position_of(rank)) {}
  // Global positions of CP rank r's local rows (one sequence; the same for each).
  std::vector<int64_t> position_of(int r) const {
    std::vector<int64_t> pos(static_cast<size_t>(sl));
    for (int64_t i = 0; i < sl; ++i) pos[i] = cp_position(i, seq, cp, r);
    return pos;
  }
  // The CP rank whose K/V block a rank holds at ring step s.
  int source(int s) const { return (rank - s + cp) % cp; }

  int batch, seq, cp, rank;
  int64_t sl, d, heads, group, qw, kw;
  size_t block;  // floats of one K (or V) block: batch * sl rows of kw
  float scale;
  std::vector<int64_t> query_pos;
};

}  // namespace

void cp_ring_attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, int batch, int seq, int64_t heads,
                               int64_t kv_heads, int64_t head_dim, ContextExchange& cp, Tensor& lse, Tensor& context) {
  const RingShape r(batch, seq, heads, kv_heads, head_dim, cp);
  const int64_t sl = r.sl, d = r.d;
  // The K/V block in hand ([K | V]) and the one arriving.
  std::vector<float> cur(2 * r.block), next(2 * r.block);
  std::copy(k.data.begin(), k.data.end(), cur.begin());
  std::copy(v.data.begin(), v.data.end(), cur.begin() + static_cast<std::ptrdiff_t>(r.block));
  // Running row max (kept in lse until the end) and sum; the unnormalised output.
  lse.reset({batch, heads, sl});
  std::fill(lse.data.begin(), lse.data.end(), kNegInf);
  std::vector<float> row_sum(lse.data.size(), 0.0f);
  context.reset({static_cast<int64_t>(batch) * sl, r.qw});
  std::vector<float> scores(static_cast<size_t>(sl * sl));
  for (int s = 0; s < r.cp; ++s) {
    const int pass = s + 1 < r.cp ? cp.start_ring(cur.data(), next.data(), cur.size()) : -1;
    const std::vector<int64_t> key_pos = r.position_of(r.source(s));
    for (int b = 0; b < batch; ++b)
      for (int64_t hq = 0; hq < heads; ++hq) {
        const int64_t hk = hq / r.group;
        const float* qp = q.ptr() + b * sl * r.qw + hq * d;
        const float* kp = cur.data() + b * sl * r.kw + hk * d;
        const float* vp = cur.data() + r.block + b * sl * r.kw + hk * d;
        float* out = context.ptr() + b * sl * r.qw + hq * d;
        gemm(false, true, sl, sl, d, r.scale, qp, r.qw, kp, r.kw, 0.0f, scores.data(), sl);
        for (int64_t i = 0; i < sl; ++i) {
          float* row = scores.data() + i * sl;
          const int64_t pq = r.query_pos[i];
          float block_max = kNegInf;
          for (int64_t j = 0; j < sl; ++j)
            if (key_pos[j] <= pq) block_max = std::max(block_max, row[j]);
          const size_t at = (static_cast<size_t>(b) * heads + hq) * sl + i;
          if (block_max == kNegInf) {  // every key of this block is in the query's future
            std::fill(row, row + sl, 0.0f);
            continue;
          }
          const float old_max = lse.data[at], new_max = std::max(old_max, block_max);
          const float rescale = old_max == kNegInf ? 0.0f : std::exp(old_max - new_max);
          float sum = 0;
          for (int64_t j = 0; j < sl; ++j) sum += (row[j] = key_pos[j] <= pq ? std::exp(row[j] - new_max) : 0.0f);
          row_sum[at] = row_sum[at] * rescale + sum;
          lse.data[at] = new_max;
          for (int64_t c = 0; c < d; ++c) out[i * r.qw + c] *= rescale;
        }
        gemm(false, false, sl, d, sl, 1.0f, scores.data(), sl, vp, r.kw, 1.0f, out, r.qw);
      }
    if (pass >= 0) {
      cp.finish_ring(pass);
      std::swap(cur, next);
    }
  }
  // Normalise; the max becomes the log-sum-exp (every query sees at least itself).
  for (int b = 0; b < batch; ++b)
    for (int64_t hq = 0; hq < heads; ++hq)
      for (int64_t i = 0; i < sl; ++i) {
        const size_t at = (static_cast<size_t>(b) * heads + hq) * sl + i;
        float* out = context.ptr() + (b * sl + i) * r.qw + hq * d;
        for (int64_t c = 0; c < d; ++c) out[c] /= row_sum[at];
        lse.data[at] += std::log(row_sum[at]);
      }
}

void cp_ring_attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& context,
                                const Tensor& lse, const Tensor& d_context, int batch, int seq, int64_t heads,
                                int64_t kv_heads, int64_t head_dim, ContextExchange& cp, Tensor& dq, Tensor& dk,
                                Tensor& dv) {
  const RingShape r(batch, seq, heads, kv_heads, head_dim, cp);
  const int64_t sl = r.sl, d = r.d;
  // delta = rowsum(dO * O) per query and head: the softmax backward's correction.
  std::vector<float> delta(lse.data.size());
  for (int b = 0; b < batch; ++b)
    for (int64_t hq = 0; hq < heads; ++hq)
      for (int64_t i = 0; i < sl; ++i) {
        const int64_t o = (b * sl + i) * r.qw + hq * d;
        float acc = 0;
        for (int64_t c = 0; c < d; ++c) acc += d_context.data[o + c] * context.data[o + c];
        delta[(static_cast<size_t>(b) * heads + hq) * sl + i] = acc;
      }
  std::vector<float> cur(2 * r.block), next(2 * r.block);  // [K | V] in hand, arriving
  std::copy(k.data.begin(), k.data.end(), cur.begin());
  std::copy(v.data.begin(), v.data.end(), cur.begin() + static_cast<std::ptrdiff_t>(r.block));
  // [dK | dV]: this step's contribution, the previous step's sum going out, the
  // partial sum arriving for the block in hand.
  std::vector<float> mine(2 * r.block), outgoing(2 * r.block), incoming(2 * r.block);
  dq.reset({static_cast<int64_t>(batch) * sl, r.qw});
  std::vector<float> p(static_cast<size_t>(sl * sl)), dp(p.size());
  int dkv_pass = -1;
  for (int s = 0; s < r.cp; ++s) {
    const int kv_pass = s + 1 < r.cp ? cp.start_ring(cur.data(), next.data(), cur.size()) : -1;
    const std::vector<int64_t> key_pos = r.position_of(r.source(s));
    std::fill(mine.begin(), mine.end(), 0.0f);
    for (int b = 0; b < batch; ++b)
      for (int64_t hq = 0; hq < heads; ++hq) {
        const int64_t hk = hq / r.group;
        const int64_t qo = b * sl * r.qw + hq * d, ko = b * sl * r.kw + hk * d;
        const float* kp = cur.data() + ko;
        const float* vp = cur.data() + r.block + ko;
        const float* dout = d_context.ptr() + qo;
        // P recomputed from the forward's log-sum-exp; masked entries are 0.
        gemm(false, true, sl, sl, d, r.scale, q.ptr() + qo, r.qw, kp, r.kw, 0.0f, p.data(), sl);
        const size_t row0 = (static_cast<size_t>(b) * heads + hq) * sl;
        for (int64_t i = 0; i < sl; ++i) {
          float* row = p.data() + i * sl;
          const float l = lse.data[row0 + i];
          for (int64_t j = 0; j < sl; ++j) row[j] = key_pos[j] <= r.query_pos[i] ? std::exp(row[j] - l) : 0.0f;
        }
        // dV += P^T dO; dP = dO V^T; dS = P * (dP - delta).
        gemm(true, false, sl, d, sl, 1.0f, p.data(), sl, dout, r.qw, 1.0f, mine.data() + r.block + ko, r.kw);
        gemm(false, true, sl, sl, d, 1.0f, dout, r.qw, vp, r.kw, 0.0f, dp.data(), sl);
        for (int64_t i = 0; i < sl; ++i)
          for (int64_t j = 0; j < sl; ++j) dp[i * sl + j] = p[i * sl + j] * (dp[i * sl + j] - delta[row0 + i]);
        // S = scale * Q K^T: dQ += scale * dS K, dK += scale * dS^T Q.
        gemm(false, false, sl, d, sl, r.scale, dp.data(), sl, kp, r.kw, 1.0f, dq.ptr() + qo, r.qw);
        gemm(true, false, sl, d, sl, r.scale, dp.data(), sl, q.ptr() + qo, r.qw, 1.0f, mine.data() + ko, r.kw);
      }
    // The block's partial dK/dV from the ranks before this one (none at step 0: the
    // block is this rank's own), plus this step's, go on to the next rank.
    if (dkv_pass >= 0) {
      cp.finish_ring(dkv_pass);
      for (size_t i = 0; i < mine.size(); ++i) mine[i] += incoming[i];
    }
    std::swap(mine, outgoing);
    dkv_pass = cp.start_ring(outgoing.data(), incoming.data(), outgoing.size());
    if (kv_pass >= 0) {
      cp.finish_ring(kv_pass);
      std::swap(cur, next);
    }
  }
  // The last pass brought this rank's own block's complete dK/dV home.
  cp.finish_ring(dkv_pass);
  dk.reset({static_cast<int64_t>(batch) * sl, r.kw});
  dv.reset({static_cast<int64_t>(batch) * sl, r.kw});
  std::copy_n(incoming.begin(), r.block, dk.data.begin());
  std::copy_n(incoming.begin() + static_cast<std::ptrdiff_t>(r.block), r.block, dv.data.begin());
}

}  // namespace ibt::models
