#include "topologies/projection/projection_goodput.hpp"

#include <algorithm>
#include <vector>

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
  // Sorted through their indices, then moved once each: a Projection is large, and a
  // search ranks 10^5 of them.
  std::vector<size_t> order(ps.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t i, size_t j) {
    const Projection &a = ps[i], &b = ps[j];
    if (a.feasible != b.feasible) return a.feasible;
    if (!a.feasible) return false;
    const double va = ranking_value(a, by), vb = ranking_value(b, by);
    if (va != vb) return va > vb;
    return a.step_s < b.step_s;
  });
  std::vector<Projection> ranked;
  ranked.reserve(ps.size());
  for (size_t i : order) ranked.push_back(std::move(ps[i]));
  ps = std::move(ranked);
}

}  // namespace ibt::topo
