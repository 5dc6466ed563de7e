#include "topologies/calibration/compute_fit.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/errors.hpp"
#include "models/plan/model_file.hpp"
#include "topologies/calibration/agreement.hpp"
#include "topologies/calibration/golden_section.hpp"
#include "topologies/sim/sim_pricer.hpp"

namespace ibt::topo {

namespace {

struct Loaded {
  const MeasuredTrainRun* run;
  models::ModelConfig model;
};

Topology with_efficiency(const Topology& base, double e) {
  Topology t = base;
  t.model.gemm_efficiency.value = e;
  return t;
}

bool imported(const MeasuredTrainRun& r) { return !r.source_format.empty(); }

TrainResidual residual(const Loaded& l, const Topology& t, bool fitted) {
  const Agreement a = compare_run(*l.run, l.model, t);
  TrainResidual r;
  r.label = l.run->label();
  r.what = l.run->model + ", " + models::describe(l.run->split);
  r.fitted = fitted;
  if (!imported(*l.run)) {
    r.measured_compute_s = l.run->compute_s;
    r.projected_compute_s = a.components.front().projected_s;
  }
  r.measured_step_s = a.measured_step_s;
  r.projected_step_s = a.projected_step_s;
  return r;
}

std::vector<Loaded> load(const std::vector<MeasuredTrainRun>& runs) {
  std::vector<Loaded> out;
  for (const auto& r : runs) out.push_back({&r, run_model(r)});
  return out;
}

}  // namespace

ComputeFit fit_compute(const Topology& t, const std::vector<MeasuredTrainRun>& fit_runs,
                       const std::vector<MeasuredTrainRun>& held_out) {
  if (fit_runs.empty()) throw UsageError("compute fit: no train run to fit");
  const std::vector<Loaded> fit = load(fit_runs), rest = load(held_out);
  const bool logs = imported(fit_runs.front());
  for (const auto& l : fit) {
    if (imported(*l.run) != logs)
      throw UsageError("compute fit: " + fit_runs.front().label() + " and " + l.run->label() +
                       ": ibt's own train runs and runs imported from a framework's log are fitted apart (different "
                       "engines and dtypes); name one kind with --fit-train");
    if (!logs && !(l.run->compute_s > 0)) throw UsageError(l.run->label() + ": measured compute time is not positive");
    if (!(l.run->step_s > 0)) throw UsageError(l.run->label() + ": measured step time is not positive");
    if (l.run->checked)
      throw UsageError(l.run->label() +
                       ": made with --check (rank 0 also ran the serial reference, the times "
                       "include it): fit to a run without --check");
  }
  // The peak the efficiency is a fraction of: the log's dtype (ibt's engine computes in fp32).
  const std::string dtype = !logs ? "fp32" : fit_runs.front().dtype.empty() ? default_dtype(t) : fit_runs.front().dtype;
  if (logs) {
    if (!t.device.peak(dtype).known())
      throw UsageError("compute fit: " + fit_runs.front().label() + " trained in " + dtype + " and the --topology (" +
                       t.device.name + ") has no " + dtype + " peak: give the --topology the logs ran on");
  }
  // ibt's runs: their compute time (the breakdown separates it). Logs: the step time,
  // communication priced by the base topology.
  auto measured = [&](const Loaded& l) { return logs ? l.run->step_s : l.run->compute_s; };
  auto projected = [&](const Loaded& l, const Topology& te) {
    return logs ? compare_run(*l.run, l.model, te).projected_step_s
                : projected_compute_s(project_run(*l.run, l.model, te));
  };
  auto cost = [&](double log_e) {
    const Topology te = with_efficiency(t, std::exp(log_e));
    double sum = 0;
    for (const auto& l : fit) {
      const double r = std::log(projected(l, te) / measured(l));
      sum += r * r;
    }
    return sum;
  };
  // Golden section on log e: the projected time falls monotonically with e, so the
  // squared log-ratio is unimodal. A GPU's datasheet peak bounds a log's efficiency.
  const double hi = logs ? 1.0 : 10.0;
  const double log_e = golden_section_min(cost, std::log(1e-3), std::log(hi), 60, 1e-5);
  ComputeFit f;
  f.from_logs = logs;
  f.dtype = dtype;
  f.gemm_efficiency = std::exp(log_e);
  f.achieved_gflops = f.gemm_efficiency * t.device.peak(f.dtype).get() * 1e3;
  if (logs && f.gemm_efficiency > 0.995) {
    const Topology at_peak = with_efficiency(t, 1.0);
    std::string runs;
    for (const auto& l : fit) {
      char line[160];
      std::snprintf(line, sizeof line, " logged %.3f s per step, %.3f s at the peak", l.run->step_s,
                    projected(l, at_peak));
      runs += (runs.empty() ? "" : "; ") + l.run->label() + line;
    }
    throw UsageError("compute fit: the logged steps are faster than the --topology (" + t.device.name +
                     ") allows even at its " + f.dtype + " peak (" + runs +
                     "): give the --topology the logs ran on, or check the layout import-log read (ibt show FILE "
                     "--run ID)");
  }
  const Topology te = with_efficiency(t, f.gemm_efficiency);
  for (const auto& l : fit) f.residuals.push_back(residual(l, te, true));
  for (const auto& l : rest) f.residuals.push_back(residual(l, te, false));
  return f;
}

void apply_compute_fit(Topology& t, const ComputeFit& fit, const std::vector<MeasuredTrainRun>& fit_runs) {
  const std::string id = "calibration-train";
  std::string runs;
  for (const auto& r : fit_runs)
    runs += (runs.empty() ? "" : "; ") + r.label() + " (" + r.model + ", " + models::describe(r.split) + ")";
  char buf[256];
  std::snprintf(buf, sizeof buf,
                " -- fitted gemm_efficiency %.4f of the %s peak (%.2f GFLOP/s achieved), per-op overhead and "
                "memory efficiency kept from the base",
                fit.gemm_efficiency, fit.dtype.c_str(), fit.achieved_gflops);
  t.sources.erase(std::remove_if(t.sources.begin(), t.sources.end(), [&](const Source& s) { return s.id == id; }),
                  t.sources.end());
  const std::string what = fit.from_logs ? "ibt calibrate: compute efficiency fitted to the logged step time (median "
                                           "iteration, communication priced by the base topology) of the imported "
                                           "runs "
                                         : "ibt calibrate: compute efficiency fitted to the measured compute time of "
                                           "the `ibt train` runs ";
  t.sources.push_back({id, SourceKind::measured, what + runs + buf});
  if (fit.gemm_efficiency > 1.0) {
    t.device.fp32 = {fit.gemm_efficiency * t.device.fp32.get(), "TFLOP/s", id,
                     "the engine's achieved GEMM rate exceeded the base peak, which is raised to it"};
    t.model.gemm_efficiency = {1.0, "fraction", id, "fitted above 1: folded into device.peak_tflops.fp32"};
  } else {
    t.model.gemm_efficiency = {fit.gemm_efficiency, "fraction", id, "fitted to the train runs named in the source"};
  }
}

}  // namespace ibt::topo
