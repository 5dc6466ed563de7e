// The engine's GEMM-bound layer step against raw BLAS. BM_MlpStep runs a SwiGLU MLP
// forward + backward (9 GEMMs: 3 forward, 6 backward, plus the elementwise SwiGLU);
// BM_MlpStepSgemmOnly issues the same 9 cblas_sgemm calls at the same shapes with
// nothing else, so engine / sgemm time is the engine's overhead. BM_ReferenceStep
// times one serial reference training step of a catalog model and reports model
// FLOP/s (accounting.hpp's definition), the figure MFU is computed from.
//
//   ibt_bench_layers --benchmark_counters_tabular=true
// Thread count: OpenBLAS uses IBT_BENCH_THREADS (default 1) threads.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <cstdlib>
#include <vector>

#include "models/accounting.hpp"
#include "models/blas.hpp"
#include "models/data.hpp"
#include "models/init.hpp"
#include "models/layers/mlp.hpp"
#include "models/model_file.hpp"
#include "models/reference_trainer.hpp"

namespace {

using namespace ibt::models;

int bench_threads() {
  const char* env = std::getenv("IBT_BENCH_THREADS");
  return env ? std::max(1, std::atoi(env)) : 1;
}

// FLOPs of one SwiGLU MLP forward + backward: 3 GEMMs of 2*T*h*f forward, twice that
// backward.
double mlp_step_flops(int64_t tokens, int64_t hidden, int64_t ffn) { return 9.0 * 2.0 * tokens * hidden * ffn; }

void set_counters(benchmark::State& state, double flops_per_iter) {
  state.counters["GFLOP/s"] = benchmark::Counter(flops_per_iter * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = bench_threads();
}

void BM_MlpStep(benchmark::State& state) {
  set_blas_threads(bench_threads());
  const int64_t tokens = state.range(0), hidden = state.range(1), ffn = state.range(2);
  Mlp mlp(MlpShape{hidden, ffn, Activation::swiglu}, 1, "mlp.", Shard{}, 0.02, 0.02);
  const Tensor x = init_normal(2, "x", {tokens, hidden}, 1.0);
  const Tensor dy = init_normal(3, "dy", {tokens, hidden}, 1.0);
  Tensor y, dx;
  MlpCache cache;
  for (auto _ : state) {
    mlp.forward(x, y, cache);
    mlp.backward(cache, dy, dx);
    benchmark::DoNotOptimize(dx.data.data());
  }
  set_counters(state, mlp_step_flops(tokens, hidden, ffn));
}

void BM_MlpStepSgemmOnly(benchmark::State& state) {
  set_blas_threads(bench_threads());
  const int64_t T = state.range(0), h = state.range(1), f = state.range(2);
  std::vector<float> x(T * h, 0.5f), dy(T * h, 0.25f), wg(f * h, 0.01f), wu(f * h, 0.01f), wd(h * f, 0.01f);
  std::vector<float> g(T * f), u(T * f), a(T * f), y(T * h), da(T * f), dx(T * h);
  std::vector<float> dwg(f * h), dwu(f * h), dwd(h * f);
  auto sgemm = [](bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* A, int64_t lda, const float* B,
                  int64_t ldb, float beta, float* C, int64_t ldc) {
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, A,
                lda, B, ldb, beta, C, ldc);
  };
  for (auto _ : state) {
    sgemm(false, true, T, f, h, x.data(), h, wg.data(), h, 0, g.data(), f);    // gate
    sgemm(false, true, T, f, h, x.data(), h, wu.data(), h, 0, u.data(), f);    // up
    sgemm(false, true, T, h, f, a.data(), f, wd.data(), f, 0, y.data(), h);    // down
    sgemm(true, false, h, f, T, dy.data(), h, a.data(), f, 1, dwd.data(), f);  // dW_down
    sgemm(false, false, T, f, h, dy.data(), h, wd.data(), f, 0, da.data(), f); // d act
    sgemm(true, false, f, h, T, g.data(), f, x.data(), h, 1, dwg.data(), h);   // dW_gate
    sgemm(true, false, f, h, T, u.data(), f, x.data(), h, 1, dwu.data(), h);   // dW_up
    sgemm(false, false, T, h, f, g.data(), f, wg.data(), h, 0, dx.data(), h);  // dx (gate)
    sgemm(false, false, T, h, f, u.data(), f, wu.data(), h, 1, dx.data(), h);  // dx (up)
    benchmark::DoNotOptimize(dx.data());
  }
  set_counters(state, mlp_step_flops(T, h, f));
}

// (tokens, hidden, ffn): small-dense's MLP at one sequence (256 tokens) and at 4, and a
// square-ish larger case.
#define IBT_MLP_SHAPES \
  Args({256, 512, 1536})->Args({1024, 512, 1536})->Args({1024, 1024, 4096})->Unit(benchmark::kMillisecond)
BENCHMARK(BM_MlpStep)->IBT_MLP_SHAPES;
BENCHMARK(BM_MlpStepSgemmOnly)->IBT_MLP_SHAPES;

// Peak reference: one large square sgemm.
void BM_SgemmSquare(benchmark::State& state) {
  set_blas_threads(bench_threads());
  const int64_t n = state.range(0);
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f,
                c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  set_counters(state, 2.0 * n * n * n);
}
BENCHMARK(BM_SgemmSquare)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond);

// One serial reference step (global batch = range(0) sequences, one microbatch each)
// of small-dense: model FLOP/s by accounting.hpp's count (6N + attention, causal
// masking not discounted).
void BM_ReferenceStep(benchmark::State& state) {
  set_blas_threads(bench_threads());
  const ModelConfig m = load_model("small-dense");
  TrainConfig config;
  config.microbatches = static_cast<int>(state.range(0));
  config.micro_batch_size = 1;
  SyntheticData data(m.vocab, m.seq_len, config.seed);
  ReferenceTrainer trainer(m, config, data);
  for (auto _ : state) benchmark::DoNotOptimize(trainer.step().loss);
  set_counters(state, model_flops_per_step(m, config.global_sequences()));
}
BENCHMARK(BM_ReferenceStep)->Arg(2)->Unit(benchmark::kMillisecond)->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();
