// `ibt train`: trains a catalog model at one DP/TP/PP/EP split with the cpu executor
// (fp32, MPI) or the cuda executor (bf16, NCCL, one GPU per rank), printing per step
// the loss, step time, tokens/s, model TFLOP/s, MFU and the
// time breakdown, and recording the run in an HDF5 file. --check compares every step
// with the serial reference (run in-process on rank 0) and fails on a mismatch.
#include <boost/program_options.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/cli.hpp"
#include "cli/split_flags.hpp"
#include "cli/zero_flags.hpp"
#include "collectives/arrival_gate.hpp"
#include "collectives/runtime/job_guard.hpp"
#include "collectives/runtime/mpi_session.hpp"
#include "collectives/runtime/run_recorder.hpp"
#include "core/errors.hpp"
#include "core/output_file.hpp"
#include "models/cuda/executor/attention_kernels.hpp"
#include "models/plan/model_file.hpp"
#include "models/training/train_runner.hpp"
#include "reports/store/store.hpp"

namespace po = boost::program_options;

namespace ibt::suites {

namespace {

constexpr const char* kUsage = "mpiexec -n N ibt train --model NAME [split options] [--check] [--out FILE.h5]";
constexpr const char* kAbout =
    "Trains the model for --steps steps at the split (dp * tp * pp * cp must equal N; ep divides dp)\n"
    "on the CPU (fp32, OpenBLAS, one thread per rank) and prints per step: loss, step time,\n"
    "tokens/s, model TFLOP/s, MFU against the per-rank sgemm peak, and the time breakdown\n"
    "(compute; exposed communication per group tp, pp (incl. pipeline idle), dp, ep).\n"
    "With --check, rank 0 also runs the serial reference between steps and, every step, compares\n"
    "every rank's copy of every tensor with it element by element (gradients and weights; replicas\n"
    "bitwise against each other), then loss and norms; a failure names step, tensor, rank, host and\n"
    "slice, and the largest differences seen are printed (tolerances measured: docs/training.md).\n"
    "After each step that passes, the reference takes the split's weights, so every step is judged\n"
    "from the same weights (its gradients by the reduction order alone), not from a drifted copy.\n"
    "The other ranks' communication times then include waiting: take timings from runs without it.\n\n"
    "Checkpoints: --checkpoint-every K --checkpoint-dir DIR writes the full training state\n"
    "(weights, AdamW moments and step, MoE biases, data position and RNG state = steps done\n"
    "and seed) after every K-th step to DIR/step-NNNNNN/: one serial-HDF5 shard per rank and\n"
    "a manifest.json written last. --resume DIR continues from the newest complete checkpoint\n"
    "bit for bit (--steps is the total, resumed steps included). A resume must use the same\n"
    "world size, split, model, seed, lr and data: anything else is refused, not resharded\n"
    "(resharding ZeRO-1 optimizer shards and pipeline stage boundaries is a separate feature).\n\n"
    "--executor cuda runs the same schedule on one GPU per rank: cuBLAS GEMMs with bf16\n"
    "operands and fp32 accumulation (--precision fp32: fp32 operands, no TF32), fp32 kernels\n"
    "for norms, activations, attention, loss and AdamW on fp32 master weights; NCCL for TP,\n"
    "PP and DP, the DP all-reduce on its own stream overlapping backward (--no-dp-overlap).\n"
    "Dense models only: MoE/EP, ZeRO-1, sequence parallelism, recompute and tied embeddings\n"
    "with pp > 1 are refused. fp8 is not offered (ibt gemm measures fp8 GEMMs). MFU is\n"
    "against the GPU's dense peak from the topology catalog (or --peak-tflops) and, with\n"
    "--gemm-peak-tflops or --gemm-peak-from FILE.h5, against a measured cuBLAS peak\n"
    "(ibt gemm). The cuda executor has no per-tensor copies: its --check compares loss and\n"
    "norms only, with tolerances (relative, vs the fp32 serial reference) bf16 loss 2e-2,\n"
    "grad_norm 1e-1, param_norm 1e-2; fp32 loss 1e-4, grad_norm 1e-3, param_norm 1e-4 --\n"
    "stated, not yet verified on a GPU. Without a usable GPU it exits 2 with one line naming\n"
    "the CUDA error.\n";

struct TrainArgs {
  std::string model = "tiny-dense";
  std::string seed = "1234";  // text: an unsigned option would take -1 as 2^64 - 1
  SplitFlags<int> split;
  ZeroFlags zero;
  bool no_dp_overlap = false;
  std::string out;
  TrainOptions options;
};

// The seed as written: digits only, below 2^63 (it is stored as a signed 64-bit attribute).
std::uint64_t parse_seed(const std::string& text) {
  const bool digits = !text.empty() && text.size() <= 19 && text.find_first_not_of("0123456789") == std::string::npos;
  if (!digits || std::stoull(text) > static_cast<std::uint64_t>(INT64_MAX))
    throw UsageError("--seed '" + text + "': expected a whole number from 0 to 2^63 - 1");
  return std::stoull(text);
}

po::options_description describe_options(TrainArgs& a, po::options_description& hidden) {
  po::options_description o("options");
  o.add_options()("help,h", "this text");  // first, as in every command's help
  add_zero_options(o, hidden, a.zero, false);
  o.add_options()("model", po::value(&a.model)->default_value(a.model), "catalog name or path to a model .json");
  add_split_options(o, a.split, SplitFlagsFor::run);
  o.add_options()("steps", po::value(&a.options.steps)->default_value(5), "training steps")(
      "lr", double_value(&a.options.lr), "AdamW learning rate")("seed", po::value(&a.seed)->default_value("1234"),
                                                                "seed of weights and synthetic data, 0 to 2^63 - 1")(
      "check", po::bool_switch(&a.options.check),
      "compare every step with the serial reference: every copy of every tensor element by element (cpu), "
      "loss and norms")("threads", po::value(&a.options.threads)->default_value(0),
                        "cpu: OpenBLAS threads per rank (default: OPENBLAS_NUM_THREADS in a one-rank run, else 1)")(
      "executor", po::value(&a.options.executor.kind)->default_value("cpu"), "cpu or cuda (one GPU per rank)")(
      "precision", po::value(&a.options.executor.precision),
      "GEMM precision: fp32 (cpu, the only one), bf16 (cuda default) or fp32 (cuda); fp8 is not offered")(
      "peak-tflops", po::value(&a.options.peak_tflops)->default_value(0),
      "per-rank peak for MFU, TFLOP/s (default: cpu: measured single-thread sgemm; cuda: the catalog's dense peak "
      "for the GPU)")("gemm-peak-tflops", po::value(&a.options.gemm_peak_tflops)->default_value(0),
                      "cuda: a measured cuBLAS GEMM peak per GPU (from `ibt gemm`), for a second MFU")(
      "gemm-peak-from", po::value(&a.options.gemm_peak_file),
      "cuda: take that peak from an `ibt gemm` results file (best checked product of the precision on this GPU)")(
      "no-dp-overlap", po::bool_switch(&a.no_dp_overlap),
      "cuda: run the DP all-reduce after the last backward instead of overlapping it")(
      "cuda-attention", po::value(&a.options.executor.cuda_attention)->default_value("gemm"),
      "cuda: the attention core's kernels: gemm (cuBLAS batched GEMMs around a causal-softmax kernel; 15.5x "
      "faster than threads on an H200's megatron-1.7b step) or threads (one thread per output: the first "
      "kernels checked on a GPU, kept as a second path to compare with)")(
      "data", po::value(&a.options.data_file), "raw token-id file instead of synthetic data")(
      "token-bytes", po::value(&a.options.token_bytes)->default_value(2), "2 (uint16) or 4 (uint32)")(
      "out", po::value(&a.out), "append the run to this HDF5 results file")(
      "dump", po::value(&a.options.dump_path),
      "write initial weights, batches, losses and step-0 gradients to this HDF5 file (layout: "
      "suites/train_runner.hpp)")("checkpoint-every", po::value(&a.options.checkpoint_every)->default_value(0),
                                  "write a checkpoint after every K-th step (0: never)")(
      "checkpoint-dir", po::value(&a.options.checkpoint_dir),
      "directory of the checkpoints, shared by all ranks (with --resume: default the resumed one)")(
      "resume", po::value(&a.options.resume_dir),
      "continue from the newest complete checkpoint in this directory (same split, model, seed, lr, data)")(
      "timeout,T", po::value(&a.options.timeout_s)->default_value(a.options.timeout_s),
      "seconds a step (or the setup, or a checkpoint) may take before the job is ended, naming the rank, op and "
      "group that stopped progressing (exit 3), like NCCL's and Megatron's 10-minute watchdogs; at most a week")(
      "exit-after-step", po::value(&a.options.exit_after_step)->default_value(-1),
      "tests: rank 0 raises SIGKILL after this step index completes, to simulate a crash")(
      "inject-nan-loss-at-step", po::value(&a.options.inject_nan_loss_step)->default_value(-1),
      "tests: the last rank's loss becomes NaN at this step, as a diverged run's would; the run ends failed")(
      "inject-grad-fault", po::value(&a.options.inject_grad_fault),
      "tests: TENSOR:SCALE multiplies that tensor's gradient (* = every tensor) before the reduction, on the "
      "ranks holding one copy of each shard; --check must then fail naming it (cpu executor, not --zero 2/3)");
  return o;
}

models::ParallelSplit split_from(const SplitFlags<int>& f) {
  models::ParallelSplit s;
  s.dp = f.dp;
  s.tp = f.tp;
  s.pp = f.pp;
  s.ep = f.ep;
  s.vpp = f.vpp;
  s.microbatches = f.microbatches;
  s.micro_batch_size = f.micro_batch_size;
  s.schedule = models::parse_schedule(f.schedule);
  return s;
}

// Checkpoint options that cannot be honoured together, refused before any work.
void check_checkpoint_options(const TrainOptions& o) {
  if (o.checkpoint_every < 0)
    throw UsageError("--checkpoint-every must be 0 (never) or positive, got " + std::to_string(o.checkpoint_every));
  if (o.checkpoint_every > 0 && o.checkpoint_dir.empty() && o.resume_dir.empty())
    throw UsageError("--checkpoint-every " + std::to_string(o.checkpoint_every) + " needs --checkpoint-dir DIR");
  if (o.checkpoint_every == 0 && !o.checkpoint_dir.empty())
    throw UsageError("--checkpoint-dir " + o.checkpoint_dir + " without --checkpoint-every K would write nothing");
  if (!o.resume_dir.empty() && !o.dump_path.empty())
    throw UsageError("--dump " + o.dump_path + " cannot be combined with --resume " + o.resume_dir +
                     ": the dump holds the initial weights and step-0 gradients, which a resumed run never has");
}

}  // namespace

namespace {

int run(int argc, char** argv, MpiSession& mpi) {
  TrainArgs a;
  po::options_description old_spellings;  // kept for one release, not in --help
  const auto options = describe_options(a, old_spellings);
  old_spellings.add_options()("peak-gflops", po::value(&a.options.peak_gflops));
  po::variables_map vm;
  if (!parse_command_line(argc, argv, options, vm, nullptr, "", &old_spellings)) {
    if (mpi.rank() == 0)
      print_help(std::cout, kUsage, kAbout, options,
                 {"mpiexec -n 8 ibt train --model tiny-moe --dp 2 --tp 2 --pp 2 --ep 2 --microbatches 4 --schedule "
                  "1f1b --steps 5 --check --out train.h5",
                  "mpiexec -n 2 ibt train --model small-dense --dp 2 --micro-batch-size 2 --steps 5 --out fit.h5"});
    return kExitOk;
  }
  if (a.options.steps < 1) throw UsageError("--steps must be at least 1");
  if (a.options.token_bytes != 2 && a.options.token_bytes != 4)
    throw UsageError("--token-bytes must be 2 (uint16 tokens) or 4 (uint32), got " +
                     std::to_string(a.options.token_bytes));
  if (a.options.threads < 0) throw UsageError("--threads must be at least 1 (or 0: the default)");
  require_timeout(a.options.timeout_s, "--timeout");
  require_learning_rate(a.options.lr);
  a.options.seed = parse_seed(a.seed);
  normalize_peak_flags(vm.count("peak-gflops") > 0, a.options);
  check_checkpoint_options(a.options);
  const models::ModelConfig model = models::load_model(a.model);
  a.options.split = split_from(a.split);
  apply_zero_flags(a.zero, a.options.split);
  a.options.split.cp = a.split.cp;
  a.options.split.cp_comm = models::parse_cp_comm(a.split.cp_comm);
  a.options.executor.dp_overlap = !a.no_dp_overlap;
  gpu::parse_attention_kernels(a.options.executor.cuda_attention);  // a bad value is refused in every build
  if (a.options.executor.kind != "cuda" && !vm["cuda-attention"].defaulted())
    throw UsageError("--cuda-attention applies to --executor cuda only");
  if (a.options.peak_tflops < 0 || a.options.gemm_peak_tflops < 0 || a.options.peak_gflops < 0)
    throw UsageError("--peak-gflops, --peak-tflops and --gemm-peak-tflops must not be negative");
  check_training(model, a.options, MPI_COMM_WORLD);  // before the run is opened: a refusal appends none
  const std::vector<InputFile> inputs = {
      {"--model", a.model}, {"--data", a.options.data_file}, {"--resume", a.options.resume_dir}};
  refuse_output_over_inputs(a.out, "--out", inputs);
  refuse_output_over_inputs(a.options.dump_path, "--dump", inputs);
  check_output_on_all_ranks(a.out, MPI_COMM_WORLD);
  check_output_on_all_ranks(a.options.dump_path, MPI_COMM_WORLD);

  std::unique_ptr<RunRecorder> recorder = open_run_on_all_ranks(a.out, "train", MPI_COMM_WORLD);
  JobGuard guard("train", mpi.rank(), recorder.get());
  a.options.watchdog = guard.watchdog();
  record_provenance(recorder.get(), argc, argv, MPI_COMM_WORLD);
  TrainOutcome outcome;
  try {
    outcome = run_training(model, a.options, MPI_COMM_WORLD, recorder.get());
  } catch (const TimeoutError& e) {
    guard.fail_and_exit(e.what(), kExitTimeout);
  } catch (const std::exception& e) {
    if (recorder) recorder->finish(store::RunStatus::failed, e.what());
    throw;
  }
  if (mpi.rank() == 0) {
    std::printf("# median over steps %d..%d: %.4f s/step, %.1f tokens/s, %.5f model TFLOP/s, MFU %.2f%%",
                std::min(outcome.first_step + 1, a.options.steps - 1), a.options.steps - 1, outcome.median_step_s,
                outcome.tokens_per_s, outcome.model_tflops, 100 * outcome.mfu);
    if (outcome.mfu_gemm > 0) std::printf(" (%.2f%% of the measured GEMM peak)", 100 * outcome.mfu_gemm);
    std::printf("\n");
    if (recorder->active()) std::printf("# results: %s, run %s\n", a.out.c_str(), recorder->run_id().c_str());
    if (a.options.check) std::printf("# check: largest relative differences: %s\n", outcome.check_margins.c_str());
    if (!outcome.check_margins_reseeded.empty())
      std::printf("# check: after the first step (each from the split's weights): %s\n",
                  outcome.check_margins_reseeded.c_str());
    if (!outcome.check_ok)
      std::printf("# FAILED: %s\n", outcome.mismatch.c_str());
    else if (a.options.check)
      std::printf("# check: every step matches the serial reference\n");
    recorder->finish(outcome.check_ok ? store::RunStatus::complete : store::RunStatus::failed, outcome.mismatch);
  }
  return outcome.check_ok ? kExitOk : kExitFailure;
}

}  // namespace

// Usage errors (a split the executor refuses, no GPU for --executor cuda) are printed
// once, by rank 0, and every rank exits 2 (mpi_session.hpp).
int train_main(int argc, char** argv) { return run_mpi_suite("train", argc, argv, run); }

}  // namespace ibt::suites
