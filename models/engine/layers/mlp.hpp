#pragma once
// Feed-forward block, GELU (tanh approximation) or SwiGLU, Megatron tensor-parallel:
// the first GEMM(s) are column-parallel (shard r of t holds rows [r*F/t, (r+1)*F/t) of
// W_up and, for SwiGLU, W_gate), the second is row-parallel (the matching columns of
// W_down). forward() returns a PARTIAL SUM the caller all-reduces over TP; backward()
// takes the full output gradient and returns a partial input gradient.
// The same class serves dense MLPs, routed experts and shared experts (by name prefix).
#include <cstdint>
#include <string>
#include <vector>

#include "models/engine/tensor.hpp"
#include "models/plan/model_config.hpp"

namespace ibt::models {

struct MlpCache {
  Tensor x;     // input [n, hidden]
  Tensor gate;  // SwiGLU: x·W_gate^T; GELU: x·W_up^T (the pre-activation)
  Tensor up;    // SwiGLU only: x·W_up^T
  Tensor act;   // activation output, the down projection's input [n, F_local]
};

struct MlpShape {
  int64_t hidden = 0;
  int64_t ffn = 0;  // full inner size (before TP)
  Activation activation = Activation::swiglu;
};

class Mlp {
 public:
  // prefix: parameter name prefix, e.g. "layers.3.mlp." or "layers.3.experts.5.".
  Mlp(const MlpShape& shape, uint64_t seed, const std::string& prefix, Shard tp, double std, double out_std);
  // x: [n, hidden] (any row count, 0 included). out: [n, hidden] partial, overwritten.
  void forward(const Tensor& x, Tensor& out, MlpCache& cache) const;
  // dx overwritten with the partial input gradient; weight gradients accumulated.
  void backward(const MlpCache& cache, const Tensor& d_out, Tensor& dx);
  std::vector<Param*> params();

  Param w_gate;  // [F_local, hidden], SwiGLU only
  Param w_up;    // [F_local, hidden]
  Param w_down;  // [hidden, F_local]

 private:
  MlpShape shape_;
  int64_t ffn_local_ = 0;
  // backward()'s working buffers, kept from call to call so that a step neither
  // allocates nor clears them (each is written in full before it is read).
  struct Scratch {
    Tensor d_act, d_gate, d_up;
  } scratch_;
};

// GELU, tanh approximation (GPT-2), and its derivative.
float gelu(float x);
float gelu_grad(float x);
float silu(float x);
float silu_grad(float x);

}  // namespace ibt::models
