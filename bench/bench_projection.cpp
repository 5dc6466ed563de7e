// The projection engine's speed.
// - One configuration, priced by the full event walk (simulate() on the full step
//   programs, what every projection used before the fast walk) and by the fast walk
//   (sim_fast.hpp) in the same run: the ratio is the speed-up on that split.
//   Five splits: Kimi K2 on 16,384 H100s (domain 8); DeepSeek-V3 (MoE, 61 layers) on
//   2,048 TPU v5p (a 6,144-chip domain, so TP up to the head count) at pp 32 with 256
//   microbatches of 1F1B; DeepSeek-V3 on 16,384 GB200 NVL72 (domain 72) at pp 16
//   interleaved 4 deep with 128 microbatches, TP 16, EP 32 and CP 2 (ring); and
//   Megatron 530B on 16,384 TPU v5p at pp 32 (uneven), TP 8, 128 microbatches; and Llama 3
//   405B on 1,024 H100s at pp 32 (uneven), TP 2, CP 8 (ring), 1,024 microbatches of ZB-H1.
// - The whole `ibt project --all` search (default_search) for each, on the fast walk.
//   The third was the worst catalog case of scripts/bench_search.sh (the largest domain
//   with the most splits: MoE, 16,384 devices); the fourth, Megatron 530B (dense, 105
//   layers: deep pipelines with hundreds of microbatches priced by the walk) on 16,384
//   TPU v5p at the CLI's default batch (16M tokens: 8,192 sequences of 2,048), is the
//   worst pair of the README's per-pair table since; the fifth, Llama 3 405B (dense, 126
//   layers) on 1,024 H100s at its default batch (2,048 sequences of 8,192), whose small
//   DP leaves up to 2,048 microbatches a pipeline: the worst pair after the bound counted
//   every stage (its time is in the walks of the splits that can still win). The search
//   alone, also for Megatron 1T on 1,024 DGX-1 V100s, the worst pair of the per-pair
//   table over 1,024-16,384 devices before the walk jumped over steady states (28 s:
//   pp 64-128 with 2,048-8,192 microbatches walked action by action), and Megatron 1T
//   on 1,024 TPU v4, the worst since: its best splits are FSDP (ZeRO-3), priced by the
//   period walk (sim_period.hpp; by the full walk before it). Its best split alone, by
//   the full walk and by the period walk (case 7). Target: under 5 s on one
//   core. Exhaustive (every fitting split priced; the two smaller cases only) and as
//   `--all` runs it (top 20 by MFU, the rest bounded out). Counters: configs/s
//   (splits projected per second, infeasible ones included: they are checked and
//   reported, not simulated).
#include <benchmark/benchmark.h>

#include <string>

#include "models/plan/model_file.hpp"
#include "topologies/projection/projection.hpp"

namespace {

using ibt::models::ParallelSplit;
using ibt::topo::Projection;
using ibt::topo::ProjectionOptions;

constexpr long long kGlobalBatch = 4096;  // sequences of 4,096 tokens: 16M tokens

struct Case {
  const char* model;
  const char* topology;
  int devices;
  ParallelSplit split;
  long long global_batch = kGlobalBatch;  // sequences, for the search
};

Case kimi_on_h100() {
  ParallelSplit s;
  s.tp = 8;
  s.pp = 32;
  s.dp = 16384 / (s.tp * s.pp);
  s.microbatches = static_cast<int>(kGlobalBatch / s.dp);
  s.sequence_parallel = true;
  s.zero = 1;
  return {"kimi-k2", "dgx-h100", 16384, s};
}

Case deepseek_on_tpu() {
  ParallelSplit s;
  s.tp = 4;
  s.pp = 32;
  s.dp = 2048 / (s.tp * s.pp);
  s.microbatches = static_cast<int>(kGlobalBatch / s.dp);  // 256
  s.sequence_parallel = true;
  s.zero = 1;
  return {"deepseek-v3", "tpu-v5p", 2048, s};
}

Case deepseek_on_nvl72() {
  ParallelSplit s;
  s.tp = 16;
  s.pp = 16;
  s.cp = 2;
  s.cp_comm = ibt::models::CpComm::ring;
  s.dp = 16384 / (s.tp * s.pp * s.cp);  // 32
  s.ep = 32;
  s.schedule = ibt::models::ScheduleKind::interleaved;
  s.vpp = 4;
  s.microbatches = static_cast<int>(kGlobalBatch / s.dp);  // 128
  s.sequence_parallel = true;
  s.zero = 1;
  return {"deepseek-v3", "gb200-nvl72", 16384, s};
}

Case megatron530b_on_tpu() {
  constexpr long long kCliBatch = 16LL * 1024 * 1024 / 2048;  // `ibt project`'s 16M tokens at 2,048 per sequence
  ParallelSplit s;
  s.tp = 8;
  s.pp = 32;  // 105 layers over 32 stages: uneven
  s.dp = 16384 / (s.tp * s.pp);
  s.microbatches = static_cast<int>(kCliBatch / s.dp);  // 128
  s.sequence_parallel = true;
  s.zero = 1;
  return {"megatron-530b", "tpu-v5p", 16384, s, kCliBatch};
}

Case llama405b_on_h100() {
  constexpr long long kCliBatch = 16LL * 1024 * 1024 / 8192;  // `ibt project`'s 16M tokens at 8,192 per sequence
  ParallelSplit s;                                            // the search's second best
  s.tp = 2;
  s.pp = 32;  // 126 layers over 32 stages: uneven
  s.cp = 8;
  s.cp_comm = ibt::models::CpComm::ring;
  s.dp = 1024 / (s.tp * s.pp * s.cp);                   // 2
  s.microbatches = static_cast<int>(kCliBatch / s.dp);  // 1024
  s.schedule = ibt::models::ScheduleKind::zb_h1;
  s.sequence_parallel = true;
  s.zero = 1;
  return {"llama3-405b", "dgx-h100", 1024, s, kCliBatch};
}

// The search only (its best splits are too deep to walk by the full walk in a benchmark).
Case megatron1t_on_v100() {
  constexpr long long kCliBatch = 16LL * 1024 * 1024 / 2048;
  return {"megatron-1t", "dgx1-v100", 1024, ParallelSplit{}, kCliBatch};
}
// The search only: its best splits are FSDP (ZeRO-3, pp 1, 128-512 microbatches), which
// the fast walk does not price: the period walk does (sim_period.hpp).
Case megatron1t_on_tpu_v4() {
  constexpr long long kCliBatch = 16LL * 1024 * 1024 / 2048;
  return {"megatron-1t", "tpu-v4", 1024, ParallelSplit{}, kCliBatch};
}
// The best split of that search: FSDP at tp 32 with SP, dp 32, 128 microbatches of 2.
Case megatron1t_fsdp_on_tpu_v4() {
  Case c = megatron1t_on_tpu_v4();
  c.split = ParallelSplit{
      32, 32, 1, 1, 1, 128, 2, ibt::models::ScheduleKind::one_f_one_b, true, 3, ibt::models::Recompute::none};
  return c;
}

Case case_of(int index) {
  switch (index) {
    case 5: return megatron1t_on_v100();
    case 6: return megatron1t_on_tpu_v4();
    case 7: return megatron1t_fsdp_on_tpu_v4();
    case 0: return kimi_on_h100();
    case 1: return deepseek_on_tpu();
    case 3: return megatron530b_on_tpu();
    case 4: return llama405b_on_h100();
    default: return deepseek_on_nvl72();
  }
}

// Which walk prices the split: the full step programs (the reference walk), the fast
// walk's templates, or what a search uses (SplitWalk: the period walk for an FSDP split).
enum class Walk { full, fast, search };
void BM_ProjectOneConfig(benchmark::State& state, Walk walk) {
  ibt::topo::keep_freed_memory_for_reuse();
  const Case c = case_of(static_cast<int>(state.range(0)));
  const auto model = ibt::models::load_model(c.model);
  const auto topo = ibt::topo::load_topology(c.topology);
  const ProjectionOptions options;
  double step = 0;
  for (auto _ : state) {
    Projection p;
    p.split = c.split;
    if (!ibt::topo::prepare(model, topo, options, p)) {
      state.SkipWithError(p.reason.c_str());
      break;
    }
    if (walk == Walk::full)
      ibt::topo::price(ibt::topo::stage_programs(model, c.split, options), model, topo, options, p);
    else if (walk == Walk::fast)
      ibt::topo::price(ibt::topo::StepTemplates(model, c.split, ibt::topo::program_options(options)), model, topo,
                       options, p);
    else
      ibt::topo::SplitWalk(model, c.split, options).price(model, topo, options, p);
    step = p.step_s;
    benchmark::DoNotOptimize(p);
    benchmark::ClobberMemory();
  }
  state.SetLabel(std::string(c.model) + " on " + c.topology + ": " + ibt::models::describe(c.split));
  state.counters["configs/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["step_ms"] = step * 1e3;
}
void BM_ProjectOneConfigFullWalk(benchmark::State& state) { BM_ProjectOneConfig(state, Walk::full); }
void BM_ProjectOneConfigFastWalk(benchmark::State& state) { BM_ProjectOneConfig(state, Walk::fast); }
void BM_ProjectOneConfigPeriodWalk(benchmark::State& state) { BM_ProjectOneConfig(state, Walk::search); }
BENCHMARK(BM_ProjectOneConfigFullWalk)->Arg(0)->Arg(1)->Arg(2)->Arg(3)->Arg(4)->Arg(7)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ProjectOneConfigFastWalk)->Arg(0)->Arg(1)->Arg(2)->Arg(3)->Arg(4)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ProjectOneConfigPeriodWalk)->Arg(7)->Unit(benchmark::kMillisecond);

// keep_best 0: every split that fits is priced; 20: what `ibt project --all` does (its
// top 20 by MFU; the others are bounded out, projection.hpp SearchRun::keep_best).
void BM_ProjectAllSplits(benchmark::State& state) {
  ibt::topo::keep_freed_memory_for_reuse();
  const Case c = case_of(static_cast<int>(state.range(0)));
  const auto model = ibt::models::load_model(c.model);
  const auto topo = ibt::topo::load_topology(c.topology);
  const auto search = ibt::topo::default_search(topo, c.global_batch);
  ibt::topo::SearchRun run;
  run.keep_best = static_cast<size_t>(state.range(1));
  size_t configs = 0, feasible = 0;
  for (auto _ : state) {
    const auto ranked = ibt::topo::project_all(model, topo, c.devices, search, {}, run);
    configs += ranked.size();
    feasible = 0;
    for (const auto& p : ranked) feasible += p.feasible;
    benchmark::DoNotOptimize(ranked.data());
  }
  state.SetLabel(std::string(c.model) + " on " + std::to_string(c.devices) + " x " + c.topology);
  state.counters["configs/s"] = benchmark::Counter(static_cast<double>(configs), benchmark::Counter::kIsRate);
  state.counters["configs"] = static_cast<double>(configs) / state.iterations();
  state.counters["feasible"] = static_cast<double>(feasible);
}
BENCHMARK(BM_ProjectAllSplits)
    ->Args({0, 0})
    ->Args({1, 0})
    ->Args({0, 20})
    ->Args({1, 20})
    ->Args({2, 20})
    ->Args({3, 20})
    ->Args({4, 20})
    ->Args({5, 20})
    ->Args({6, 20})
    ->Unit(benchmark::kSecond)
    ->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
