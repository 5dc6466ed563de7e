#include "models/engine/sgemm_peak.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

#include "models/engine/blas.hpp"

namespace ibt::models {

double measure_sgemm_peak_gflops(int threads) {
  const int previous = blas_threads();
  set_blas_threads(threads);
  const int n = kSgemmPeakSize;
  std::vector<float> a(static_cast<size_t>(n) * n, 0.5f), b(a.size(), 0.25f), c(a.size());
  const auto call = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    gemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  call();  // the warm-up
  double best = 1e30, spent = 0;
  for (int i = 0; i < kSgemmPeakMinCalls || (spent < kSgemmPeakMinSeconds && i < kSgemmPeakMaxCalls); ++i) {
    const double t = call();
    best = std::min(best, t);
    spent += t;
  }
  set_blas_threads(previous);
  return 2.0 * n * n * n / best * 1e-9;
}

std::string sgemm_peak_rule() {
  return "sgemm " + std::to_string(kSgemmPeakSize) + "^3, best of >= " + std::to_string(kSgemmPeakMinCalls) +
         " calls and >= " + std::to_string(static_cast<int>(kSgemmPeakMinSeconds * 1000)) + " ms after a warm-up";
}

}  // namespace ibt::models
