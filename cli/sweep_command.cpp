// `ibt sweep`: every valid split of the model for the job's world size (and each
// microbatch count asked for), trained for a few steps with the cpu (or cuda) executor, each
// recorded as its own run in the HDF5 file, then printed ranked by MFU with the
// pipeline-parallel ones marked, and the best without and with PP named.
#include <boost/program_options.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/cli.hpp"
#include "cli/zero_flags.hpp"
#include "collectives/arrival_gate.hpp"
#include "collectives/runtime/job_guard.hpp"
#include "collectives/runtime/mpi_session.hpp"
#include "collectives/runtime/run_recorder.hpp"
#include "core/errors.hpp"
#include "core/text_table.hpp"
#include "models/plan/model_file.hpp"
#include "models/training/train_runner.hpp"

namespace po = boost::program_options;

namespace ibt::suites {

namespace {

constexpr const char* kUsage = "mpiexec -n N ibt sweep --model NAME [--steps S] [--microbatches 1,2,4] [--out FILE.h5]";
constexpr const char* kAbout =
    "Runs every split (dp, tp, pp, ep, schedule, microbatches) the executor can run on N\n"
    "ranks for --steps steps and ranks them by MFU (median over the steps after the first, as\n"
    "`ibt report` shows it).\n"
    "--executor cuda sweeps on one GPU per rank (dense models; see ibt train --help).\n";

std::vector<int> parse_int_list(const std::string& csv, const char* option) {
  std::vector<int> out;
  std::stringstream in(csv);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      out.push_back(std::stoi(item));
    } catch (const std::exception&) {
      throw UsageError(std::string("--") + option + ": '" + item + "' is not an integer");
    }
    if (out.back() < 1) throw UsageError(std::string("--") + option + ": values must be at least 1");
  }
  if (out.empty()) throw UsageError(std::string("--") + option + " is empty");
  return out;
}

struct Ranked {
  models::ParallelSplit split;
  TrainOutcome outcome;
  std::string run_id;
};

}  // namespace

namespace {

// The parsed command line.
struct SweepArgs {
  std::string model_name = "tiny-dense", microbatches = "1,2,4", out;
  TrainOptions options;
  int max_runs = 0, max_cp = 1;
  ZeroFlags zero;
  bool peak_gflops_given = false;  // the old spelling --peak-gflops
};

po::options_description sweep_options(SweepArgs& a, po::options_description& old_spellings) {
  po::options_description o("options");
  o.add_options()("help,h", "this text")("model", po::value(&a.model_name)->default_value(a.model_name),
                                         "catalog name or path to a model .json")(
      "steps", po::value(&a.options.steps)->default_value(3), "training steps per split (the first is not timed)")(
      "microbatches", po::value(&a.microbatches)->default_value(a.microbatches), "microbatch counts to try")(
      "lr", double_value(&a.options.lr), "AdamW learning rate")(
      "executor", po::value(&a.options.executor.kind)->default_value("cpu"), "cpu or cuda (one GPU per rank)")(
      "precision", po::value(&a.options.executor.precision), "cuda: bf16 (default) or fp32 GEMM operands")(
      "peak-tflops", po::value(&a.options.peak_tflops)->default_value(0),
      "per-rank peak for MFU, TFLOP/s (default: cpu: single-thread sgemm measured once; cuda: the catalog's dense "
      "peak for the GPU)")(
      "cp", po::value(&a.max_cp)->default_value(a.max_cp),
      "also try context-parallel degrees up to this (where 2*cp divides seq_len; all_gather attention)")(
      "max-runs", po::value(&a.max_runs)->default_value(0), "stop after this many splits (0: all)")(
      "timeout,T", po::value(&a.options.timeout_s)->default_value(a.options.timeout_s),
      "seconds a step may take before the job is ended naming the rank, op and group that stopped (exit 3)")(
      "out", po::value(&a.out), "append one run per split to this HDF5 results file");
  old_spellings.add_options()("peak-gflops", po::value(&a.options.peak_gflops));
  add_zero_options(o, old_spellings, a.zero, true);
  return o;
}

// Parses argv into `a`; false when --help was asked for (rank 0 has printed it).
bool parse_sweep_args(int argc, char** argv, const MpiSession& mpi, SweepArgs& a) {
  po::options_description old_spellings;  // kept for one release, not in --help
  const po::options_description o = sweep_options(a, old_spellings);
  po::variables_map vm;
  if (!parse_command_line(argc, argv, o, vm, nullptr, "", &old_spellings)) {
    if (mpi.rank() == 0)
      print_help(std::cout, kUsage, kAbout, o, {"mpiexec -n 4 ibt sweep --model tiny-dense --steps 3 --out sweep.h5"});
    return false;
  }
  a.peak_gflops_given = vm.count("peak-gflops") > 0;
  return true;
}

// Every valid split of the model on `ranks` ranks that the executor runs (up to
// --max-runs); `skipped` counts the valid ones it does not.
std::vector<models::ParallelSplit> runnable_splits(const SweepArgs& a, const models::ModelConfig& model, int ranks,
                                                   int& skipped) {
  models::SplitSearch search;
  search.microbatch_counts = parse_int_list(a.microbatches, "microbatches");
  search.try_sequence_parallel = true;  // every valid split, SP variants included
  apply_zero_flags(a.zero, search);
  if (a.max_cp < 1) throw UsageError("--cp must be at least 1, got " + std::to_string(a.max_cp));
  search.max_cp = a.max_cp;
  std::vector<models::ParallelSplit> splits;
  skipped = 0;
  for (const auto& s : models::enumerate_splits(model, ranks, search)) {
    if (train_executor_check(a.options.executor, s, model, ranks).empty())
      splits.push_back(s);
    else
      ++skipped;
  }
  if (a.max_runs > 0 && static_cast<int>(splits.size()) > a.max_runs) splits.resize(static_cast<size_t>(a.max_runs));
  if (splits.empty()) throw UsageError("no split of " + model.name + " runs on " + std::to_string(ranks) + " ranks");
  return splits;
}

// Trains every split, each its own run (rank 0's recorder), printing a line per split.
// status: kExitFailure when any split failed its check.
std::vector<Ranked> train_splits(const std::vector<models::ParallelSplit>& splits, const models::ModelConfig& model,
                                 const SweepArgs& a, TrainOptions& options, JobGuard& guard, int argc, char** argv,
                                 int& status) {
  std::vector<Ranked> results;
  for (size_t i = 0; i < splits.size(); ++i) {
    options.split = splits[i];
    std::unique_ptr<RunRecorder> recorder = open_run_on_all_ranks(a.out, "train", MPI_COMM_WORLD);
    guard.set_recorder(recorder.get());
    record_provenance(recorder.get(), argc, argv, MPI_COMM_WORLD);
    if (recorder && recorder->active()) recorder->set_attr("sweep_index", static_cast<std::int64_t>(i));
    Ranked r{splits[i], {}, ""};
    try {
      r.outcome = run_training(model, options, MPI_COMM_WORLD, recorder.get());
    } catch (const TimeoutError& e) {
      guard.fail_and_exit(e.what(), kExitTimeout);
    }
    if (!r.outcome.check_ok) status = kExitFailure;
    if (recorder) {
      r.run_id = recorder->active() ? recorder->run_id() : "-";
      recorder->finish(r.outcome.check_ok ? store::RunStatus::complete : store::RunStatus::failed, r.outcome.mismatch);
      if (!r.outcome.check_ok)
        std::printf("  [%zu/%zu] FAILED: %s\n", i + 1, splits.size(), r.outcome.mismatch.c_str());
      std::printf("  [%zu/%zu] %-48s %8.4f s/step  MFU %6.3f%%\n", i + 1, splits.size(),
                  models::describe(splits[i]).c_str(), r.outcome.median_step_s, 100 * r.outcome.mfu);
      std::fflush(stdout);
    }
    guard.set_recorder(nullptr);
    results.push_back(r);
  }
  return results;
}

// Rank 0: the splits ranked by MFU, PP marked, and the best without and with PP.
void print_ranking(std::vector<Ranked> results, const std::string& out) {
  std::stable_sort(results.begin(), results.end(),
                   [](const Ranked& a, const Ranked& b) { return a.outcome.mfu > b.outcome.mfu; });
  std::printf("\n# ranked by MFU, medians over the steps after the first (PP = uses pipeline parallelism)\n");
  using Align = TextTable::Align;
  TextTable table;  // at the printf widths it always had, each row laid out on its own
  table.add_column({"rank", Align::right, "", 4});
  table.add_column({"split", Align::left, "", 56});
  table.add_column({"PP", Align::right, "", 3});
  table.add_column({"s/step", Align::right, "", 10});
  table.add_column({"tokens/s", Align::right, "", 10});
  table.add_column({"MFU", Align::right, "", 8});
  table.add_column({"pp+idle", Align::right, "", 8});
  table.add_column({"run", Align::right, "", 7});
  TextTable::Style style;
  style.header_indent = "# ";
  style.indent = "  ";
  style.gap = " ";
  style.rule = false;
  style.trim = false;  // padded as printf padded, an empty last cell included
  std::printf("%s", table.header_text(style).c_str());
  for (size_t i = 0; i < results.size(); ++i) {
    const Ranked& r = results[i];
    std::printf("%s", table
                          .row_text({std::to_string(i + 1), models::describe(r.split), r.split.pp > 1 ? "PP" : "",
                                     fixed(r.outcome.median_step_s, 4), fixed(r.outcome.tokens_per_s, 1),
                                     fixed(100 * r.outcome.mfu, 3) + "%",
                                     fixed(100 * r.outcome.bubble_fraction, 1) + "%", r.run_id},
                                    style)
                          .c_str());
  }
  for (bool with_pp : {false, true}) {
    auto it =
        std::find_if(results.begin(), results.end(), [&](const Ranked& r) { return (r.split.pp > 1) == with_pp; });
    if (it != results.end())
      std::printf("# best %s PP: %s, MFU %.3f%%\n", with_pp ? "with" : "without", models::describe(it->split).c_str(),
                  100 * it->outcome.mfu);
  }
  if (!out.empty()) std::printf("# results: %s (%zu runs)\n", out.c_str(), results.size());
}

int run(int argc, char** argv, MpiSession& mpi) {
  SweepArgs a;
  if (!parse_sweep_args(argc, argv, mpi, a)) return kExitOk;
  TrainOptions& options = a.options;
  if (options.steps < 2) throw UsageError("--steps must be at least 2 (the first step is not timed)");
  require_timeout(options.timeout_s, "--timeout");
  require_learning_rate(options.lr);
  normalize_peak_flags(a.peak_gflops_given, options);
  const models::ModelConfig model = models::load_model(a.model_name);
  check_output_on_all_ranks(a.out, MPI_COMM_WORLD);
  require_executor_device(options.executor);

  int skipped = 0;
  const std::vector<models::ParallelSplit> splits = runnable_splits(a, model, mpi.size(), skipped);
  const bool on_gpu = options.executor.kind == "cuda";
  JobGuard guard("sweep", mpi.rank(), nullptr);
  options.watchdog = guard.watchdog();
  if (!on_gpu && options.peak_gflops <= 0)  // at the thread count every split's run will use
    options.peak_gflops = measure_sgemm_peak_gflops(MPI_COMM_WORLD, blas_threads_for_run(options.threads, mpi.size()));
  options.print_steps = false;
  if (mpi.rank() == 0) {
    std::printf(
        "# sweep of %s on %d ranks: %zu splits (%d valid ones skipped: not supported by the %s executor), "
        "%d steps each",
        model.name.c_str(), mpi.size(), splits.size(), skipped, options.executor.kind.c_str(), options.steps);
    if (!on_gpu) std::printf(", peak %.1f GFLOP/s per rank", options.peak_gflops);
    std::printf("\n");
  }

  int status = kExitOk;
  std::vector<Ranked> results = train_splits(splits, model, a, options, guard, argc, argv, status);
  if (mpi.rank() == 0) print_ranking(std::move(results), a.out);
  return status;
}

}  // namespace

// Usage errors (a split the executor refuses, no GPU for --executor cuda) are printed
// once, by rank 0, and every rank exits 2 (mpi_session.hpp).
int sweep_main(int argc, char** argv) { return run_mpi_suite("sweep", argc, argv, run); }

}  // namespace ibt::suites
