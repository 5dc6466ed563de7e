#pragma once
// The problems `ibt gemm` measures. Training-shaped: for each linear layer of a
// transformer block, the forward product and the two backward ones (input gradient and
// weight gradient), with M = tokens per GPU and N, K from the hidden and FFN sizes. Pure
// C++: no CUDA needed to build or test it.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ibt::gpu {

// How `ibt gemm` measures each problem.
struct GemmOptions {
  int warmup = 10;     // untimed products before the timed ones
  int reps = 50;       // timed products; the median is reported
  int algorithms = 4;  // cuBLASLt heuristic candidates tried; the fastest is measured
};

// D[m x n] = A[m x k] * B[k x n]; 2*m*n*k floating-point operations.
struct GemmShape {
  std::string name;  // "mlp_up.fwd", or "MxNxK" for shapes given by hand
  std::int64_t m = 0, n = 0, k = 0;
  double flops() const { return 2.0 * double(m) * double(n) * double(k); }
};

enum class GemmPrecision { bf16, fp8_e4m3 };
std::string_view to_string(GemmPrecision p);
// "bf16"/"bfloat16", "fp8"/"fp8_e4m3"; throws UsageError naming the value.
GemmPrecision parse_gemm_precision(std::string_view name);
std::vector<GemmPrecision> parse_gemm_precisions(std::string_view csv);

// "4096x4096x4096,8192x1024x512"; throws UsageError naming the bad entry.
std::vector<GemmShape> parse_shapes(std::string_view csv);

struct TransformerDims {
  std::int64_t tokens = 0;  // tokens per GPU per step (micro-batch x sequence)
  std::int64_t hidden = 0;
  std::int64_t ffn_hidden = 0;
  std::int64_t kv_hidden = 0;  // heads_kv x head_dim; == hidden without GQA
  bool gated_mlp = true;       // SwiGLU: the up projection makes gate and up (2 x ffn)
};
// QKV, attention output, MLP up and MLP down, each as fwd, dgrad and wgrad.
std::vector<GemmShape> training_shapes(const TransformerDims& dims);

}  // namespace ibt::gpu
