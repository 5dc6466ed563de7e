#pragma once
// `ibt project`: the step time, MFU, breakdown and memory of a model trained with a
// split on a topology, from the sim executor running the step programs the real
// engines run (one rank per pipeline stage).
//
// Conventions (stated once; the help and README repeat them):
// - MFU = model FLOPs per step / (step time * devices * peak[dtype]); model FLOPs per
//   models/plan/accounting.hpp (6N + full-sequence attention, no recompute). HFU counts
//   recompute too.
// - Memory per device: models::peak_memory_per_rank() with the precision's bytes per
//   parameter; a split whose peak exceeds usable_memory_fraction of the device memory
//   is infeasible, with the reason and memory_excess_bytes. project() still prices it
//   (the step time it would have, so a user sees what the memory costs); the searches
//   (project_all, crossover) do not.
// - The breakdown is that of the pipeline's first stage (it holds the embedding and,
//   in 1F1B, the most microbatches in flight); its compute + exposed communication
//   per group + bubble add up to the step time.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "models/plan/accounting.hpp"
#include "models/plan/model_config.hpp"
#include "models/plan/parallel_split.hpp"
#include "models/plan/step_program.hpp"
#include "topologies/goodput/failure_model.hpp"
#include "topologies/hardware/topology.hpp"
#include "topologies/projection/uncertainty.hpp"
#include "topologies/sim/sim_executor.hpp"
#include "topologies/sim/sim_fast.hpp"
#include "topologies/sim/sim_period.hpp"

namespace ibt::topo {

struct ProjectionOptions {
  std::string dtype;                    // "" = default_dtype(topology)
  models::Precision precision;          // bytes per parameter/activation; default bf16 mixed Adam
  bool overlap_grad_reduce = true;      // DP reduction overlaps the backward pass
  double usable_memory_fraction = 0.9;  // of device memory (allocator, runtime, buffers)
  bool keep_sim = false;                // keep the per-stage SimResult (single projections)
  // Attention without a fused (flash) kernel writes and reads the s x s score matrix:
  // this many element passes over it in the forward (twice in the backward) are added
  // to the attention core's memory traffic. 0 = fused attention (the default).
  double attention_score_passes = 0;
  // op_overhead_us is host dispatch that overlaps the device's work (an op costs
  // max(roofline, overhead)) instead of adding to it (the default): eager frameworks
  // whose small kernels are launch-bound (sim_pricer.hpp).
  bool dispatch_overlaps_compute = false;
  // Sequence-parallel TP all-gathers and reduce-scatters split into chunks that overlap
  // the GEMM next to them (Megatron-Core --tp-comm-overlap, XLA collective matmul):
  // sim_pricer.hpp states the cost.
  bool tp_comm_overlap = false;
  // The linear layers' GEMMs in fp8 (Transformer Engine), MFU still against `dtype`'s
  // peak (bf16): sim_pricer.hpp states the cost.
  bool fp8_gemms = false;
  // Norms, rotary, the SwiGLU product and residual adds as eager PyTorch runs them, one
  // kernel per operator (a stack's "elementwise": "eager"; eager_elementwise.hpp states
  // the bytes). false: fused, as the step program prices them.
  bool eager_elementwise = false;
  // The framework's memory policy (framework.hpp): what "selective" recompute keeps, and
  // whether fp8 GEMMs keep their inputs for the weight gradient in fp8 (Transformer
  // Engine). memory_precision() folds them into `precision` for the memory plan.
  models::SelectivePolicy selective_policy = models::SelectivePolicy::attention_core;
  bool fp8_keeps_gemm_inputs_in_fp8 = false;
  // The attention core at a software stack's measured kernel rate (stack.hpp), in FLOP/us
  // per FLOP as the step program counts them; 0 = at the GEMM rate (peak x gemm_efficiency).
  double attention_forward_flops_per_us = 0, attention_backward_flops_per_us = 0;
  models::Precision memory_precision() const {
    models::Precision p = precision;
    p.selective = selective_policy;
    if (fp8_gemms && fp8_keeps_gemm_inputs_in_fp8) p.saved_gemm_input_bytes = 1;
    return p;
  }
  ProjectionOptions() : precision(models::bf16_mixed_adam()) {}
};

struct Projection {
  models::ParallelSplit split;
  int devices = 0;
  bool feasible = false;
  std::string reason;              // why not, when infeasible
  bool fits_memory = false;        // peak memory <= usable (set by prepare())
  double memory_excess_bytes = 0;  // peak memory - usable, when it does not fit
  bool priced = false;             // step time and breakdown computed (also for a split that does not fit)
  bool bounded_out = false;        // fits, but not priced: a search's lower bound ruled it out of its top list
  double step_s = 0;
  double mfu = 0, hfu = 0;
  MfuBand mfu_band;  // from the topology family's validation error (uncertainty.hpp)
  std::string topology_name;
  double tokens_per_s = 0;
  double tokens_per_step = 0;
  double model_flops = 0, hardware_flops = 0;     // per step, all devices
  double compute_s = 0;                           // first stage
  std::array<double, kNumExposures> exposed_s{};  // first stage, by cause
  // Every stage's breakdown (compute + exposed parts add up to its finish), and the
  // bottleneck: the busiest stage (compute + exposed communication, i.e. the least bubble) (with uneven stages, e.g.
  // the last stage's output layer, it is not stage 0). Reports show the bottleneck's
  // breakdown and keep the others available. Searches (keep_sim off) walk only the
  // first stage in detail: then `stages` holds stage 0 alone.
  struct StageBreakdown {
    double compute_s = 0;
    std::array<double, kNumExposures> exposed_s{};
  };
  std::vector<StageBreakdown> stages;
  int bottleneck_stage = 0;
  models::RankMemory memory;         // the peak stage
  double memory_capacity_bytes = 0;  // usable per device
  SimResult sim;                     // only with keep_sim
  GoodputEstimate goodput;           // failures and checkpoints: add_goodput() (projection_goodput.hpp)
};

// Refuses (UsageError naming the microbatches, the bytes needed and available) a split
// whose schedule or simulated step cannot fit in this host's memory, before building it.
void require_projection_memory(const models::ModelConfig& model, const models::ParallelSplit& split,
                               const ProjectionOptions& options);

Projection project(const models::ModelConfig& model, const Topology& topology, const models::ParallelSplit& split,
                   const ProjectionOptions& options = {});

// project() with every stage walked in detail (keep_sim, the walk itself then dropped):
// the bottleneck stage's breakdown for a split a search found (searches walk stage 0
// only; the step time is the same up to rounding, sim_fast.hpp).
Projection project_every_stage(const models::ModelConfig& model, const Topology& topology,
                               const models::ParallelSplit& split, ProjectionOptions options);

// The two halves of project(), for sweeps that price one split on many topologies
// (ibt crossover): the memory check and FLOP counts (fills everything but the times;
// false when infeasible), and the step programs of one rank per stage.
bool prepare(const models::ModelConfig& model, const Topology& topology, const ProjectionOptions& options,
             Projection& p);
std::vector<models::StepProgram> stage_programs(const models::ModelConfig& model, const models::ParallelSplit& split,
                                                const ProjectionOptions& options);
// Prices prepared programs on a topology (p from prepare() on any topology with the
// same device memory); sets feasible and the times. The full event walk (simulate()).
void price(const std::vector<models::StepProgram>& programs, const models::ModelConfig& model, const Topology& topology,
           const ProjectionOptions& options, Projection& p);
// The same from the split's action templates (sim_fast.hpp): what project(),
// project_all() and crossover() use. With options.keep_sim every stage is walked op by
// op (bitwise simulate()'s result); otherwise the first stage only (its breakdown is
// the Projection's), the others by summaries (equal up to rounding, sim_fast.hpp).
void price(const StepTemplates& templates, const models::ModelConfig& model, const Topology& topology,
           const ProjectionOptions& options, Projection& p);
// The fabric-independent half of pricing one split, built once and priced on any
// number of topologies (a crossover row's fabrics): the fast walk's templates where it
// prices the split (sim_fast.hpp fast_walk_prices), else the one-stage period walk where
// it applies (sim_period.hpp; the full programs are built on a topology where it shows
// no period), else the full step programs. Used by one thread at a time.
class SplitWalk {
 public:
  SplitWalk(const models::ModelConfig& model, const models::ParallelSplit& split, const ProjectionOptions& options);
  // price() above with whichever walk the split has; options as given to the constructor.
  void price(const models::ModelConfig& model, const Topology& topology, const ProjectionOptions& options,
             Projection& p);

 private:
  models::ParallelSplit split_;
  std::optional<StepTemplates> templates_;
  std::optional<PeriodStep> period_;
  std::vector<models::StepProgram> programs_;  // built on first need
};
// step_lower_bound() (sim_fast.hpp) in seconds, with the pricer price() would use.
// `known` (may be null): template summaries shared with a search's other bounds on the
// same topologies (sim_fast.hpp BoundTemplates).
double step_lower_bound_s(const models::ModelConfig& model, const models::ParallelSplit& split,
                          const Topology& topology, const ProjectionOptions& options, BoundTemplates* known = nullptr);
// The same on several topologies (a crossover row), the templates built once.
std::vector<double> step_lower_bounds_s(const models::ModelConfig& model, const models::ParallelSplit& split,
                                        const std::vector<const Topology*>& topologies,
                                        const ProjectionOptions& options, BoundTemplates* known = nullptr);
// The family bounds (sim_fast.hpp family_lower_bounds, in seconds) of the splits with
// `wanted` set, on each topology, each family's computed once (on `jobs` threads), with
// the template summaries of `known` (made for these topologies): split i's are
// bounds[of[i]][topology].
struct FamilyBounds {
  std::vector<size_t> of;
  std::vector<std::vector<double>> bounds;
};
FamilyBounds family_bounds_of(const models::ModelConfig& model, const std::vector<models::ParallelSplit>& splits,
                              const std::vector<char>& wanted, const std::vector<const Topology*>& topologies,
                              const ProjectionOptions& options, BoundTemplates& known, int jobs);
// The element sizes and overlap the step programs of a projection use.
models::StepProgramOptions program_options(const ProjectionOptions& options);

// How a search runs: on `jobs` threads (the results are the same, in the same order,
// for any count), calling `progress` with (splits done, total) as it goes (from one
// thread at a time).
struct SearchRun {
  int jobs = 1;
  std::function<void(size_t done, size_t total)> progress;
  // > 0: only the keep_best fastest splits are wanted (a top list ranked by step time
  // or MFU). Splits are then priced in order of a lower bound on their step time
  // (step_lower_bound, sim_fast.hpp), and one whose bound exceeds the keep_best-th
  // fastest step time found is not priced: bounded_out, its reason giving both times.
  // The keep_best fastest, their times and order are those of the full search; which
  // splits are skipped does not depend on jobs. 0 = price every split that fits.
  size_t keep_best = 0;
};

// Every split enumerate_splits() yields for `devices`, projected and ranked: feasible
// ones by step time (fastest first), then the infeasible ones with their reasons (and,
// with run.keep_best, the splits skipped by their lower bound: not feasible, bounded_out).
std::vector<Projection> project_all(const models::ModelConfig& model, const Topology& topology, int devices,
                                    const models::SplitSearch& search, const ProjectionOptions& options = {},
                                    const SearchRun& run = {});

// Step programs of large searches are tens of MB each, built and dropped thousands of
// times; glibc returns such blocks to the kernel (mmap/munmap) and every program then
// pays page faults again -- measured 7x the CPU time of the search itself. Keeping
// freed memory in the heap removes that; call once before a search (glibc only).
void keep_freed_memory_for_reuse();

// The search `ibt project --all` and `ibt crossover` use by default: microbatch size 1,
// 2 or 4, 1F1B and interleaved (v = 2, 4, 8), recompute none/selective/full, ZeRO 0 and 1, and
// without PP also ZeRO-2, ZeRO-3 (FSDP) and HSDP sharded over one scale-up domain,
// context parallelism up to 16 (all_gather and ring, where 2cp divides seq_len),
// sequence parallelism whenever tp > 1, tp at most the domain size.
models::SplitSearch default_search(const Topology& topology, long long global_batch);

}  // namespace ibt::topo
