#pragma once
// What `ibt project`, `ibt crossover` and `ibt scaling` price with, assembled in one place
// from their flags: the model file, the topology, the framework profile (framework.hpp) and
// the ProjectionOptions it implies, the failure assumptions and the ranking. The three
// commands used to build it each on their own, with the same checks in slightly different
// orders; here there is one order and one message per refusal.
#include <limits>
#include <optional>
#include <string>

#include "models/plan/model_config.hpp"
#include "topologies/goodput/failure_model.hpp"
#include "topologies/hardware/topology.hpp"
#include "topologies/projection/projection.hpp"
#include "topologies/projection/stack.hpp"

namespace ibt::topo {

// --seq-len not given: the model file's sequence length (any given value, 0 and negative
// ones included, is checked).
constexpr long long kSeqLenOfModel = std::numeric_limits<long long>::min();

// The flags the setup reads, as the command line gave them ("" = not given).
struct ProjectionFlags {
  std::string model;     // catalog name or .json path
  std::string topology;  // catalog name or .json path
  std::string dtype;     // "" = default_dtype(topology)
  std::string framework = "ibt";
  bool framework_given = false;        // --framework on the command line (not its default)
  std::string stack;                   // --stack NAME|FILE (stack.hpp); "" = none: the topology's figures
  long long seq_len = kSeqLenOfModel;  // --seq-len: tokens per sequence instead of the model file's
  std::string rank_by = "mfu";
  bool no_overlap = false;  // --no-overlap: gradient reduction after the backward
  bool fp8 = false;         // --fp8: linear-layer GEMMs at the fp8 peak
  double memory_fraction = 0.9;
  bool keep_sim = false;  // a single projection keeps its per-stage walk
  FailureOverrides failure;
};

struct ProjectionSetup {
  models::ModelConfig model;  // with --seq-len applied
  std::optional<SoftwareStack> stack;
  Topology topology;
  ProjectionOptions options;
  FailureAssumptions failure;
  RankBy rank_by = RankBy::mfu;
};

// The model file with --seq-len applied (UsageError naming the flag for a length that is
// not a positive number of tokens); activations, attention and the batch in sequences
// follow it, as they follow a model file's seq_len.
models::ModelConfig load_projection_model(const ProjectionFlags& f);

// The stack --stack names, if any (stack.hpp's errors); --framework or --fp8 beside it
// is refused: the stack names its framework, and its GEMM figures are bf16.
std::optional<SoftwareStack> load_projection_stack(const ProjectionFlags& f);

// The options a projection on `topology` runs with: the dtype (an unknown name refused
// naming it, as the topology's peak() does), fp32 Adam for fp32 compute, the framework
// profile (UsageError naming the known ones), --no-overlap, --fp8 and the memory fraction.
ProjectionOptions projection_options(const Topology& topology, const ProjectionFlags& f);
// The same with the stack applied (apply_stack: it also sets `topology`'s efficiencies).
ProjectionOptions projection_options(const models::ModelConfig& model, Topology& topology, const ProjectionFlags& f,
                                     const std::optional<SoftwareStack>& stack);

// The model and topology loaded (catalog_file.hpp's errors), the options, the failure
// assumptions and the ranking (--rank-by goodput refused when goodput cannot be computed).
ProjectionSetup load_projection_setup(const ProjectionFlags& f);

}  // namespace ibt::topo
