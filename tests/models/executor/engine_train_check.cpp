// Conformance driver run under mpiexec by CTest: trains a catalog model with the cpu
// executor at the given split and, on every rank, the serial reference with the same
// seed and global batch, and compares at each step every copy of every tensor that any
// rank holds, element by element (gradients and weights, replicas bitwise against each
// other: models/engine/copy_check.hpp, gathered to rank 0), then the loss, gradient norm
// and parameter norm. Exit 0 when all match within the tolerances, 1 (naming the step
// and the quantity) when not, 2 on bad arguments. The last line before OK gives the
// largest relative differences seen ("margins: ..."), which
// scripts/check/check_margins.sh collects over every split; --margins-only 1 prints them
// for every step of a longer run without judging (how their growth was measured).
//
//   mpiexec -n 4 engine_train_check --model tiny-dense --dp 2 --tp 2 --steps 3
//   mpiexec -n 4 engine_train_check --model tiny-dense --cp 2 --tp 2 --steps 3
//
// Tolerances: the cpu fp32 row of the one --check table (models/engine/check_tolerance.hpp,
// which says why each value), the same `ibt train --check` judges by.
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/errors.hpp"
#include "models/engine/blas.hpp"
#include "models/engine/check_margins.hpp"
#include "models/engine/check_tolerance.hpp"
#include "models/engine/reference_trainer.hpp"
#include "models/executor/copy_gather.hpp"
#include "models/executor/cpu_executor.hpp"
#include "models/plan/accounting.hpp"
#include "models/plan/model_file.hpp"

using namespace ibt::models;

namespace {

struct Args {
  std::string model = "tiny-dense";
  ParallelSplit split;
  int steps = 3;
  double lr = 3e-3;
  double reference_lr = 0;    // > 0: a deliberately different reference (the negative test)
  int layers = 0;             // > 0: the model with this many layers (dualpipev at pp 4 needs 8)
  double aux_loss = 0;        // > 0: switch the model to the classic aux loss with this weight
  bool memory_check = false;  // also compare the held model state and ZeRO buffers with the plan
  bool margins_only = false;  // measure: print every step's margins, fail on nothing (check_margins.sh)
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) throw ibt::UsageError("option " + k + " needs a value");
    const std::string v = argv[++i];
    auto num = [&] { return std::atoi(v.c_str()); };
    if (k == "--model")
      a.model = v;
    else if (k == "--dp")
      a.split.dp = num();
    else if (k == "--tp")
      a.split.tp = num();
    else if (k == "--pp")
      a.split.pp = num();
    else if (k == "--vpp")
      a.split.vpp = num();
    else if (k == "--ep")
      a.split.ep = num();
    else if (k == "--cp")
      a.split.cp = num();
    else if (k == "--cp-comm")
      a.split.cp_comm = parse_cp_comm(v);
    else if (k == "--microbatches")
      a.split.microbatches = num();
    else if (k == "--micro-batch-size")
      a.split.micro_batch_size = num();
    else if (k == "--schedule")
      a.split.schedule = parse_schedule(v);
    else if (k == "--steps")
      a.steps = num();
    else if (k == "--zero1")
      a.split.zero = num() != 0 ? 1 : 0;
    else if (k == "--zero")
      a.split.zero = num();
    else if (k == "--shard-group")
      a.split.shard_group = num();
    else if (k == "--sequence-parallel")
      a.split.sequence_parallel = num() != 0;
    else if (k == "--lr")
      a.lr = std::atof(v.c_str());
    else if (k == "--reference-lr")
      a.reference_lr = std::atof(v.c_str());
    else if (k == "--layers")
      a.layers = num();
    else if (k == "--aux-loss")
      a.aux_loss = std::atof(v.c_str());
    else if (k == "--memory-check")
      a.memory_check = num() != 0;
    else if (k == "--margins-only")
      a.margins_only = num() != 0;
    else
      throw ibt::UsageError("unknown option " + k);
  }
  return a;
}

bool close(double got, double want, double rtol) { return std::abs(got - want) <= rtol * std::abs(want); }

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  set_blas_threads(1);
  int status = 0;
  try {
    const Args a = parse(argc, argv);
    ModelConfig m = load_model(a.model);
    if (a.layers > 0) m.layers = a.layers;
    if (a.aux_loss > 0) {
      m.balance = RoutingBalance::aux_loss;
      m.aux_loss_coeff = a.aux_loss;
    }
    TrainConfig train;
    train.adam.lr = a.lr;
    train.microbatches = a.split.microbatches;
    train.micro_batch_size = a.split.micro_batch_size;
    train.data_parallel = a.split.dp;
    SyntheticData data(m.vocab, m.seq_len, train.seed);
    CpuExecutor exec(m, a.split, train, data, MPI_COMM_WORLD);
    exec.set_tensor_copies(true);
    CheckMargins margins;
    TrainConfig ref_train = train;
    if (a.reference_lr > 0) ref_train.adam.lr = a.reference_lr;
    ReferenceTrainer ref(m, ref_train, data);
    if (rank == 0) std::printf("%s on %s\n", describe(a.split).c_str(), m.name.c_str());
    for (int s = 0; s < a.steps; ++s) {
      TimeBreakdown t;
      const StepStats got = exec.step(&t);
      const StepStats want = ref.step();
      if (rank == 0)
        std::printf(
            "step %d loss %.7f (ref %.7f) grad_norm %.7g (ref %.7g) param_norm %.9g (ref %.9g) "
            "| %.3fs compute %.3f tp %.3f pp %.3f dp %.3f ep %.3f cp %.3f\n",
            s, got.loss, want.loss, got.grad_norm, want.grad_norm, got.param_norm, want.param_norm, t.total, t.compute,
            t.tp, t.pp, t.dp, t.ep, t.cp);
      if (rank == 0 && got.aux_loss > 0) std::printf("        aux_loss %.9g (ref %.9g)\n", got.aux_loss, want.aux_loss);
      const CheckTolerance tol = tolerance_at_step(check_tolerance("cpu", "fp32", m.tied_embeddings), s);
      const std::vector<TensorCopy> copies = gather_copies(got.copies, MPI_COMM_WORLD);
      int copies_bad = 0;
      if (rank == 0) {
        const CopyCheck c = check_copies(copies, ref.model().params(), {tol.weights, tol.gradients}, s, true);
        CheckMargins here;
        here.add(c);
        here.add(got, want);
        margins.add(here);
        std::printf("margins at step %d: %s\n", s, here.text().c_str());
        if (!c.failure.empty()) std::fprintf(stderr, "MISMATCH at %s\n", c.failure.c_str());
        std::printf("        largest: weights %.2g at %s; gradients %.2g at %s\n", c.weights, c.weights_at.c_str(),
                    c.gradients, c.gradients_at.c_str());
        copies_bad = c.failure.empty() ? 0 : 1;
      }
      MPI_Bcast(&copies_bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
      if (copies_bad && !a.margins_only) {
        status = 1;
        break;
      }
      const char* bad = !close(got.loss, want.loss, tol.loss)                     ? "loss"
                        : !close(got.grad_norm, want.grad_norm, tol.grad_norm)    ? "grad_norm"
                        : !close(got.param_norm, want.param_norm, tol.param_norm) ? "param_norm"
                        : !close(got.aux_loss, want.aux_loss, tol.aux_loss)       ? "aux_loss"
                                                                                  : nullptr;
      if (bad && !a.margins_only) {
        if (rank == 0) std::fprintf(stderr, "MISMATCH at step %d: %s differs from the serial reference\n", s, bad);
        status = 1;
        break;
      }
    }
    if (rank == 0) std::printf("margins: %s\n", margins.text().c_str());
    if (rank == 0 && status == 0 && a.margins_only)
      std::printf("measured %d steps (--margins-only 1: differences not judged)\n", a.steps);
    else if (rank == 0 && status == 0)
      std::printf("OK: matches the serial reference for %d steps\n", a.steps);
    if (a.memory_check && status == 0) {
      // What this rank holds between steps (weights, gradients, AdamW m and v; ZeRO
      // shards) and the peak of ZeRO's gathered weights and unit gradients during the
      // steps, against accounting.hpp's plan for the fp32 engine. The plan does not pad
      // shards to a multiple of the group size: allow 16 bytes per element of padding.
      const RankMemory plan = memory_per_rank(m, a.split, fp32_adam(), exec.groups().coord.pp);
      const double held = exec.model_state_bytes(), buffers = exec.zero_buffer_peak_bytes();
      const double padding = 16.0 * 2 * (m.layers + 2) * a.split.dp;
      const bool ok = std::abs(held - plan.model_state()) <= padding && buffers == plan.buffers;
      std::printf("rank %d memory: held %.0f B (plan %.0f), ZeRO buffers peak %.0f B (plan %.0f)%s\n", rank, held,
                  plan.model_state(), buffers, plan.buffers, ok ? "" : "  MISMATCH");
      int bad = ok ? 0 : 1;
      MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
      if (bad)
        status = 1;
      else if (rank == 0)
        std::printf("OK: model state and ZeRO buffers match the memory plan\n");
    }
  } catch (const ibt::UsageError& e) {
    if (rank == 0) std::fprintf(stderr, "error: %s\n", e.what());
    status = 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: error: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return status;
}
