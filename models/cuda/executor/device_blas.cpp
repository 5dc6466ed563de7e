#include "models/cuda/executor/device_blas.hpp"

#include "core/errors.hpp"

namespace ibt::gpu {

namespace {
void check_cublas(cublasStatus_t rc, const std::string& what) {
  if (rc != CUBLAS_STATUS_SUCCESS)
    throw RuntimeError(what + " failed: " + cublasGetStatusString(rc) + " (" + cublasGetStatusName(rc) + ")");
}
}  // namespace

const char* to_string(MathPrecision p) { return p == MathPrecision::bf16 ? "bf16" : "fp32"; }

MathPrecision parse_math_precision(const std::string& s) {
  if (s == "bf16") return MathPrecision::bf16;
  if (s == "fp32") return MathPrecision::fp32;
  if (s == "fp8")
    throw UsageError("--precision fp8: not offered by the cuda executor (fp8 GEMMs are measured by `ibt gemm` only)");
  throw UsageError("--precision '" + s + "': expected bf16 or fp32");
}

DeviceBlas::DeviceBlas(MathPrecision precision, cudaStream_t stream) : precision_(precision) {
  check_cublas(cublasCreate(&handle_), "cublasCreate");
  check_cublas(cublasSetStream(handle_, stream), "cublasSetStream");
  // fp32 operands stay fp32 (no TF32): that precision exists to check the GPU path tightly.
  check_cublas(cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
}

DeviceBlas::~DeviceBlas() {
  if (handle_) cublasDestroy(handle_);
}

cudaDataType_t DeviceBlas::operand_type() const { return bf16() ? CUDA_R_16BF : CUDA_R_32F; }

cudaDataType_t DeviceBlas::output_type(Output out) const {
  return out == Output::operand ? operand_type() : CUDA_R_32F;
}

void DeviceBlas::gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                      const void* a, std::int64_t lda, const void* b, std::int64_t ldb, float beta, void* c,
                      std::int64_t ldc, Output out) {
  if (m == 0 || n == 0) return;
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T.
  check_cublas(cublasGemmEx(handle_, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                            static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &alpha, b, operand_type(),
                            static_cast<int>(ldb), a, operand_type(), static_cast<int>(lda), &beta, c, output_type(out),
                            static_cast<int>(ldc), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k));
}

void DeviceBlas::batched(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                         const void* a, std::int64_t lda, std::int64_t stride_a, const void* b, std::int64_t ldb,
                         std::int64_t stride_b, float beta, void* c, std::int64_t ldc, std::int64_t stride_c,
                         std::int64_t batch, Output out) {
  if (m == 0 || n == 0 || batch == 0) return;
  // As gemm(): row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T.
  check_cublas(
      cublasGemmStridedBatchedEx(handle_, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                                 static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &alpha, b,
                                 operand_type(), static_cast<int>(ldb), stride_b, a, operand_type(),
                                 static_cast<int>(lda), stride_a, &beta, c, output_type(out), static_cast<int>(ldc),
                                 stride_c, static_cast<int>(batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
      "cublasGemmStridedBatchedEx " + std::to_string(batch) + " x " + std::to_string(m) + "x" + std::to_string(n) +
          "x" + std::to_string(k));
}

}  // namespace ibt::gpu
