#pragma once
// Goodput of projections (failure_model.hpp) and ranking by MFU or goodput-adjusted MFU,
// kept apart from projection.cpp so that the step-time model stays free of it.
#include <vector>

#include "topologies/goodput/failure_model.hpp"
#include "topologies/projection/projection.hpp"

namespace ibt::topo {

// Fills p.goodput from the assumptions (not computed, with the reason, when one is
// missing or p is infeasible). The checkpoint size comes from options.precision.
void add_goodput(Projection& p, const models::ModelConfig& model, const ProjectionOptions& options,
                 const FailureAssumptions& assumptions);

// The figure a ranking uses: MFU, or MFU x goodput (0 when goodput is not computed).
double ranking_value(const Projection& p, RankBy by);

// Feasible projections first, best ranking_value first (ties: shorter step), then the
// infeasible ones in their order.
void rank_projections(std::vector<Projection>& ps, RankBy by);

}  // namespace ibt::topo
