#pragma once
// Projection against a measured `ibt train` run: the same model, split, microbatches
// and schedule projected on a (calibrated) topology the way the CPU engine runs them
// -- fp32 everywhere, AdamW, gradients reduced after the last backward (the cpu
// executor does not overlap them) -- and compared component by component.
//
// Components, seconds per step, measured side from the run's "steps" table (per-rank
// means, train_runs.hpp), projected side the mean over pipeline stages of the sim's
// per-stage breakdown (every stage has the same number of ranks, so this is the same
// per-rank mean):
//   compute        compute stream busy (forward, backward, optimizer)
//   tp             exposed TP communication
//   pp+bubble      pipeline exchanges and idle time (the executor cannot tell apart)
//   dp             exposed gradient reduction (dp and expert_dp groups), plus the
//                  engine's packing of the gradients into one flat buffer
//   ep             exposed expert all-to-alls
//   other          step statistics: the engine's loss reduction and gradient and
//                  parameter norms (cpu_executor.cpp), which the step program does not
//                  hold -- priced here as two memory passes over the rank's
//                  parameters plus three small world all-reduces (statistics_s) --
//                  plus the time a stage that finishes early waits for the others
//                  (the executor books that wait here, the sim as bubble)
// The step time compared is the slowest rank's (measured) against the sim's step plus
// the engine extras.
// The component that differs most is the one with the largest |projected - measured|.
#include <cstdio>
#include <string>
#include <vector>

#include "models/plan/model_config.hpp"
#include "topologies/calibration/train_runs.hpp"
#include "topologies/hardware/topology.hpp"
#include "topologies/projection/projection.hpp"

namespace ibt::topo {

// Projection options matching the cpu executor (models/training/train_runner.cpp): fp32 peak,
// fp32 AdamW state, no overlap of the gradient reduction, unfused attention (the
// engine writes the s x s scores, softmaxes them in place and reads them again).
ProjectionOptions cpu_engine_options();

struct ComponentAgreement {
  std::string name;
  double measured_s = 0, projected_s = 0;
};

struct Agreement {
  MeasuredTrainRun run;
  std::string topology;
  double measured_step_s = 0, projected_step_s = 0;
  double rel_diff = 0;  // (projected - measured) / measured
  std::vector<ComponentAgreement> components;
  std::string worst;        // component with the largest |projected - measured|
  double worst_diff_s = 0;  // projected - measured of that component
};

// The catalog model `run` trained; UsageError naming the run when it is unknown.
models::ModelConfig run_model(const MeasuredTrainRun& run);

// The projection of `run`'s split on `topology` with cpu_engine_options(). Throws
// UsageError naming the run when the split does not project or does not fit.
Projection project_run(const MeasuredTrainRun& run, const models::ModelConfig& model, const Topology& topology);

// Projects `run` on `topology`. Throws UsageError when the run's model is unknown, the
// split does not project (e.g. a group spanning domains of a topology without
// scale-out figures: the error names them) or does not fit the device memory.
Agreement compare_run(const MeasuredTrainRun& run, const Topology& topology);
// The same with the model given (tests, and the fit's residuals).
Agreement compare_run(const MeasuredTrainRun& run, const models::ModelConfig& model, const Topology& topology);

// What the cpu executor does beyond the step program, seconds per rank: the step
// statistics ("other" above) and packing the gradients into one flat buffer around
// the dp all-reduce (added to "dp"). Both are added to the projected step.
struct EngineExtras {
  double statistics_s = 0, gradient_packing_s = 0;
};
EngineExtras engine_extras(const models::ModelConfig& model, const models::ParallelSplit& split,
                           const Topology& topology);

// Mean over stages of the sim's compute-stream busy time, seconds (the fit's target).
double projected_compute_s(const Projection& p);

// One block per run: step and component table, relative difference, worst component,
// and PASS/FAIL against bound (a fraction, e.g. 0.2).
void print_agreement(std::FILE* out, const Agreement& a, double bound);

}  // namespace ibt::topo
