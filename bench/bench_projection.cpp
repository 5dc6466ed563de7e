// The projection engine's speed: one configuration of a 1T-parameter MoE (Kimi K2) on
// 16,384 H100s, and the full `ibt project --all` search for it. Target: the search in
// under 10 s on one core. Counters: configs/s (splits projected per second, infeasible
// ones included: they are checked and reported, not simulated).
#include <benchmark/benchmark.h>

#include <string>

#include "models/model_file.hpp"
#include "topologies/projection.hpp"

namespace {

constexpr int kDevices = 16384;
constexpr long long kGlobalBatch = 4096;  // sequences of 4,096 tokens: 16M tokens

void BM_ProjectOneConfig(benchmark::State& state) {
  ibt::topo::keep_freed_memory_for_reuse();
  const auto model = ibt::models::load_model("kimi-k2");
  const auto topo = ibt::topo::load_topology("dgx-h100");
  ibt::models::ParallelSplit s;
  s.tp = 8;
  s.pp = 32;
  s.dp = kDevices / (s.tp * s.pp);
  s.microbatches = static_cast<int>(kGlobalBatch / s.dp);
  s.sequence_parallel = true;
  s.zero = 1;
  double step = 0;
  for (auto _ : state) {
    const auto p = ibt::topo::project(model, topo, s);
    if (!p.feasible) {
      state.SkipWithError(p.reason.c_str());
      break;
    }
    step = p.step_s;
    benchmark::DoNotOptimize(p);
    benchmark::ClobberMemory();
  }
  state.SetLabel(ibt::models::describe(s) + " step " + std::to_string(step) + " s");
  state.counters["configs/s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["step_ms"] = step * 1e3;
}
BENCHMARK(BM_ProjectOneConfig)->Unit(benchmark::kMillisecond);

void BM_ProjectAllSplits(benchmark::State& state) {
  ibt::topo::keep_freed_memory_for_reuse();
  const auto model = ibt::models::load_model("kimi-k2");
  const auto topo = ibt::topo::load_topology("dgx-h100");
  const auto search = ibt::topo::default_search(topo, kGlobalBatch);
  size_t configs = 0, feasible = 0;
  for (auto _ : state) {
    const auto ranked = ibt::topo::project_all(model, topo, kDevices, search);
    configs += ranked.size();
    feasible = 0;
    for (const auto& p : ranked) feasible += p.feasible;
    benchmark::DoNotOptimize(ranked.data());
  }
  state.counters["configs/s"] = benchmark::Counter(static_cast<double>(configs), benchmark::Counter::kIsRate);
  state.counters["configs"] = static_cast<double>(configs) / state.iterations();
  state.counters["feasible"] = static_cast<double>(feasible);
}
BENCHMARK(BM_ProjectAllSplits)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
