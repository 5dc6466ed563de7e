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

namespace {
// Longer than any published training context (Llama 3's 128K, 1M-token CP studies) by
// far, and small enough that the step program's token counts stay exact in a double.
constexpr long long kMaxSeqLen = 1LL << 24;
}  // namespace

models::ModelConfig load_projection_model(const ProjectionFlags& f) {
  models::ModelConfig model = models::load_model(f.model);
  if (f.seq_len == kSeqLenOfModel) return model;
  if (f.seq_len <= 0 || f.seq_len > kMaxSeqLen)
    throw UsageError("--seq-len must be a positive number of tokens up to " + std::to_string(kMaxSeqLen) + " (got " +
                     std::to_string(f.seq_len) + ")");
  model.seq_len = static_cast<int>(f.seq_len);
  return model;
}

std::optional<SoftwareStack> load_projection_stack(const ProjectionFlags& f) {
  if (f.stack.empty()) return std::nullopt;
  if (f.framework_given)
    throw UsageError(
        "--framework and --stack both say what the software does: give one (a stack file names its "
        "framework profile)");
  if (f.fp8) throw UsageError("--fp8 with --stack: the stack files give bf16 GEMM and attention figures only");
  return load_stack(f.stack);
}

ProjectionOptions projection_options(const models::ModelConfig& model, Topology& topology, const ProjectionFlags& f,
                                     const std::optional<SoftwareStack>& stack) {
  ProjectionOptions options = projection_options(topology, f);
  if (!stack) return options;
  apply_stack(*stack, model, topology, options);
  if (f.no_overlap) options.overlap_grad_reduce = false;  // the flag still overrides the stack
  return options;
}

ProjectionSetup load_projection_setup(const ProjectionFlags& f) {
  ProjectionSetup s;
  s.model = load_projection_model(f);
  s.topology = load_topology(f.topology);
  s.stack = load_projection_stack(f);
  s.options = projection_options(s.model, s.topology, f, s.stack);
  s.failure = failure_assumptions(s.topology, f.failure);
  s.rank_by = parse_rank_by(f.rank_by);
  if (s.rank_by == RankBy::goodput && !s.failure.complete())
    throw UsageError("--rank-by goodput: goodput cannot be computed: " + s.failure.missing());
  return s;
}

}  // namespace ibt::topo
