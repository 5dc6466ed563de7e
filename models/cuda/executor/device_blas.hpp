#pragma once
// The cuda executor's GEMMs: cuBLAS cublasGemmEx with bf16 (or fp32) operands, fp32
// (or operand-precision) output and fp32 accumulation (CUBLAS_COMPUTE_32F), in the engine's row-major
// convention (models/engine/blas.hpp): C[M,N] = alpha * op(A) op(B) + beta * C with A, B, C
// row-major and op(X) = X or X^T. cuBLAS is column-major, so each call computes
// C^T = op(B)^T op(A)^T: the operands swap and the transpose flags stay.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

namespace ibt::gpu {

// What the GEMM operands are: bf16 (`ibt train --precision bf16`, the default on the
// GPU) or fp32 (for checking the GPU path against the CPU engine tightly).
enum class MathPrecision { bf16, fp32 };
const char* to_string(MathPrecision p);
MathPrecision parse_math_precision(const std::string& s);  // throws UsageError naming the value
inline std::size_t operand_bytes(MathPrecision p) { return p == MathPrecision::bf16 ? 2 : 4; }

class DeviceBlas {
 public:
  DeviceBlas(MathPrecision precision, cudaStream_t stream);
  ~DeviceBlas();
  DeviceBlas(const DeviceBlas&) = delete;
  DeviceBlas& operator=(const DeviceBlas&) = delete;

  MathPrecision precision() const { return precision_; }
  bool bf16() const { return precision_ == MathPrecision::bf16; }

  // What C holds: fp32, or the operand precision (bf16 in bf16 runs) for a product whose
  // only reader is another GEMM (cuBLAS rounds the fp32 accumulator once, as a cast
  // afterwards would, without the extra pass over memory).
  enum class Output { fp32, operand };

  // a, b: operands in this precision (to_operand()); c: fp32 unless `out` says otherwise.
  void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const void* a,
            std::int64_t lda, const void* b, std::int64_t ldb, float beta, void* c, std::int64_t ldc,
            Output out = Output::fp32);

  // A batch of products C_i = alpha op(A_i) op(B_i) + beta C_i, X_i = X + i * stride_x
  // (strides in elements), operands in this precision, fp32 accumulation, in the same
  // row-major convention: the attention core's products (attention_gemm.hpp).
  void batched(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const void* a,
               std::int64_t lda, std::int64_t stride_a, const void* b, std::int64_t ldb, std::int64_t stride_b,
               float beta, void* c, std::int64_t ldc, std::int64_t stride_c, std::int64_t batch,
               Output out = Output::fp32);

  // The layers' three products for y = x W^T with x [rows, in] and W [out, in]:
  void linear_forward(const void* x, const void* w, float* y, std::int64_t rows, std::int64_t in, std::int64_t out) {
    gemm(false, true, rows, out, in, 1.0f, x, in, w, in, 0.0f, y, out);
  }
  // The same with y in the operand precision (q, k and v for the attention's products).
  void linear_forward_to_operand(const void* x, const void* w, void* y, std::int64_t rows, std::int64_t in,
                                 std::int64_t out) {
    gemm(false, true, rows, out, in, 1.0f, x, in, w, in, 0.0f, y, out, Output::operand);
  }
  // dW += dy^T x
  void linear_backward_weight(const void* dy, const void* x, float* dw, std::int64_t rows, std::int64_t in,
                              std::int64_t out) {
    gemm(true, false, out, in, rows, 1.0f, dy, out, x, in, 1.0f, dw, in);
  }
  // dx (+)= dy W
  void linear_backward_input(const void* dy, const void* w, float* dx, std::int64_t rows, std::int64_t in,
                             std::int64_t out, bool accumulate) {
    gemm(false, false, rows, in, out, 1.0f, dy, out, w, in, accumulate ? 1.0f : 0.0f, dx, in);
  }
  // dx = dy W in the operand precision (the attention context's gradient).
  void linear_backward_input_to_operand(const void* dy, const void* w, void* dx, std::int64_t rows, std::int64_t in,
                                        std::int64_t out) {
    gemm(false, false, rows, in, out, 1.0f, dy, out, w, in, 0.0f, dx, in, Output::operand);
  }

 private:
  cudaDataType_t operand_type() const;
  cudaDataType_t output_type(Output out) const;

  MathPrecision precision_;
  cublasHandle_t handle_ = nullptr;
};

}  // namespace ibt::gpu
