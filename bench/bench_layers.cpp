// The engine's GEMM-bound layer step against raw BLAS. BM_MlpStep runs a SwiGLU MLP
// forward + backward (9 GEMMs: 3 forward, 6 backward, plus the elementwise SwiGLU);
// BM_MlpStepSgemmOnly issues the same 9 cblas_sgemm calls at the same shapes with
// nothing else, so engine / sgemm time is the engine's overhead. BM_AttentionStep and
// BM_LmHeadStep do the same for small-dense's attention layer (projections plus the
// unfused core) and its LM head with the cross-entropy. BM_ReferenceStep times one
// serial reference training step of a catalog model and reports model FLOP/s
// (accounting.hpp's definition), the figure MFU is computed from.
//
// peak_frac: the layer's GFLOP/s over the sgemm peak measured in the same run (1024^3,
// best of 5, same thread count): the "GEMM-bound layers at >= 70% of the sgemm peak"
// figure. Both are per second of PROCESS CPU time (all threads), so the fraction is a
// per-core efficiency that a shared, loaded machine does not distort the way wall
// time is distorted; the GFLOP/s column is Google Benchmark's, against CPU time too.
//
//   ibt_bench_layers --benchmark_counters_tabular=true
// Thread count: OpenBLAS uses IBT_BENCH_THREADS (default 1) threads. "Time" is wall
// time (compare it across thread counts); "CPU" and GFLOP/s are process CPU time.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <vector>

#include "models/engine/blas.hpp"
#include "models/engine/data.hpp"
#include "models/engine/init.hpp"
#include "models/engine/layers/attention.hpp"
#include "models/engine/layers/mlp.hpp"
#include "models/engine/loss.hpp"
#include "models/engine/reference_trainer.hpp"
#include "models/plan/accounting.hpp"
#include "models/plan/model_file.hpp"

namespace {

using namespace ibt::models;

int bench_threads() {
  const char* env = std::getenv("IBT_BENCH_THREADS");
  return env ? std::max(1, std::atoi(env)) : 1;
}

// FLOPs of one SwiGLU MLP forward + backward: 3 GEMMs of 2*T*h*f forward, twice that
// backward.
double mlp_step_flops(int64_t tokens, int64_t hidden, int64_t ffn) { return 9.0 * 2.0 * tokens * hidden * ffn; }

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// The sgemm peak of this run: 1024^3 at bench_threads(), best of 5, per process CPU second.
double sgemm_peak_gflops() {
  static const double peak = [] {
    set_blas_threads(bench_threads());
    const int n = 1024;
    std::vector<float> a(static_cast<size_t>(n) * n, 0.5f), b(a.size(), 0.25f), c(a.size());
    double best = 1e30;
    for (int i = 0; i < 5; ++i) {
      const double t0 = process_cpu_seconds();
      gemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
      best = std::min(best, process_cpu_seconds() - t0);
    }
    return 2.0 * n * n * n / best * 1e-9;
  }();
  return peak;
}

// cpu_seconds: process CPU time of the whole timed loop (see peak_frac above).
void set_counters(benchmark::State& state, double flops_per_iter, double cpu_seconds = 0) {
  state.counters["GFLOP/s"] = benchmark::Counter(flops_per_iter * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = bench_threads();
  if (cpu_seconds > 0) {
    const double gflops = flops_per_iter * static_cast<double>(state.iterations()) / cpu_seconds * 1e-9;
    state.counters["peak_frac"] = gflops / sgemm_peak_gflops();
    state.counters["peak_GFLOP/s"] = sgemm_peak_gflops();
  }
}

void BM_MlpStep(benchmark::State& state) {
  set_blas_threads(bench_threads());
  const int64_t tokens = state.range(0), hidden = state.range(1), ffn = state.range(2);
  Mlp mlp(MlpShape{hidden, ffn, Activation::swiglu}, 1, "mlp.", Shard{}, 0.02, 0.02);
  const Tensor x = init_normal(2, "x", {tokens, hidden}, 1.0);
  const Tensor dy = init_normal(3, "dy", {tokens, hidden}, 1.0);
  Tensor y, dx;
  MlpCache cache;
  sgemm_peak_gflops();  // measured before the timed loop
  const double t0 = process_cpu_seconds();
  for (auto _ : state) {
    mlp.forward(x, y, cache);
    mlp.backward(cache, dy, dx);
    benchmark::DoNotOptimize(dx.data.data());
  }
  set_counters(state, mlp_step_flops(tokens, hidden, ffn), process_cpu_seconds() - t0);
}

void BM_MlpStepSgemmOnly(benchmark::State& state) {
  set_blas_threads(bench_threads());
  const int64_t T = state.range(0), h = state.range(1), f = state.range(2);
  std::vector<float> x(T * h, 0.5f), dy(T * h, 0.25f), wg(f * h, 0.01f), wu(f * h, 0.01f), wd(h * f, 0.01f);
  std::vector<float> g(T * f), u(T * f), a(T * f), y(T * h), da(T * f), dx(T * h);
  std::vector<float> dwg(f * h), dwu(f * h), dwd(h * f);
  auto sgemm = [](bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* A, int64_t lda, const float* B,
                  int64_t ldb, float beta, float* C, int64_t ldc) {
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, A, lda, B,
                ldb, beta, C, ldc);
  };
  sgemm_peak_gflops();
  const double t0 = process_cpu_seconds();
  for (auto _ : state) {
    sgemm(false, true, T, f, h, x.data(), h, wg.data(), h, 0, g.data(), f);     // gate
    sgemm(false, true, T, f, h, x.data(), h, wu.data(), h, 0, u.data(), f);     // up
    sgemm(false, true, T, h, f, a.data(), f, wd.data(), f, 0, y.data(), h);     // down
    sgemm(true, false, h, f, T, dy.data(), h, a.data(), f, 1, dwd.data(), f);   // dW_down
    sgemm(false, false, T, f, h, dy.data(), h, wd.data(), f, 0, da.data(), f);  // d act
    sgemm(true, false, f, h, T, g.data(), f, x.data(), h, 1, dwg.data(), h);    // dW_gate
    sgemm(true, false, f, h, T, u.data(), f, x.data(), h, 1, dwu.data(), h);    // dW_up
    sgemm(false, false, T, h, f, g.data(), f, wg.data(), h, 0, dx.data(), h);   // dx (gate)
    sgemm(false, false, T, h, f, u.data(), f, wu.data(), h, 1, dx.data(), h);   // dx (up)
    benchmark::DoNotOptimize(dx.data());
  }
  set_counters(state, mlp_step_flops(T, h, f), process_cpu_seconds() - t0);
}

// (tokens, hidden, ffn): small-dense's MLP at one sequence (256 tokens) and at 4, and a
// square-ish larger case.
#define IBT_MLP_SHAPES                \
  Args({256, 512, 1536})              \
      ->Args({1024, 512, 1536})       \
      ->Args({1024, 1024, 4096})      \
      ->Unit(benchmark::kMillisecond) \
      ->MeasureProcessCPUTime()
BENCHMARK(BM_MlpStep)->IBT_MLP_SHAPES;
BENCHMARK(BM_MlpStepSgemmOnly)->IBT_MLP_SHAPES;

// small-dense's attention layer, forward + backward, on range(0) sequences: the Q, K, V
// and O projections (GEMMs of T x hidden x width) and the unfused causal core (per
// head: S x S x d GEMMs and a softmax), FLOPs counted as for a GEMM (2mnk each, the
// causal half not discounted, as accounting.hpp counts attention).
void BM_AttentionStep(benchmark::State& state) {
  set_blas_threads(bench_threads());
  const ModelConfig m = load_model("small-dense");
  const int batch = static_cast<int>(state.range(0));
  const int64_t T = static_cast<int64_t>(batch) * m.seq_len, d = m.head_dim();
  const int64_t qw = m.heads * d, kw = m.kv_heads * d;
  SelfAttention attention(m, 1, 0, Shard{});
  const Tensor x = init_normal(2, "x", {T, m.hidden}, 1.0);
  const Tensor dy = init_normal(3, "dy", {T, m.hidden}, 1.0);
  Tensor y, dx;
  AttentionCache cache;
  const double projections = 2.0 * T * m.hidden * (2 * qw + 2 * kw);
  const double core = 2.0 * 2.0 * batch * m.heads * m.seq_len * static_cast<double>(m.seq_len) * d;
  sgemm_peak_gflops();
  const double t0 = process_cpu_seconds();
  for (auto _ : state) {
    attention.forward(x, batch, m.seq_len, y, cache);
    attention.backward(cache, batch, m.seq_len, dy, dx);
    benchmark::DoNotOptimize(dx.data.data());
  }
  set_counters(state, 3.0 * (projections + core), process_cpu_seconds() - t0);
}
BENCHMARK(BM_AttentionStep)->Arg(1)->Arg(4)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();

// small-dense's LM head with the cross-entropy, forward + backward, on range(0) sequences:
// three T x hidden x vocab GEMMs plus the softmax over the vocabulary.
void BM_LmHeadStep(benchmark::State& state) {
  set_blas_threads(bench_threads());
  const ModelConfig m = load_model("small-dense");
  const int64_t T = state.range(0) * m.seq_len;
  LmHead head(m, 1, Shard{});
  const Tensor x = init_normal(2, "x", {T, m.hidden}, 1.0);
  std::vector<int32_t> targets(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) targets[static_cast<size_t>(t)] = static_cast<int32_t>((t * 7919) % m.vocab);
  Tensor logits, d_logits, dx;
  sgemm_peak_gflops();
  const double t0 = process_cpu_seconds();
  for (auto _ : state) {
    head.forward(x, logits);
    benchmark::DoNotOptimize(cross_entropy(logits, targets, 1.0f / static_cast<float>(T), d_logits));
    head.backward(x, d_logits, dx);
    benchmark::DoNotOptimize(dx.data.data());
  }
  set_counters(state, 3.0 * 2.0 * T * m.hidden * m.vocab, process_cpu_seconds() - t0);
}
BENCHMARK(BM_LmHeadStep)->Arg(1)->Arg(4)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();

// Peak reference: one large square sgemm.
void BM_SgemmSquare(benchmark::State& state) {
  set_blas_threads(bench_threads());
  const int64_t n = state.range(0);
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  set_counters(state, 2.0 * n * n * n);
}
BENCHMARK(BM_SgemmSquare)->Arg(1024)->Arg(2048)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();

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
