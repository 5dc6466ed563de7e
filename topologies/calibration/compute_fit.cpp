#include "topologies/calibration/compute_fit.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/errors.hpp"
#include "models/plan/model_file.hpp"
#include "topologies/calibration/agreement.hpp"
#include "topologies/calibration/golden_section.hpp"

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

TrainResidual residual(const Loaded& l, const Topology& t, bool fitted) {
  const Agreement a = compare_run(*l.run, l.model, t);
  TrainResidual r;
  r.label = l.run->label();
  r.what = l.run->model + ", " + models::describe(l.run->split);
  r.fitted = fitted;
  r.measured_compute_s = l.run->compute_s;
  r.projected_compute_s = a.components.front().projected_s;
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
  for (const auto& l : fit) {
    if (!(l.run->compute_s > 0)) throw UsageError(l.run->label() + ": measured compute time is not positive");
    if (l.run->checked)
      throw UsageError(l.run->label() +
                       ": made with --check (rank 0 also ran the serial reference, the times "
                       "include it): fit to a run without --check");
  }
  auto cost = [&](double log_e) {
    const Topology te = with_efficiency(t, std::exp(log_e));
    double sum = 0;
    for (const auto& l : fit) {
      const double p = projected_compute_s(project_run(*l.run, l.model, te));
      const double r = std::log(p / l.run->compute_s);
      sum += r * r;
    }
    return sum;
  };
  // Golden section on log e: the projected compute time falls monotonically with e,
  // so the squared log-ratio is unimodal.
  const double log_e = golden_section_min(cost, std::log(1e-3), std::log(10.0), 60, 1e-5);
  ComputeFit f;
  f.gemm_efficiency = std::exp(log_e);
  f.achieved_gflops = f.gemm_efficiency * t.device.fp32.get() * 1e3;
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
                " -- fitted gemm_efficiency %.4f of the fp32 peak (%.2f GFLOP/s achieved), per-op overhead and "
                "memory efficiency kept from the base",
                fit.gemm_efficiency, fit.achieved_gflops);
  t.sources.erase(std::remove_if(t.sources.begin(), t.sources.end(), [&](const Source& s) { return s.id == id; }),
                  t.sources.end());
  t.sources.push_back({id, SourceKind::measured,
                       "ibt calibrate: compute efficiency fitted to the measured compute time of the `ibt train` "
                       "runs " +
                           runs + buf});
  if (fit.gemm_efficiency > 1.0) {
    t.device.fp32 = {fit.gemm_efficiency * t.device.fp32.get(), "TFLOP/s", id,
                     "the engine's achieved GEMM rate exceeded the base peak, which is raised to it"};
    t.model.gemm_efficiency = {1.0, "fraction", id, "fitted above 1: folded into device.peak_tflops.fp32"};
  } else {
    t.model.gemm_efficiency = {fit.gemm_efficiency, "fraction", id, "fitted to the train runs named in the source"};
  }
}

}  // namespace ibt::topo
