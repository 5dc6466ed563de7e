#include "topologies/calibration/agreement.hpp"

#include <cmath>

#include "core/errors.hpp"
#include "core/text_table.hpp"
#include "models/plan/accounting.hpp"
#include "models/plan/model_file.hpp"
#include "topologies/hardware/collective_model.hpp"
#include "topologies/sim/sim_pricer.hpp"

namespace ibt::topo {

ProjectionOptions cpu_engine_options() {
  ProjectionOptions o;
  o.dtype = "fp32";
  o.precision = models::fp32_adam();
  o.overlap_grad_reduce = false;
  // models/engine/layers/attention.cpp: per head, a GEMM writes the s x s scores, the causal
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

EngineExtras engine_extras(const models::ModelConfig& model, const models::ParallelSplit& split,
                           const Topology& topology) {
  // cpu_executor.cpp, after the last backward: with dp > 1 the gradients are packed
  // into one fresh flat buffer, all-reduced and unpacked (zero-fill 4 B, copy in 8 B,
  // copy out 8 B per parameter); then a world all-reduce of the loss sums, the
  // gradient norm (a pass over this rank's gradients and a world all-reduce) and,
  // after the optimizer, the parameter norm (a pass over the weights and a world
  // all-reduce). Mean over stages, fp32, memory roofline of the topology.
  TopologyPricer pricer(topology, split, "fp32");
  pricer.set_kv_replicas(model.kv_replicas(split.tp));
  const Placement world = place_group(split.world_size(), 1, topology.domain_size());
  const double reduce_us = collective_cost(topology, CollOp::all_reduce, world, 16).time_us;
  EngineExtras x;
  for (int stage = 0; stage < split.pp; ++stage) {
    const double params = models::memory_per_rank(model, split, models::fp32_adam(), stage).params;
    x.statistics_s += 2 * pricer.compute_us(0, 4.0 * params) * 1e-6 / split.pp;
    if (split.dp > 1) x.gradient_packing_s += pricer.compute_us(0, 20.0 * params) * 1e-6 / split.pp;
  }
  x.statistics_s += 3 * reduce_us * 1e-6;
  return x;
}

models::ModelConfig run_model(const MeasuredTrainRun& run) {
  try {
    return models::load_model(run.model);
  } catch (const UsageError& e) {
    throw UsageError(run.label() + ": model '" + run.model + "' of the run: " + e.what());
  }
}

Agreement compare_run(const MeasuredTrainRun& run, const Topology& topology) {
  return compare_run(run, run_model(run), topology);
}

// ibt's own engines are priced as they compute (fp32, cpu_engine_options); a run imported
// from a framework's log as that framework trains (mixed precision in the log's dtype,
// gradient reduction overlapped), the projection `ibt project` makes of the same split.
static ProjectionOptions options_for(const MeasuredTrainRun& run) {
  if (run.source_format.empty()) return cpu_engine_options();
  ProjectionOptions o;
  o.dtype = run.dtype;  // "" = the topology's default
  o.keep_sim = true;
  return o;
}

Projection project_run(const MeasuredTrainRun& run, const models::ModelConfig& model, const Topology& topology) {
  Projection p;
  try {
    p = project(model, topology, run.split, options_for(run));
  } catch (const UsageError& e) {
    throw UsageError(run.label() + " (" + run.model + ", " + models::describe(run.split) + ") on '" + topology.name +
                     "': " + e.what());
  }
  if (!p.feasible) throw UsageError(run.label() + " on '" + topology.name + "': projection infeasible: " + p.reason);
  return p;
}

Agreement compare_run(const MeasuredTrainRun& run, const models::ModelConfig& model, const Topology& topology) {
  const Projection p = project_run(run, model, topology);
  Agreement a;
  a.run = run;
  a.topology = topology.name;
  // The step statistics are the engine's, not the step program's: priced here and
  // added to the sim's step (every rank runs them after its last op).
  // A run imported from a framework's log ran that framework, not ibt's engine: no extras.
  const EngineExtras extra = run.source_format.empty() ? engine_extras(model, run.split, topology) : EngineExtras{};
  a.measured_step_s = run.step_s;
  a.projected_step_s = p.step_s + extra.statistics_s + extra.gradient_packing_s;
  a.rel_diff = (a.projected_step_s - run.step_s) / run.step_s;
  std::array<double, kNumExposures> exposed{};
  double trailing = 0;  // a stage done early waits for the others: the engine waits in
                        // the first statistics all-reduce, so the executor books it as
                        // "other"; the sim's bubble holds it -- moved to "other" here
  const double n = static_cast<double>(p.sim.stages.size());
  for (const auto& s : p.sim.stages) {
    for (int e = 0; e < kNumExposures; ++e) exposed[e] += s.exposed_us[e] * 1e-6 / n;
    trailing += (p.sim.step_us - s.finish_us) * 1e-6 / n;
  }
  auto x = [&](Exposure e) { return exposed[static_cast<int>(e)]; };
  a.components = {{"compute", run.compute_s, projected_compute_s(p)},
                  {"tp", run.tp_s, x(Exposure::tp)},
                  {"pp+bubble", run.pp_s, x(Exposure::pp) + x(Exposure::bubble) - trailing},
                  {"dp", run.dp_s, x(Exposure::dp) + x(Exposure::expert_dp) + extra.gradient_packing_s},
                  {"ep", run.ep_s, x(Exposure::ep)},
                  {"other", run.other_s, extra.statistics_s + trailing}};
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
  if (a.run.checked)
    std::fprintf(out, "  warning: made with --check: the measured times include the serial reference on rank 0\n");
  // A framework's log gives the step time only: its projection is shown whole, no diffs.
  const bool has_breakdown = a.run.source_format.empty();
  // At the printf widths it always had; the note carries its own separator, so a row
  // without one ends where its last column does.
  using Align = TextTable::Align;
  TextTable table;
  table.add_column({"component", Align::left, "", 10});
  table.add_column({"measured s", Align::right, "", 12});
  table.add_column({"projected s", Align::right, "", 12});
  table.add_column({"diff", Align::right, "", 10});
  table.add_column(TextTable::Column("", Align::left).after(""));
  TextTable::Style style;
  style.indent = "  ";
  style.gap = " ";
  style.rule = false;
  TextTable::Style padded = style;  // a row without a diff, as "%10s" padded it
  padded.trim = false;
  auto row = [&](const std::vector<std::string>& cells, const TextTable::Style& st) {
    std::fputs(table.row_text(cells, st).c_str(), out);
  };
  std::fputs(table.header_text(style).c_str(), out);
  for (const auto& c : a.components) {
    if (!has_breakdown) {
      row({c.name, "-", fixed(c.projected_s, 5), "", ""}, padded);
      continue;
    }
    row({c.name, fixed(c.measured_s, 5), fixed(c.projected_s, 5), signed_fixed(c.projected_s - c.measured_s, 5),
         c.name == "other" ? "  (statistics + waiting for the last stage)" : ""},
        style);
  }
  char verdict[64];
  std::snprintf(verdict, sizeof verdict, "  bound %.0f%%: %s", 100 * bound, ok ? "PASS" : "FAIL");
  const std::vector<std::string> step = {"step", fixed(a.measured_step_s, 5), fixed(a.projected_step_s, 5),
                                         signed_fixed(100 * a.rel_diff, 1) + "%"};
  if (!has_breakdown) {
    std::vector<std::string> cells = step;
    cells.push_back(verdict + std::string(" (a ") + a.run.source_format + " log has no time breakdown)");
    row(cells, style);
    return;
  }
  char worst[64];
  std::snprintf(worst, sizeof worst, " (%+.5f s)", a.worst_diff_s);
  std::vector<std::string> cells = step;
  cells.push_back(verdict + std::string("; differs most: ") + a.worst + worst);
  row(cells, style);
}

}  // namespace ibt::topo
