#pragma once
// Compute efficiency from measured `ibt train` runs: the fraction of the topology's
// fp32 peak the engine's GEMM work achieves, fitted so that the sim's compute time
// (sim_pricer.hpp's roofline + per-op overhead, mean over stages) matches the runs'
// measured compute time.
//
// One parameter, model.gemm_efficiency e, minimising sum over the fit runs of
// log(projected(e) / measured)^2 (relative, symmetric) by golden-section search over
// log e in [1e-3, 10]. The per-op overhead and memory efficiency stay the base
// topology's (one run cannot separate them; stated in the written source). When e
// comes out above 1 (the base peak was measured on a slower or busier machine) the
// topology's fp32 peak is raised to peak * e and e is written as 1: the schema keeps
// efficiencies in (0, 1].
//
// Runs imported from a framework's log (`ibt import-log`: Megatron, NeMo, torchtitan) have
// no time breakdown: for them the same efficiency is fitted to the logged step time
// (median iteration), projected as `ibt project` projects that split in the log's dtype
// on the base topology, whose network figures stay (communication is the datasheet's or
// a collectives calibration's, never fitted to step times). There e is bounded by 1: a
// log faster than the device's peak allows is refused, naming the runs (a wrong
// --topology or a layout read wrong). ibt's own runs and imported ones are not fitted
// together: they run different engines in different dtypes.
//
// Only the runs given are fitted; every other run given as held-out is reported with
// its residual, so a check can see configurations the fit did not.
#include <string>
#include <vector>

#include "topologies/calibration/train_runs.hpp"
#include "topologies/hardware/topology.hpp"

namespace ibt::topo {

struct TrainResidual {
  std::string label;    // file:run
  std::string what;     // "model, split"
  bool fitted = false;  // used by the fit (else held out)
  // 0 for an imported run: a log has no time breakdown.
  double measured_compute_s = 0, projected_compute_s = 0;
  double measured_step_s = 0, projected_step_s = 0;
};

struct ComputeFit {
  bool from_logs = false;                // fitted to imported runs' step times
  std::string dtype = "fp32";            // the peak the efficiency is a fraction of
  double gemm_efficiency = 0;            // as fitted; may exceed 1 for ibt's own runs only
  double achieved_gflops = 0;            // gemm_efficiency * the base's peak of dtype
  std::vector<TrainResidual> residuals;  // fit runs first, then held-out ones
};

// Fits on `fit_runs` against `t` (its fits already in place: the collective part of
// the step does not enter the compute fit, but the residual table shows step times
// too), and reports residuals for fit_runs and held_out. Throws UsageError without
// fit runs or when a run's model cannot be loaded or its split projected.
ComputeFit fit_compute(const Topology& t, const std::vector<MeasuredTrainRun>& fit_runs,
                       const std::vector<MeasuredTrainRun>& held_out);

// Writes the fit into t: model.gemm_efficiency (and device.peak_tflops.fp32 when the
// efficiency of ibt's own runs exceeds 1) with a measured source "calibration-train"
// naming the runs.
void apply_compute_fit(Topology& t, const ComputeFit& fit, const std::vector<MeasuredTrainRun>& fit_runs);

}  // namespace ibt::topo
