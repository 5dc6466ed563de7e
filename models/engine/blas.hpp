#pragma once
// The engine's GEMMs, all through OpenBLAS cblas_sgemm (row-major). Linear layers use
// the [out, in] weight convention: y = x · W^T.
#include <cstdint>

namespace ibt::models {

// C[M,N] = alpha * op(A) · op(B) + beta * C, row-major with leading dimensions.
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// y[T,out] = x[T,in] · W[out,in]^T   (accumulate: y += ...)
void linear_forward(const float* x, const float* w, float* y, int64_t tokens, int64_t in, int64_t out,
                    bool accumulate = false);
// dx[T,in] = dy[T,out] · W[out,in]   (accumulate: dx += ...)
void linear_backward_input(const float* dy, const float* w, float* dx, int64_t tokens, int64_t in, int64_t out,
                           bool accumulate);
// dW[out,in] += dy[T,out]^T · x[T,in]   (gradients always accumulate over microbatches);
// queued instead while a DeferWeightGrads is alive (deferred_weight_grads.hpp)
void linear_backward_weight(const float* dy, const float* x, float* dw, int64_t tokens, int64_t in, int64_t out);

// OpenBLAS's thread count. Ranks share the machine's cores, so tests and the executor
// use 1; the benchmark states what it used.
void set_blas_threads(int threads);
int blas_threads();

}  // namespace ibt::models
