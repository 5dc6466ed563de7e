#pragma once
// Measured `ibt train` runs as the projection sees them: the model, the split and the
// per-step time breakdown that models/training/train_runner.cpp records (attributes "model",
// "split"; table "steps" with step_time and the per-rank mean of compute, tp_comm,
// pp_comm_and_bubble, dp_comm, ep_comm and other, in seconds).
//
// The first step warms caches and allocators and is left out (as `ibt train` does for
// its mean), unless it is the only one. Of the remaining steps the FASTEST is taken,
// with its own breakdown (the figures of one step add up): on a shared machine another
// process only ever adds time, so the least-disturbed step is the best estimate of
// what the machine does alone.
#include <string>
#include <vector>

#include "models/plan/parallel_split.hpp"

namespace ibt::topo {

struct MeasuredTrainRun {
  std::string file, run_id;
  std::string model;            // the run's "model" attribute (catalog name)
  models::ParallelSplit split;  // parsed from the "split" attribute
  int timed_steps = 0;
  // The fastest timed step, seconds: step_s is the slowest rank's step time, the
  // components are means over ranks (train_runner.cpp). For a run imported from a log,
  // step_s is the median timed iteration instead (what the log and import-log state).
  double step_s = 0;
  double compute_s = 0, tp_s = 0, pp_s = 0, dp_s = 0, ep_s = 0, other_s = 0;
  // Made with --check: rank 0 also ran the serial reference between steps, so the
  // times include it (the config attribute says so). Fits refuse such runs; the
  // comparison prints a warning.
  bool checked = false;
  // "" unless measured with more ranks than cores on a host (store::RunInfo).
  std::string oversubscription = {};
  // Runs imported from a framework's training log (`ibt import-log`): its format
  // ("megatron") and the dtype its MFU refers to; empty for ibt's own `train` runs.
  std::string source_format = {}, dtype = {};
  std::string label() const { return file + ":" + run_id; }
};

// The inverse of models::describe(ParallelSplit) ("dp2 tp1 pp1 ep1 vpp1 m2 b1 1f1b
// [sp] [zero1|zero2|zero3] [shardN] recompute=none"). Throws UsageError naming the text on anything else.
models::ParallelSplit parse_split(const std::string& text);

// Every complete run with a "steps" table in an HDF5 store. Throws UsageError naming
// the file when it is not an ibt store.
std::vector<MeasuredTrainRun> read_train_runs(const std::string& path);

// "FILE.h5:RUN_ID" (one run) or "FILE.h5" (every train run in it). Throws UsageError
// when the run does not exist or is not a train run, or the file holds none.
std::vector<MeasuredTrainRun> read_train_runs_spec(const std::string& spec);

}  // namespace ibt::topo
