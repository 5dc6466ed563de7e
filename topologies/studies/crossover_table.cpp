#include "topologies/studies/crossover_table.hpp"

#include "topologies/projection/projection_report.hpp"
#include "topologies/studies/crossover.hpp"
#include "topologies/studies/verdict.hpp"

namespace ibt::topo {

CrossoverCellRow crossover_row(const CrossoverCell& c) {
  CrossoverCellRow r;
  const Projection &n = c.best_no_pp, &w = c.best_with_pp;
  r.domain_size = c.domain_size;
  r.scale_out_Gbps = c.scale_out_gbps;
  // No split fits: NaN (the row's default), never 0 (an average over cells must not count it).
  if (n.feasible) {
    r.mfu_no_pp = n.mfu;
    r.step_no_pp_s = n.step_s;
  }
  if (w.feasible) {
    r.mfu_with_pp = w.mfu;
    r.step_with_pp_s = w.step_s;
  }
  if (c.decided_by == PpDecidedBy::gain) r.gain = c.gain;  // else no gain to speak of: decided_by says why
  r.decided_by = to_string(c.decided_by);
  r.verdict_reason = c.decided_why;
  r.gain_uncertainty = c.uncertainty;
  r.verdict = verdict_text(c.verdict);
  r.pp_needed = c.verdict == PpVerdict::needed;
  r.split_no_pp = n.feasible ? split_label(n.split) : "(none fits)";
  r.split_with_pp = w.feasible ? split_label(w.split) : "(none fits)";
  if (n.feasible) r.strategy_no_pp = models::strategy_label(n.split);
  if (w.feasible) r.strategy_with_pp = models::strategy_label(w.split);
  if (n.goodput.computed) {
    r.goodput_no_pp = n.goodput.goodput;
    r.goodput_mfu_no_pp = n.goodput.goodput_mfu;
  }
  if (w.goodput.computed) {
    r.goodput_with_pp = w.goodput.goodput;
    r.goodput_mfu_with_pp = w.goodput.goodput_mfu;
  }
  return r;
}

}  // namespace ibt::topo
