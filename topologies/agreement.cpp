#include "topologies/agreement.hpp"

#include <cmath>

#include "collectives/errors.hpp"
#include "models/accounting.hpp"
#include "models/model_file.hpp"

namespace ibt::topo {

ProjectionOptions cpu_engine_options() {
  ProjectionOptions o;
  o.dtype = "fp32";
  o.precision = models::fp32_adam();
  o.overlap_grad_reduce = false;
  // models/layers/attention.cpp: per head, a GEMM writes the s x s scores, the causal
  // softmax reads and rewrites them, the second GEMM reads them: 4 passes.
  o.attention_score_passes = 4;
  o.keep_sim = true;
  return o;
}

double projected_compute_s(const Projection& p) {
  double sum = 0;
  for (const auto& s : p.sim.stages) sum += s.compute_us;
  return p.sim.stages.empty() ? 0.0 : sum / p.sim.stages.size() * 1e-6;
}

Agreement compare_run(const MeasuredTrainRun& run, const Topology& topology) {
  models::ModelConfig model;
  try {
    model = models::load_model(run.model);
  } catch (const UsageError& e) {
    throw UsageError(run.label() + ": model '" + run.model + "' of the run: " + e.what());
  }
  return compare_run(run, model, topology);
}

Agreement compare_run(const MeasuredTrainRun& run, const models::ModelConfig& model, const Topology& topology) {
  Projection p;
  try {
    p = project(model, topology, run.split, cpu_engine_options());
  } catch (const UsageError& e) {
    throw UsageError(run.label() + " (" + run.model + ", " + models::describe(run.split) + ") on '" +
                     topology.name + "': " + e.what());
  }
  if (!p.feasible)
    throw UsageError(run.label() + " on '" + topology.name + "': projection infeasible: " + p.reason);
  Agreement a;
  a.run = run;
  a.topology = topology.name;
  a.measured_step_s = run.step_s;
  a.projected_step_s = p.step_s;
  a.rel_diff = (p.step_s - run.step_s) / run.step_s;
  std::array<double, kNumExposures> exposed{};
  for (const auto& s : p.sim.stages)
    for (int e = 0; e < kNumExposures; ++e) exposed[e] += s.exposed_us[e] * 1e-6 / p.sim.stages.size();
  auto x = [&](Exposure e) { return exposed[static_cast<int>(e)]; };
  a.components = {{"compute", run.compute_s, projected_compute_s(p)},
                  {"tp", run.tp_s, x(Exposure::tp)},
                  {"pp+bubble", run.pp_s, x(Exposure::pp) + x(Exposure::bubble)},
                  {"dp", run.dp_s, x(Exposure::dp) + x(Exposure::expert_dp)},
                  {"ep", run.ep_s, x(Exposure::ep)},
                  {"other", run.other_s, 0.0}};
  for (const auto& c : a.components) {
    const double d = c.projected_s - c.measured_s;
    if (a.worst.empty() || std::abs(d) > std::abs(a.worst_diff_s)) {
      a.worst = c.name;
      a.worst_diff_s = d;
    }
  }
  return a;
}

void print_agreement(std::FILE* out, const Agreement& a, double bound) {
  const bool ok = std::abs(a.rel_diff) <= bound;
  std::fprintf(out, "%s (%s, %s, %d timed steps) on %s\n", a.run.label().c_str(), a.run.model.c_str(),
               models::describe(a.run.split).c_str(), a.run.timed_steps, a.topology.c_str());
  std::fprintf(out, "  %-10s %12s %12s %10s\n", "component", "measured s", "projected s", "diff");
  for (const auto& c : a.components)
    std::fprintf(out, "  %-10s %12.5f %12.5f %+10.5f%s\n", c.name.c_str(), c.measured_s, c.projected_s,
                 c.projected_s - c.measured_s, c.name == "other" ? "  (not modelled)" : "");
  std::fprintf(out, "  %-10s %12.5f %12.5f %+9.1f%%  bound %.0f%%: %s; differs most: %s (%+.5f s)\n", "step",
               a.measured_step_s, a.projected_step_s, 100 * a.rel_diff, 100 * bound, ok ? "PASS" : "FAIL",
               a.worst.c_str(), a.worst_diff_s);
}

}  // namespace ibt::topo
