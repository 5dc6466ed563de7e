#pragma once
// What `ibt project`, `ibt crossover` and `ibt scaling` price with, assembled in one place
// from their flags: the model file, the topology, the framework profile (framework.hpp) and
// the ProjectionOptions it implies, the failure assumptions and the ranking. The three
// commands used to build it each on their own, with the same checks in slightly different
// orders; here there is one order and one message per refusal.
#include <string>

#include "models/plan/model_config.hpp"
#include "topologies/goodput/failure_model.hpp"
#include "topologies/hardware/topology.hpp"
#include "topologies/projection/projection.hpp"

namespace ibt::topo {

// The flags the setup reads, as the command line gave them ("" = not given).
struct ProjectionFlags {
  std::string model;     // catalog name or .json path
  std::string topology;  // catalog name or .json path
  std::string dtype;     // "" = default_dtype(topology)
  std::string framework = "ibt";
  std::string rank_by = "mfu";
  bool no_overlap = false;  // --no-overlap: gradient reduction after the backward
  bool fp8 = false;         // --fp8: linear-layer GEMMs at the fp8 peak
  double memory_fraction = 0.9;
  bool keep_sim = false;  // a single projection keeps its per-stage walk
  FailureOverrides failure;
};

struct ProjectionSetup {
  models::ModelConfig model;
  Topology topology;
  ProjectionOptions options;
  FailureAssumptions failure;
  RankBy rank_by = RankBy::mfu;
};

// The options a projection on `topology` runs with: the dtype (an unknown name refused
// naming it, as the topology's peak() does), fp32 Adam for fp32 compute, the framework
// profile (UsageError naming the known ones), --no-overlap, --fp8 and the memory fraction.
ProjectionOptions projection_options(const Topology& topology, const ProjectionFlags& f);

// The model and topology loaded (catalog_file.hpp's errors), the options, the failure
// assumptions and the ranking (--rank-by goodput refused when goodput cannot be computed).
ProjectionSetup load_projection_setup(const ProjectionFlags& f);

}  // namespace ibt::topo
