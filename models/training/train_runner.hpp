#pragma once
// One training run of a (model, split) with the cpu or cuda executor (train_executor.hpp),
// as `ibt train` and `ibt sweep` do it: steps, per-step figures (loss, time, tokens/s, model TFLOP/s, MFU,
// time breakdown), the optional --check against the serial reference, memory per rank,
// and the rows of the HDF5 run (rank 0's RunRecorder).
#include <mpi.h>
#include <cstdint>

#include <string>

#include "collectives/runtime/run_recorder.hpp"
#include "collectives/watchdog.hpp"
#include "models/plan/model_config.hpp"
#include "models/plan/parallel_split.hpp"
#include "models/training/train_executor.hpp"

namespace ibt::suites {

struct TrainOptions {
  models::ParallelSplit split;
  int steps = 5;
  double lr = 3e-3;
  std::uint64_t seed = 1234;
  bool check = false;           // compare with the serial reference every step
  double peak_gflops = 0;       // cpu, per rank; 0 = measure (sgemm at the run's BLAS threads)
  int threads = 0;              // OpenBLAS threads per rank; 0 = blas_threads_for_run()
  ExecutorChoice executor;      // cpu (default) or cuda
  double peak_tflops = 0;       // cuda, per GPU; 0 = the catalog's dense peak for the GPU and precision
  double gemm_peak_tflops = 0;  // cuda: a measured cuBLAS GEMM peak (`ibt gemm`); 0 = none
  std::string gemm_peak_file;   // cuda: or read it from this `ibt gemm` results file
  std::string data_file;        // raw token ids; empty = synthetic data
  int token_bytes = 2;
  bool print_steps = true;
  // --dump: an HDF5 file (ibt store, run kind "train_dump") with, under /runs/<id>/:
  //   params/<name>       initial weights, full (unsharded) float64 [out, in] or [n]
  //   grads/<name>        step 0's full gradients (of the global-batch objective)
  //   batch/step<k>/inputs, batch/step<k>/targets   [global sequences, seq_len] token ids
  //   losses              [steps] the executor's per-step mean cross-entropy
  // Weights and gradients are the serial reference's (rank 0 runs it in-process): the
  // executor's shards are slices of exactly these tensors (init.hpp), and --check
  // holds its numbers to them.
  std::string dump_path;
  // Checkpoints (models/checkpoint/, models/training/train_checkpoints.hpp): the full training
  // state every checkpoint_every steps (0 = never) into checkpoint_dir; resume_dir:
  // start from its newest complete checkpoint (steps counts resumed steps too).
  // exit_after_step (tests): rank 0 raises SIGKILL after that step index (-1 = never).
  int checkpoint_every = 0;
  std::string checkpoint_dir;
  std::string resume_dir;
  int exit_after_step = -1;
  // inject_nan_loss_step (tests): the last rank's loss becomes NaN at that step (-1 = never).
  int inject_nan_loss_step = -1;
  // inject_grad_fault (tests): "TENSOR:SCALE", one tensor's gradient (or "*": every
  // one) multiplied by SCALE before the reduction (train_check.hpp), so --check fails.
  std::string inject_grad_fault;
  // No rank waits forever (collectives/runtime/job_guard.hpp): every step starts behind an arrival
  // gate that names the ranks that did not arrive, and the watchdog (when given) ends
  // the job if a step, a checkpoint or the setup takes longer than timeout_s, naming
  // the op and group it is stuck in.
  Watchdog* watchdog = nullptr;
  double timeout_s = 600;
};

struct TrainOutcome {
  // Every figure below is the median over the timed steps: the steps after the first (it
  // warms caches), or the only one; the statistic `ibt report` uses for the same run.
  int timed_steps = 0;
  double median_step_s = 0;
  double tokens_per_s = 0;
  double model_tflops = 0;  // model TFLOP/s of the whole job
  double mfu = 0;
  double mfu_gemm = 0;         // against gemm_peak_tflops (0 when not given)
  double bubble_fraction = 0;  // pp exchange time / step time, averaged over ranks
  double final_loss = 0;
  int first_step = 0;  // > 0 after --resume
  bool check_ok = true;
  std::string mismatch;  // "step 3: loss ..." when check failed, or a NaN/inf loss
  // --check, rank 0: the largest relative differences from the reference over the steps
  // run ("weights 3e-07, gradients 2e-06, loss ...", models/engine/check_margins.hpp).
  std::string check_margins;
  // The same over the steps after the first, each started from the split's weights
  // (reseeded: copy_check.hpp reseed_reference); "" with one step or scalars only.
  std::string check_margins_reseeded;
};

// OpenBLAS sgemm throughput at `threads` threads by the one CPU peak rule
// (models/engine/sgemm_peak.hpp), GFLOP/s: the per-rank peak MFU is measured against
// when no --peak-gflops is given. Collective: every rank measures at once (so
// oversubscribed ranks measure their share), the job uses the median over ranks.
double measure_sgemm_peak_gflops(MPI_Comm world, int threads = 1);

// OpenBLAS threads per rank for a run of `ranks` ranks: `requested` (--threads) when
// given; else, in a one-rank run, OPENBLAS_NUM_THREADS when set (a serial run may use
// every core); else 1, because ranks share the machine's cores. A non-numeric or
// non-positive OPENBLAS_NUM_THREADS is a UsageError naming it.
int blas_threads_for_run(int requested, int ranks);

// One peak flag for both executors, --peak-tflops (per rank); the cpu executor keeps its
// figure in GFLOP/s (peak_gflops), so a cpu --peak-tflops moves there. --peak-gflops is
// the old spelling (a note says so; both together are refused).
void normalize_peak_flags(bool old_spelling_given, TrainOptions& options);

// "" when the split's dp*tp*pp*cp is the job's world size; else the refusal with its fix:
// the mpiexec -n that runs the split, or a split this job can run (its --dp where the
// model-parallel degrees divide the world).
std::string world_size_mismatch(const models::ParallelSplit& split, int world);

// Runs the steps. recorder: rank 0's (may be inactive); the caller has set the run's
// provenance attributes, this adds model/split/config attributes and the tables
// "steps" and "memory". Throws UsageError for a split the executor cannot run, and
// (cuda) without a usable GPU, before any step.
// Everything run_training refuses before it starts (the world size, executor and flag
// combinations, the planned memory of the model at the split on every host), for a command
// to call before it opens its run, so a refused command appends none. Collective over world.
void check_training(const models::ModelConfig& model, const TrainOptions& o, MPI_Comm world);
TrainOutcome run_training(const models::ModelConfig& model, const TrainOptions& options, MPI_Comm world,
                          RunRecorder* recorder);

// Provenance shared by train and sweep runs (command line, version, hosts, MPI library,
// environment). Collective; recorder is rank 0's (nullptr elsewhere).
void record_provenance(RunRecorder* recorder, int argc, char** argv, MPI_Comm world);

}  // namespace ibt::suites
