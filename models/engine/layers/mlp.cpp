#include "models/engine/layers/mlp.hpp"

#include <cmath>

#include "models/engine/blas.hpp"
#include "models/engine/exp_kernels.hpp"
#include "models/engine/init.hpp"

namespace ibt::models {

namespace {
constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;
}  // namespace

float gelu(float x) { return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * (x + kGeluCubic * x * x * x))); }

float gelu_grad(float x) {
  const float u = kSqrt2OverPi * (x + kGeluCubic * x * x * x);
  const float th = std::tanh(u);
  const float du = kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
  return 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du;
}

// exp_fp32 (exp_kernels.hpp) rather than libm's: inlined, the SwiGLU loops vectorise.
float silu(float x) { return x / (1.0f + exp_fp32(-x)); }

float silu_grad(float x) {
  const float s = 1.0f / (1.0f + exp_fp32(-x));
  return s * (1.0f + x * (1.0f - s));
}

namespace {
// The SwiGLU elementwise passes, cloned for AVX2 (the build targets baseline x86-64) so
// they run eight lanes wide. Elementwise IEEE arithmetic without FMA contraction (ISO
// C++ mode): every clone gives the same bits.
__attribute__((target_clones("avx2", "default"))) void swiglu_forward(const float* __restrict gate,
                                                                      const float* __restrict up, float* __restrict act,
                                                                      int64_t n) {
  for (int64_t i = 0; i < n; ++i) act[i] = gate[i] / (1.0f + exp_fp32(-gate[i])) * up[i];  // silu(gate) * up
}

__attribute__((target_clones("avx2", "default"))) void swiglu_backward(const float* __restrict gate,
                                                                       const float* __restrict up,
                                                                       const float* __restrict d_act,
                                                                       float* __restrict d_gate, float* __restrict d_up,
                                                                       int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    // One exp per element: silu(g) = g*s and silu'(g) = s*(1 + g*(1-s)), s = sigmoid(g).
    const float g = gate[i];
    const float sig = 1.0f / (1.0f + exp_fp32(-g));
    d_gate[i] = d_act[i] * up[i] * sig * (1.0f + g * (1.0f - sig));
    d_up[i] = d_act[i] * g * sig;
  }
}
}  // namespace

Mlp::Mlp(const MlpShape& shape, uint64_t seed, const std::string& prefix, Shard tp, double std, double out_std)
    : shape_(shape) {
  ffn_local_ = tp.size_of(shape.ffn, prefix + "ffn size");
  const int64_t begin = tp.begin_of(shape.ffn, prefix + "ffn size");
  const int64_t h = shape.hidden, f = shape.ffn;
  if (shape.activation == Activation::swiglu)
    w_gate =
        make_shard(prefix + "w_gate", init_normal(seed, prefix + "w_gate", {f, h}, std), 0, begin, ffn_local_, true);
  w_up = make_shard(prefix + "w_up", init_normal(seed, prefix + "w_up", {f, h}, std), 0, begin, ffn_local_, true);
  w_down =
      make_shard(prefix + "w_down", init_normal(seed, prefix + "w_down", {h, f}, out_std), 1, begin, ffn_local_, true);
}

std::vector<Param*> Mlp::params() {
  if (shape_.activation == Activation::swiglu) return {&w_gate, &w_up, &w_down};
  return {&w_up, &w_down};
}

void Mlp::forward(const Tensor& x, Tensor& out, MlpCache& c) const {
  const int64_t n = x.rows(), h = shape_.hidden, f = ffn_local_;
  c.x = x;
  // GEMMs with beta 0 and elementwise maps write every element: resize, not clear.
  c.gate.resize({n, f});
  c.act.resize({n, f});
  if (shape_.activation == Activation::swiglu) {
    c.up.resize({n, f});
    linear_forward(x.ptr(), w_gate.value.ptr(), c.gate.ptr(), n, h, f);
    linear_forward(x.ptr(), w_up.value.ptr(), c.up.ptr(), n, h, f);
    swiglu_forward(c.gate.ptr(), c.up.ptr(), c.act.ptr(), n * f);
  } else {
    linear_forward(x.ptr(), w_up.value.ptr(), c.gate.ptr(), n, h, f);
    for (int64_t i = 0; i < n * f; ++i) c.act.data[i] = gelu(c.gate.data[i]);
  }
  out.resize({n, h});
  linear_forward(c.act.ptr(), w_down.value.ptr(), out.ptr(), n, f, h);
}

void Mlp::backward(const MlpCache& c, const Tensor& d_out, Tensor& dx) {
  const int64_t n = c.x.rows(), h = shape_.hidden, f = ffn_local_;
  Tensor& d_act = scratch_.d_act;
  d_act.resize({n, f});  // the GEMMs below that write it have beta 0
  linear_backward_weight(d_out.ptr(), c.act.ptr(), w_down.grad.ptr(), n, f, h);
  linear_backward_input(d_out.ptr(), w_down.value.ptr(), d_act.ptr(), n, f, h, false);
  dx.resize({n, h});  // the first input-gradient GEMM below has beta 0
  if (shape_.activation == Activation::swiglu) {
    Tensor& d_gate = scratch_.d_gate;
    Tensor& d_up = scratch_.d_up;
    d_gate.resize({n, f});  // written in full by swiglu_backward
    d_up.resize({n, f});
    swiglu_backward(c.gate.ptr(), c.up.ptr(), d_act.ptr(), d_gate.ptr(), d_up.ptr(), n * f);
    linear_backward_weight(d_gate.ptr(), c.x.ptr(), w_gate.grad.ptr(), n, h, f);
    linear_backward_weight(d_up.ptr(), c.x.ptr(), w_up.grad.ptr(), n, h, f);
    linear_backward_input(d_gate.ptr(), w_gate.value.ptr(), dx.ptr(), n, h, f, false);
    linear_backward_input(d_up.ptr(), w_up.value.ptr(), dx.ptr(), n, h, f, true);
  } else {
    for (int64_t i = 0; i < n * f; ++i) d_act.data[i] *= gelu_grad(c.gate.data[i]);
    linear_backward_weight(d_act.ptr(), c.x.ptr(), w_up.grad.ptr(), n, h, f);
    linear_backward_input(d_act.ptr(), w_up.value.ptr(), dx.ptr(), n, h, f, false);
  }
}

}  // namespace ibt::models
