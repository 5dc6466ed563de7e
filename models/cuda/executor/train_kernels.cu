// The cuda executor's small kernels (train_kernels.hpp). Simple one-thread-per-output
// kernels and one-block-per-row reductions: correctness and the CPU engine's formulas
// first; the GEMMs (device_blas) carry the FLOPs.
#include <cuda_bf16.h>

#include <cfloat>
#include <stdexcept>
#include <type_traits>

#include "collectives/nccl/cuda_device.hpp"
#include "models/cuda/executor/train_kernels.hpp"

namespace ibt::gpu {
namespace {

constexpr int kThreads = 256;
constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;

unsigned blocks_for(std::int64_t n) {
  const std::int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 65535 * 16 ? (b < 1 ? 1 : b) : 65535 * 16);
}

void check_launch(const char* what) { check_cuda(cudaGetLastError(), std::string("launch of ") + what); }

#define IBT_GRID_LOOP(i, n)                                                           \
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < (n); \
       i += std::int64_t(gridDim.x) * blockDim.x)

constexpr int kWarps = kThreads / 32;

// Block-wide sum in double and max (blockDim.x == kThreads, every thread calls): within
// each warp by shuffles, then each thread adds the warps' results from shared memory.
// Two barriers instead of one per halving: the row kernels (softmax, norms) call these
// once or twice per row.
__device__ double block_sum(double v) {
  __shared__ double warp_sums[kWarps];
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
  __syncthreads();
  double total = 0;
  for (int w = 0; w < kWarps; ++w) total += warp_sums[w];
  __syncthreads();  // the next call may overwrite warp_sums
  return total;
}

__device__ float block_max(float v) {
  __shared__ float warp_maxes[kWarps];
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_down_sync(0xffffffffu, v, offset));
  if (threadIdx.x % 32 == 0) warp_maxes[threadIdx.x / 32] = v;
  __syncthreads();
  float total = -FLT_MAX;
  for (int w = 0; w < kWarps; ++w) total = fmaxf(total, warp_maxes[w]);
  __syncthreads();
  return total;
}

// Operand-precision stores and loads: fp32 as is, bf16 rounded to nearest.
__device__ inline void store(float* p, float v) { *p = v; }
__device__ inline void store(__nv_bfloat16* p, float v) { *p = __float2bfloat16(v); }
__device__ inline float load(const float* p) { return *p; }
__device__ inline float load(const __nv_bfloat16* p) { return __bfloat162float(*p); }

// Calls launch(typed pointer) with the output's element type, so one templated kernel
// serves fp32 and bf16 outputs.
template <typename Launch>
void with_type(OperandOut out, Launch launch) {
  if (out.bf16)
    launch(static_cast<__nv_bfloat16*>(out.data));
  else
    launch(static_cast<float*>(out.data));
}

__global__ void to_bf16_kernel(const float* src, __nv_bfloat16* dst, std::int64_t n) {
  IBT_GRID_LOOP(i, n) dst[i] = __float2bfloat16(src[i]);
}
__global__ void copy_kernel(const float* src, float* dst, std::int64_t n) { IBT_GRID_LOOP(i, n) dst[i] = src[i]; }

__global__ void embedding_forward_kernel(const std::int32_t* tokens, std::int64_t count, const float* table,
                                         std::int64_t table_rows, std::int64_t vocab_begin, std::int64_t hidden,
                                         float* out) {
  IBT_GRID_LOOP(i, count * hidden) {
    const std::int64_t t = i / hidden, j = i % hidden;
    const std::int64_t local = tokens[t] - vocab_begin;
    out[i] = (local >= 0 && local < table_rows) ? table[local * hidden + j] : 0.0f;
  }
}

__global__ void embedding_backward_kernel(const std::int32_t* tokens, std::int64_t count, const float* d_out,
                                          std::int64_t table_rows, std::int64_t vocab_begin, std::int64_t hidden,
                                          float* grad) {
  IBT_GRID_LOOP(i, count * hidden) {
    const std::int64_t t = i / hidden, j = i % hidden;
    const std::int64_t local = tokens[t] - vocab_begin;
    if (local >= 0 && local < table_rows) atomicAdd(grad + local * hidden + j, d_out[i]);
  }
}

// One block per row; statistics in double as models/engine/layers/norm.cpp.
template <typename Out>
__global__ void norm_forward_kernel(const float* x, const float* gain, const float* bias, std::int64_t n,
                                    bool layernorm, float eps, Out* y, float* mean_out, float* rstd_out) {
  const std::int64_t r = blockIdx.x;
  const float* xr = x + r * n;
  Out* yr = y + r * n;
  double s = 0;
  if (layernorm) {
    for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x) s += xr[j];
    s = block_sum(s) / double(n);
  }
  const double mean = layernorm ? s : 0.0;
  double var = 0;
  for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x) var += (xr[j] - mean) * (xr[j] - mean);
  var = block_sum(var);
  const float rstd = static_cast<float>(1.0 / sqrt(var / double(n) + double(eps)));
  const float m = static_cast<float>(mean);
  for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x)
    store(yr + j, (xr[j] - m) * rstd * gain[j] + (layernorm ? bias[j] : 0.0f));
  if (threadIdx.x == 0) {
    mean_out[r] = m;
    rstd_out[r] = rstd;
  }
}

__global__ void norm_backward_kernel(const float* x, const float* gain, const float* mean, const float* rstd,
                                     const float* dy, std::int64_t n, bool layernorm, float* dx, float* gain_grad,
                                     float* bias_grad) {
  const std::int64_t r = blockIdx.x;
  const float* xr = x + r * n;
  const float* dyr = dy + r * n;
  float* dxr = dx + r * n;
  const float rs = rstd[r], m = mean[r];
  double sum_dxhat = 0, sum_dxhat_xhat = 0;
  for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    const float xhat = (xr[j] - m) * rs;
    const float dxhat = dyr[j] * gain[j];
    sum_dxhat += dxhat;
    sum_dxhat_xhat += dxhat * xhat;
    atomicAdd(gain_grad + j, dyr[j] * xhat);
    if (layernorm) atomicAdd(bias_grad + j, dyr[j]);
  }
  sum_dxhat = block_sum(sum_dxhat);
  sum_dxhat_xhat = block_sum(sum_dxhat_xhat);
  // RMSNorm has no mean subtraction, so the mean-of-dxhat term is absent.
  const float mean_dxhat = layernorm ? static_cast<float>(sum_dxhat / double(n)) : 0.0f;
  const float mean_dxhat_xhat = static_cast<float>(sum_dxhat_xhat / double(n));
  for (std::int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    const float xhat = (xr[j] - m) * rs;
    dxr[j] = rs * (dyr[j] * gain[j] - mean_dxhat - xhat * mean_dxhat_xhat);
  }
}

template <typename Out>
__global__ void swiglu_forward_kernel(const float* gate, const float* up, Out* act, std::int64_t n) {
  IBT_GRID_LOOP(i, n) {
    const float g = gate[i];
    store(act + i, g / (1.0f + expf(-g)) * up[i]);
  }
}

template <typename Out>
__global__ void swiglu_backward_kernel(const float* gate, const float* up, const float* d_act, Out* d_gate, Out* d_up,
                                       std::int64_t n) {
  IBT_GRID_LOOP(i, n) {
    const float g = gate[i];
    const float sig = 1.0f / (1.0f + expf(-g));
    store(d_gate + i, d_act[i] * up[i] * sig * (1.0f + g * (1.0f - sig)));
    store(d_up + i, d_act[i] * g * sig);
  }
}

__device__ float gelu(float x) { return 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * (x + kGeluCubic * x * x * x))); }
__device__ float gelu_grad(float x) {
  const float th = tanhf(kSqrt2OverPi * (x + kGeluCubic * x * x * x));
  const float du = kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
  return 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du;
}
template <typename Out>
__global__ void gelu_forward_kernel(const float* pre, Out* act, std::int64_t n) {
  IBT_GRID_LOOP(i, n) store(act + i, gelu(pre[i]));
}
template <typename Out>
__global__ void gelu_backward_kernel(const float* pre, const float* d_act, Out* d_pre, std::int64_t n) {
  IBT_GRID_LOOP(i, n) store(d_pre + i, d_act[i] * gelu_grad(pre[i]));
}

// Scores S[b,h,i,j] = scale * q_i . k_j for j <= i (the rest is masked by the softmax).
__global__ void attention_scores_kernel(AttentionShape s, const float* q, const float* k, float scale, float* probs) {
  const std::int64_t seq = s.seq, d = s.head_dim, qw = std::int64_t(s.heads) * d, kw = std::int64_t(s.kv_heads) * d;
  const int group = s.heads / s.kv_heads;
  IBT_GRID_LOOP(idx, std::int64_t(s.batch) * s.heads * seq * seq) {
    const std::int64_t j = idx % seq, i = (idx / seq) % seq, h = (idx / (seq * seq)) % s.heads,
                       b = idx / (seq * seq * s.heads);
    if (j > i) continue;
    const float* qr = q + (b * seq + i) * qw + h * d;
    const float* kr = k + (b * seq + j) * kw + (h / group) * d;
    float acc = 0;
    for (std::int64_t e = 0; e < d; ++e) acc += qr[e] * kr[e];
    probs[idx] = scale * acc;
  }
}

// One block per row (b, h, i): causal softmax over keys 0..i, zeros beyond. In place
// when probs is the scores (fp32): each thread writes only the entries it read, after
// the block's reductions.
// The end of the entries row i writes: the end of its block of `block` rows.
__device__ inline int written_end(int i, int seq, int block) { return min(seq, (i / block + 1) * block); }

template <typename Out>
__global__ void causal_softmax_kernel(const float* scores, Out* probs, int seq, int block) {
  const std::int64_t row = blockIdx.x;
  const int i = static_cast<int>(row % seq);
  const float* s = scores + row * seq;
  Out* p = probs + row * seq;
  float mx = -FLT_MAX;
  for (int j = threadIdx.x; j <= i; j += blockDim.x) mx = fmaxf(mx, s[j]);
  mx = block_max(mx);
  double sum = 0;
  for (int j = threadIdx.x; j <= i; j += blockDim.x) sum += expf(s[j] - mx);
  const float total = static_cast<float>(block_sum(sum));
  const int end = written_end(i, seq, block);
  for (int j = threadIdx.x; j < end; j += blockDim.x) store(p + j, j <= i ? expf(s[j] - mx) / total : 0.0f);
}

// out[b*seq+i, h*d+e] = scale * sum_{j<=i} W[b,h,i,j] x[b*seq+j, (h/group)*d+e]: the context
// (W = probabilities, x = v, scale 1) and dq (W = score gradients, x = k, the softmax scale).
__global__ void attention_rows_times_kv_kernel(AttentionShape s, const float* weights, const float* x, float scale,
                                               float* out) {
  const std::int64_t seq = s.seq, d = s.head_dim, qw = std::int64_t(s.heads) * d, kw = std::int64_t(s.kv_heads) * d;
  const int group = s.heads / s.kv_heads;
  IBT_GRID_LOOP(idx, std::int64_t(s.batch) * seq * qw) {
    const std::int64_t e = idx % d, h = (idx / d) % s.heads, i = (idx / qw) % seq, b = idx / (qw * seq);
    const float* w = weights + ((b * s.heads + h) * seq + i) * seq;
    const float* xc = x + b * seq * kw + (h / group) * d + e;
    float acc = 0;
    for (std::int64_t j = 0; j <= i; ++j) acc += w[j] * xc[j * kw];
    out[idx] = scale * acc;
  }
}

// dP[b,h,i,j] = dctx_i . v_j, then through the softmax: dS = P * (dP - rowsum(dP * P)).
__global__ void attention_dprobs_kernel(AttentionShape s, const float* d_context, const float* v, float* d_probs) {
  const std::int64_t seq = s.seq, d = s.head_dim, qw = std::int64_t(s.heads) * d, kw = std::int64_t(s.kv_heads) * d;
  const int group = s.heads / s.kv_heads;
  IBT_GRID_LOOP(idx, std::int64_t(s.batch) * s.heads * seq * seq) {
    const std::int64_t j = idx % seq, i = (idx / seq) % seq, h = (idx / (seq * seq)) % s.heads,
                       b = idx / (seq * seq * s.heads);
    if (j > i) {
      d_probs[idx] = 0.0f;
      continue;
    }
    const float* dr = d_context + (b * seq + i) * qw + h * d;
    const float* vr = v + (b * seq + j) * kw + (h / group) * d;
    float acc = 0;
    for (std::int64_t e = 0; e < d; ++e) acc += dr[e] * vr[e];
    d_probs[idx] = acc;
  }
}

// In place (d_scores == d_probs) when fp32, as causal_softmax_kernel.
template <typename T>
__global__ void softmax_backward_kernel(const T* probs, const float* d_probs, T* d_scores, int seq, int block) {
  const std::int64_t row = blockIdx.x;
  const int i = static_cast<int>(row % seq);
  const T* p = probs + row * seq;
  const float* dp = d_probs + row * seq;
  T* ds = d_scores + row * seq;
  double dot = 0;
  for (int j = threadIdx.x; j <= i; j += blockDim.x) dot += dp[j] * load(p + j);
  const float total = static_cast<float>(block_sum(dot));
  // Keys after i are masked: their gradient is 0 (the GEMM path computes dP there too).
  const int end = written_end(i, seq, block);
  for (int j = threadIdx.x; j < end; j += blockDim.x) store(ds + j, j <= i ? load(p + j) * (dp[j] - total) : 0.0f);
}

// dk[b*seq+j, hk*d+e] = scale * sum over the group's query heads h and i >= j of
// dS[b,h,i,j] q[b*seq+i, h*d+e]; dv likewise with P and d_context (no scale).
__global__ void attention_dkv_kernel(AttentionShape s, const float* d_scores, const float* probs, const float* q,
                                     const float* d_context, float scale, float* dk, float* dv) {
  const std::int64_t seq = s.seq, d = s.head_dim, qw = std::int64_t(s.heads) * d, kw = std::int64_t(s.kv_heads) * d;
  const int group = s.heads / s.kv_heads;
  IBT_GRID_LOOP(idx, std::int64_t(s.batch) * seq * kw) {
    const std::int64_t e = idx % d, hk = (idx / d) % s.kv_heads, j = (idx / kw) % seq, b = idx / (kw * seq);
    float acc_k = 0, acc_v = 0;
    for (int g = 0; g < group; ++g) {
      const std::int64_t h = hk * group + g;
      const float* ds = d_scores + (b * s.heads + h) * seq * seq + j;
      const float* p = probs + (b * s.heads + h) * seq * seq + j;
      for (std::int64_t i = j; i < seq; ++i) {
        const std::int64_t row = (b * seq + i) * qw + h * d + e;
        acc_k += ds[i * seq] * q[row];
        acc_v += p[i * seq] * d_context[row];
      }
    }
    dk[idx] = scale * acc_k;
    dv[idx] = acc_v;
  }
}

__global__ void row_max_kernel(const float* logits, std::int64_t v, float* row_max) {
  const float* z = logits + std::int64_t(blockIdx.x) * v;
  float mx = -FLT_MAX;
  for (std::int64_t j = threadIdx.x; j < v; j += blockDim.x) mx = fmaxf(mx, z[j]);
  mx = block_max(mx);
  if (threadIdx.x == 0) row_max[blockIdx.x] = mx;
}

__global__ void sum_exp_target_kernel(const float* logits, const std::int32_t* targets, std::int64_t v,
                                      std::int64_t vocab_begin, const float* row_max, float* sum_exp,
                                      float* target_logit) {
  const std::int64_t t = blockIdx.x;
  const float* z = logits + t * v;
  double sum = 0;
  for (std::int64_t j = threadIdx.x; j < v; j += blockDim.x) sum += exp(double(z[j]) - row_max[t]);
  sum = block_sum(sum);
  if (threadIdx.x == 0) {
    sum_exp[t] = static_cast<float>(sum);
    const std::int64_t local = targets[t] - vocab_begin;
    target_logit[t] = (local >= 0 && local < v) ? z[local] : 0.0f;
  }
}

__global__ void cross_entropy_kernel(const float* row_max, const float* sum_exp, const float* target_logit,
                                     std::int64_t rows, double* loss) {
  IBT_GRID_LOOP(t, rows) loss[t] = log(double(sum_exp[t])) + row_max[t] - target_logit[t];
}

__global__ void logits_grad_kernel(const float* logits, const std::int32_t* targets, std::int64_t rows, std::int64_t v,
                                   std::int64_t vocab_begin, const float* row_max, const float* sum_exp, float scale,
                                   float* d_logits) {
  IBT_GRID_LOOP(i, rows * v) {
    const std::int64_t t = i / v, j = i % v;
    double g = scale * exp(double(logits[i]) - row_max[t]) / double(sum_exp[t]);
    if (targets[t] - vocab_begin == j) g -= scale;
    d_logits[i] = static_cast<float>(g);
  }
}

__global__ void add_kernel(float* dst, const float* src, std::int64_t n) { IBT_GRID_LOOP(i, n) dst[i] += src[i]; }

__global__ void adamw_kernel(float* param, const float* grad, float* m, float* v, std::int64_t n, double bc1,
                             double bc2, AdamWParams c, double wd, void* operand, bool bf16) {
  IBT_GRID_LOOP(i, n) {
    const double g = grad[i];
    m[i] = static_cast<float>(c.beta1 * m[i] + (1.0 - c.beta1) * g);
    v[i] = static_cast<float>(c.beta2 * v[i] + (1.0 - c.beta2) * g * g);
    const double update = (m[i] / bc1) / (sqrt(v[i] / bc2) + c.eps) + wd * param[i];
    const float p = static_cast<float>(param[i] - c.lr * update);
    param[i] = p;
    if (operand) {
      if (bf16)
        static_cast<__nv_bfloat16*>(operand)[i] = __float2bfloat16(p);
      else
        static_cast<float*>(operand)[i] = p;
    }
  }
}

__global__ void sum_squares_kernel(const float* x, std::int64_t n, double* out) {
  double s = 0;
  IBT_GRID_LOOP(i, n) s += double(x[i]) * x[i];
  s = block_sum(s);
  if (threadIdx.x == 0) atomicAdd(out, s);
}

}  // namespace

void to_operand(const float* src, void* dst, std::int64_t n, bool bf16, cudaStream_t stream) {
  if (n == 0) return;
  if (bf16)
    to_bf16_kernel<<<blocks_for(n), kThreads, 0, stream>>>(src, static_cast<__nv_bfloat16*>(dst), n);
  else
    copy_kernel<<<blocks_for(n), kThreads, 0, stream>>>(src, static_cast<float*>(dst), n);
  check_launch("to_operand");
}

void embedding_forward(const std::int32_t* tokens, std::int64_t count, const float* table, std::int64_t table_rows,
                       std::int64_t vocab_begin, std::int64_t hidden, float* out, cudaStream_t stream) {
  embedding_forward_kernel<<<blocks_for(count * hidden), kThreads, 0, stream>>>(tokens, count, table, table_rows,
                                                                                vocab_begin, hidden, out);
  check_launch("embedding_forward");
}

void embedding_backward(const std::int32_t* tokens, std::int64_t count, const float* d_out, std::int64_t table_rows,
                        std::int64_t vocab_begin, std::int64_t hidden, float* table_grad, cudaStream_t stream) {
  embedding_backward_kernel<<<blocks_for(count * hidden), kThreads, 0, stream>>>(tokens, count, d_out, table_rows,
                                                                                 vocab_begin, hidden, table_grad);
  check_launch("embedding_backward");
}

void norm_forward(const float* x, const float* gain, const float* bias, std::int64_t rows, std::int64_t n,
                  bool layernorm, float eps, OperandOut y, float* mean, float* rstd, cudaStream_t stream) {
  if (rows == 0) return;
  with_type(y, [&](auto* out) {
    norm_forward_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, gain, bias, n, layernorm, eps, out,
                                                                              mean, rstd);
  });
  check_launch("norm_forward");
}

void norm_backward(const float* x, const float* gain, const float* mean, const float* rstd, const float* dy,
                   std::int64_t rows, std::int64_t n, bool layernorm, float* dx, float* gain_grad, float* bias_grad,
                   cudaStream_t stream) {
  if (rows == 0) return;
  norm_backward_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, gain, mean, rstd, dy, n, layernorm, dx,
                                                                             gain_grad, bias_grad);
  check_launch("norm_backward");
}

void swiglu_forward(const float* gate, const float* up, OperandOut act, std::int64_t n, cudaStream_t stream) {
  with_type(act, [&](auto* out) { swiglu_forward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(gate, up, out, n); });
  check_launch("swiglu_forward");
}

void swiglu_backward(const float* gate, const float* up, const float* d_act, OperandOut d_gate, OperandOut d_up,
                     std::int64_t n, cudaStream_t stream) {
  if (d_gate.bf16 != d_up.bf16) throw std::logic_error("swiglu_backward: d_gate and d_up in different precisions");
  with_type(d_gate, [&](auto* dg) {
    using Out = std::remove_pointer_t<decltype(dg)>;
    swiglu_backward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(gate, up, d_act, dg, static_cast<Out*>(d_up.data),
                                                                   n);
  });
  check_launch("swiglu_backward");
}

void gelu_forward(const float* pre, OperandOut act, std::int64_t n, cudaStream_t stream) {
  with_type(act, [&](auto* out) { gelu_forward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(pre, out, n); });
  check_launch("gelu_forward");
}

void gelu_backward(const float* pre, const float* d_act, OperandOut d_pre, std::int64_t n, cudaStream_t stream) {
  with_type(d_pre,
            [&](auto* out) { gelu_backward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(pre, d_act, out, n); });
  check_launch("gelu_backward");
}

void causal_softmax(const float* scores, OperandOut probs, std::int64_t rows, int seq, int block, cudaStream_t stream) {
  if (rows == 0) return;
  if (block < 1) throw std::logic_error("causal_softmax: block must be at least 1 row");
  with_type(probs, [&](auto* out) {
    causal_softmax_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(scores, out, seq, block);
  });
  check_launch("causal_softmax");
}

void causal_softmax_backward(OperandIn probs, const float* d_probs, OperandOut d_scores, std::int64_t rows, int seq,
                             int block, cudaStream_t stream) {
  if (rows == 0) return;
  if (block < 1) throw std::logic_error("causal_softmax_backward: block must be at least 1 row");
  if (probs.bf16 != d_scores.bf16)
    throw std::logic_error("causal_softmax_backward: probabilities and score gradients in different precisions");
  with_type(d_scores, [&](auto* ds) {
    using T = std::remove_pointer_t<decltype(ds)>;
    softmax_backward_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(static_cast<const T*>(probs.data),
                                                                                  d_probs, ds, seq, block);
  });
  check_launch("softmax_backward");
}

void attention_forward(const AttentionShape& s, const float* q, const float* k, const float* v, float* probs,
                       float* context, cudaStream_t stream) {
  const float scale = 1.0f / sqrtf(static_cast<float>(s.head_dim));
  const std::int64_t scores = std::int64_t(s.batch) * s.heads * s.seq * s.seq;
  const std::int64_t rows = std::int64_t(s.batch) * s.heads * s.seq;
  attention_scores_kernel<<<blocks_for(scores), kThreads, 0, stream>>>(s, q, k, scale, probs);
  check_launch("attention_scores");
  causal_softmax(probs, probs, rows, s.seq, s.seq, stream);
  const std::int64_t out = std::int64_t(s.batch) * s.seq * s.heads * s.head_dim;
  attention_rows_times_kv_kernel<<<blocks_for(out), kThreads, 0, stream>>>(s, probs, v, 1.0f, context);
  check_launch("attention_context");
}

void attention_backward(const AttentionShape& s, const float* q, const float* k, const float* v, const float* probs,
                        const float* d_context, float* d_probs, float* dq, float* dk, float* dv, cudaStream_t stream) {
  const float scale = 1.0f / sqrtf(static_cast<float>(s.head_dim));
  const std::int64_t scores = std::int64_t(s.batch) * s.heads * s.seq * s.seq;
  const std::int64_t rows = std::int64_t(s.batch) * s.heads * s.seq;
  attention_dprobs_kernel<<<blocks_for(scores), kThreads, 0, stream>>>(s, d_context, v, d_probs);
  check_launch("attention_dprobs");
  causal_softmax_backward(probs, d_probs, d_probs, rows, s.seq, s.seq, stream);
  const std::int64_t nq = std::int64_t(s.batch) * s.seq * s.heads * s.head_dim;
  const std::int64_t nkv = std::int64_t(s.batch) * s.seq * s.kv_heads * s.head_dim;
  attention_rows_times_kv_kernel<<<blocks_for(nq), kThreads, 0, stream>>>(s, d_probs, k, scale, dq);
  check_launch("attention_dq");
  attention_dkv_kernel<<<blocks_for(nkv), kThreads, 0, stream>>>(s, d_probs, probs, q, d_context, scale, dk, dv);
  check_launch("attention_dkv");
}

void logits_row_max(const float* logits, std::int64_t rows, std::int64_t v, float* row_max, cudaStream_t stream) {
  if (rows == 0) return;
  row_max_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(logits, v, row_max);
  check_launch("logits_row_max");
}

void logits_sum_exp_and_target(const float* logits, const std::int32_t* targets, std::int64_t rows, std::int64_t v,
                               std::int64_t vocab_begin, const float* row_max, float* sum_exp, float* target_logit,
                               cudaStream_t stream) {
  if (rows == 0) return;
  sum_exp_target_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(logits, targets, v, vocab_begin, row_max,
                                                                              sum_exp, target_logit);
  check_launch("logits_sum_exp_and_target");
}

void cross_entropy_rows(const float* row_max, const float* sum_exp, const float* target_logit, std::int64_t rows,
                        double* loss, cudaStream_t stream) {
  cross_entropy_kernel<<<blocks_for(rows), kThreads, 0, stream>>>(row_max, sum_exp, target_logit, rows, loss);
  check_launch("cross_entropy_rows");
}

void logits_grad(const float* logits, const std::int32_t* targets, std::int64_t rows, std::int64_t v,
                 std::int64_t vocab_begin, const float* row_max, const float* sum_exp, float scale, float* d_logits,
                 cudaStream_t stream) {
  logits_grad_kernel<<<blocks_for(rows * v), kThreads, 0, stream>>>(logits, targets, rows, v, vocab_begin, row_max,
                                                                    sum_exp, scale, d_logits);
  check_launch("logits_grad");
}

void add_into(float* dst, const float* src, std::int64_t n, cudaStream_t stream) {
  add_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dst, src, n);
  check_launch("add_into");
}

void adamw_step(float* master, const float* grad, float* m, float* v, std::int64_t n, std::int64_t t,
                const AdamWParams& c, bool decay, void* operand, bool bf16, cudaStream_t stream) {
  const double bc1 = 1.0 - pow(c.beta1, static_cast<double>(t));
  const double bc2 = 1.0 - pow(c.beta2, static_cast<double>(t));
  adamw_kernel<<<blocks_for(n), kThreads, 0, stream>>>(master, grad, m, v, n, bc1, bc2, c, decay ? c.weight_decay : 0.0,
                                                       operand, bf16);
  check_launch("adamw_step");
}

void sum_squares(const float* x, std::int64_t n, double* out, cudaStream_t stream) {
  if (n == 0) return;
  sum_squares_kernel<<<blocks_for(n) < 1024 ? blocks_for(n) : 1024, kThreads, 0, stream>>>(x, n, out);
  check_launch("sum_squares");
}

}  // namespace ibt::gpu
