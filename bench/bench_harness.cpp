// The harness's own hot paths: preparing inputs, checking results, and the bf16
// reduction op MPI calls for every bf16 all-reduce. Slow fills or checks only lengthen
// a run (they are outside the timed region), but the bf16 op is inside it.
#include <benchmark/benchmark.h>
#include <mpi.h>

#include "collectives/check.hpp"
#include "collectives/mpi_types.hpp"

namespace {

ibt::CheckContext context(std::size_t bytes, ibt::DType t) {
  const auto& op = ibt::find_collective("all_reduce");
  ibt::CheckContext ctx;
  ctx.op = &op;
  ctx.shape = op.shape(bytes, 8, ibt::size_of(t));
  ctx.dtype = t;
  ctx.rank = 3;
  ctx.n = 8;
  return ctx;
}

void BM_MakeInputs(benchmark::State& state) {
  const auto ctx = context(static_cast<std::size_t>(state.range(0)), static_cast<ibt::DType>(state.range(1)));
  for (auto _ : state) benchmark::DoNotOptimize(ibt::make_inputs(ctx));
  state.SetBytesProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_MakeInputs)->ArgsProduct({{1 << 12, 1 << 20}, {int(ibt::DType::float32), int(ibt::DType::bfloat16)}});

void BM_CountWrong(benchmark::State& state) {
  const auto ctx = context(static_cast<std::size_t>(state.range(0)), static_cast<ibt::DType>(state.range(1)));
  auto img = ibt::make_inputs(ctx);
  for (auto _ : state) benchmark::DoNotOptimize(ibt::count_wrong(ctx, img.recv.data()));
  state.SetBytesProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_CountWrong)->ArgsProduct({{1 << 12, 1 << 20}, {int(ibt::DType::float32), int(ibt::DType::bfloat16)}});

// The user-defined MPI op, called directly as MPI would call it inside MPI_Allreduce.
void BM_Bf16SumOp(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::vector<std::uint16_t> a(n, ibt::float_to_bf16(1.5f)), b(n, ibt::float_to_bf16(2.0f));
  MPI_Op op = ibt::mpi_op(ibt::DType::bfloat16, ibt::ReduceOp::sum);
  MPI_Datatype type = MPI_UINT16_T;
  for (auto _ : state) {
    MPI_Reduce_local(a.data(), b.data(), n, type, op);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * n * 2);
}
BENCHMARK(BM_Bf16SumOp)->Arg(1 << 10)->Arg(1 << 20)->Iterations(200);

}  // namespace

// MPI is needed only for MPI_Reduce_local; initialise it once for the whole run.
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  ibt::free_mpi_ops();
  MPI_Finalize();
  return 0;
}
