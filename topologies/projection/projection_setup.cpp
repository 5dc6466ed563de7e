#include "topologies/projection/projection_setup.hpp"

#include "core/errors.hpp"
#include "models/plan/model_file.hpp"
#include "topologies/projection/framework.hpp"
#include "topologies/sim/sim_pricer.hpp"

namespace ibt::topo {

ProjectionOptions projection_options(const Topology& topology, const ProjectionFlags& f) {
  ProjectionOptions options;
  options.dtype = f.dtype.empty() ? default_dtype(topology) : f.dtype;
  topology.device.peak(options.dtype);  // rejects an unknown dtype name early
  // fp32 compute means the fp32 engine: 4-byte activations and gradients, fp32 Adam.
  if (options.dtype == "fp32") options.precision = models::fp32_adam();
  apply(framework_profile(f.framework), options);
  if (f.no_overlap) options.overlap_grad_reduce = false;
  options.fp8_gemms = f.fp8;
  options.usable_memory_fraction = f.memory_fraction;
  options.keep_sim = f.keep_sim;
  return options;
}

ProjectionSetup load_projection_setup(const ProjectionFlags& f) {
  ProjectionSetup s;
  s.model = models::load_model(f.model);
  s.topology = load_topology(f.topology);
  s.options = projection_options(s.topology, f);
  s.failure = failure_assumptions(s.topology, f.failure);
  s.rank_by = parse_rank_by(f.rank_by);
  if (s.rank_by == RankBy::goodput && !s.failure.complete())
    throw UsageError("--rank-by goodput: goodput cannot be computed: " + s.failure.missing());
  return s;
}

}  // namespace ibt::topo
