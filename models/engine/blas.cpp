#include "models/engine/blas.hpp"

#include <cblas.h>

#include "models/engine/deferred_weight_grads.hpp"

namespace ibt::models {

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
              static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), alpha, a,
              static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
}

void linear_forward(const float* x, const float* w, float* y, int64_t tokens, int64_t in, int64_t out,
                    bool accumulate) {
  gemm(false, true, tokens, out, in, 1.0f, x, in, w, in, accumulate ? 1.0f : 0.0f, y, out);
}

void linear_backward_input(const float* dy, const float* w, float* dx, int64_t tokens, int64_t in, int64_t out,
                           bool accumulate) {
  gemm(false, false, tokens, in, out, 1.0f, dy, out, w, in, accumulate ? 1.0f : 0.0f, dx, in);
}

void linear_backward_weight(const float* dy, const float* x, float* dw, int64_t tokens, int64_t in, int64_t out) {
  if (tokens == 0) return;
  // A split backward's B (deferred_weight_grads.hpp): its W computes this later. run()
  // calls back here with no queue active on the thread.
  if (WeightGradQueue* queue = deferred_weight_grads()) return queue->push(dy, x, dw, tokens, in, out);
  gemm(true, false, out, in, tokens, 1.0f, dy, out, x, in, 1.0f, dw, in);
}

void set_blas_threads(int threads) { openblas_set_num_threads(threads); }
int blas_threads() { return openblas_get_num_threads(); }

}  // namespace ibt::models
