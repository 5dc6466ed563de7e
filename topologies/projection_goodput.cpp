#include "topologies/projection_goodput.hpp"

#include <algorithm>

namespace ibt::topo {

void add_goodput(Projection& p, const models::ModelConfig& model, const ProjectionOptions& options,
                 const FailureAssumptions& assumptions) {
  if (!assumptions.complete() || !p.feasible) {
    p.goodput = estimate_goodput(assumptions, p.devices, 0, p.feasible ? p.step_s : 0, p.mfu);
    return;
  }
  const double bytes = checkpoint_bytes_per_device(model, p.split, options.precision);
  p.goodput = estimate_goodput(assumptions, p.devices, bytes, p.step_s, p.mfu);
}

double ranking_value(const Projection& p, RankBy by) {
  if (by == RankBy::mfu) return p.mfu;
  return p.goodput.computed ? p.goodput.goodput_mfu : 0.0;
}

void rank_projections(std::vector<Projection>& ps, RankBy by) {
  std::stable_sort(ps.begin(), ps.end(), [by](const Projection& a, const Projection& b) {
    if (a.feasible != b.feasible) return a.feasible;
    if (!a.feasible) return false;
    const double va = ranking_value(a, by), vb = ranking_value(b, by);
    if (va != vb) return va > vb;
    return a.step_s < b.step_s;
  });
}

}  // namespace ibt::topo
