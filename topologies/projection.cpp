#include "topologies/projection.hpp"

#include <algorithm>
#include <cstdio>
#include <malloc.h>

#include "core/errors.hpp"
#include "models/schedule.hpp"
#include "models/step_program.hpp"
#include "topologies/sim_pricer.hpp"

namespace ibt::topo {

namespace {

std::string gb(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GB", bytes / 1e9);
  return buf;
}

// Fills memory fields; returns false (with the reason) when the split does not fit.
bool check_memory(const models::ModelConfig& m, const Topology& t, const ProjectionOptions& o,
                  Projection& p) {
  p.memory = models::peak_memory_per_rank(m, p.split, o.precision);
  p.memory_capacity_bytes = t.device.memory_GB.get() * 1e9 * o.usable_memory_fraction;
  if (p.memory.total() <= p.memory_capacity_bytes) return true;
  p.reason = "needs " + gb(p.memory.total()) + " per device on stage " +
             std::to_string(p.memory.stage) + " (weights " + gb(p.memory.weights) + ", grads " +
             gb(p.memory.grads) + ", optimizer " + gb(p.memory.optimizer) + ", activations " +
             gb(p.memory.activations) + ") > " + gb(p.memory_capacity_bytes) + " usable";
  return false;
}

}  // namespace

bool prepare(const models::ModelConfig& model, const Topology& topology, const ProjectionOptions& options,
             Projection& p) {
  p.devices = p.split.world_size();
  models::validate(p.split, model, p.devices);
  const double sequences = static_cast<double>(p.split.global_batch());
  p.model_flops = models::model_flops_per_step(model, sequences);
  p.hardware_flops = models::hardware_flops_per_step(model, sequences, p.split.recompute);
  p.tokens_per_step = sequences * model.seq_len;
  return check_memory(model, topology, options, p);
}

std::vector<models::StepProgram> stage_programs(const models::ModelConfig& model,
                                                const models::ParallelSplit& split,
                                                const ProjectionOptions& options) {
  models::StepProgramOptions po;
  po.activation_bytes = static_cast<int>(options.precision.activation_bytes);
  po.gradient_bytes = static_cast<int>(options.precision.grad_bytes);
  po.param_bytes = static_cast<int>(options.precision.weight_bytes);
  po.overlap_grad_reduce = options.overlap_grad_reduce;
  const models::PipelineSchedule schedule = models::build_schedule(split);
  std::vector<models::StepProgram> programs;
  programs.reserve(split.pp);
  for (int s = 0; s < split.pp; ++s)
    programs.push_back(models::build_step_program(model, split, schedule, s * split.tp * split.dp, po));
  return programs;
}

void price(const std::vector<models::StepProgram>& programs, const models::ModelConfig& model,
           const Topology& topology,
           const ProjectionOptions& options, Projection& p) {
  const std::string dtype = options.dtype.empty() ? default_dtype(topology) : options.dtype;
  TopologyPricer pricer(topology, p.split, dtype);
  pricer.set_dispatch_overlaps_compute(options.dispatch_overlaps_compute);
  if (options.attention_score_passes > 0)
    pricer.add_attention_score_traffic(model, options.attention_score_passes,
                                       options.precision.activation_bytes);
  SimResult sim = simulate(programs, pricer);
  p.feasible = true;
  p.step_s = sim.step_us * 1e-6;
  const double peak = topology.device.peak(dtype).get() * 1e12;
  p.mfu = p.model_flops / (p.step_s * p.devices * peak);
  p.hfu = p.hardware_flops / (p.step_s * p.devices * peak);
  p.tokens_per_s = p.tokens_per_step / p.step_s;
  const StageTime& first = sim.stages.front();
  p.compute_s = first.compute_us * 1e-6;
  for (int e = 0; e < kNumExposures; ++e) p.exposed_s[e] = first.exposed_us[e] * 1e-6;
  p.stages.clear();
  p.bottleneck_stage = 0;
  for (const StageTime& st : sim.stages) {
    Projection::StageBreakdown b;
    b.compute_s = st.compute_us * 1e-6;
    for (int e = 0; e < kNumExposures; ++e) b.exposed_s[e] = st.exposed_us[e] * 1e-6;
    p.stages.push_back(b);
  }
  for (size_t s = 1; s < p.stages.size(); ++s)
    if (p.stages[s].compute_s > p.stages[p.bottleneck_stage].compute_s) p.bottleneck_stage = static_cast<int>(s);
  if (options.keep_sim) p.sim = std::move(sim);
}

Projection project(const models::ModelConfig& model, const Topology& topology,
                   const models::ParallelSplit& split, const ProjectionOptions& options) {
  Projection p;
  p.split = split;
  if (!prepare(model, topology, options, p)) return p;
  price(stage_programs(model, split, options), model, topology, options, p);
  return p;
}

std::vector<Projection> project_all(const models::ModelConfig& model, const Topology& topology,
                                    int devices, const models::SplitSearch& search,
                                    const ProjectionOptions& options) {
  std::vector<Projection> out;
  for (const auto& split : models::enumerate_splits(model, devices, search)) {
    try {
      out.push_back(project(model, topology, split, options));
    } catch (const UsageError& e) {
      // A split the topology cannot carry (e.g. a group across domains with no
      // scale-out network) is reported, not dropped.
      Projection p;
      p.split = split;
      p.devices = devices;
      p.reason = e.what();
      out.push_back(p);
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const Projection& a, const Projection& b) {
    if (a.feasible != b.feasible) return a.feasible;
    return a.feasible && a.step_s < b.step_s;
  });
  return out;
}

void keep_freed_memory_for_reuse() {
#ifdef M_MMAP_THRESHOLD
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_TOP_PAD, 256 << 20);
#endif
}

models::SplitSearch default_search(const Topology& topology, long long global_batch) {
  models::SplitSearch s;
  s.global_batch = global_batch;
  s.micro_batch_sizes = {1};
  s.schedules = {models::ScheduleKind::one_f_one_b, models::ScheduleKind::interleaved};
  s.interleave_chunks = {2};
  s.recomputes = {models::Recompute::none, models::Recompute::selective, models::Recompute::full};
  s.try_zero1 = true;
  s.try_sequence_parallel = true;
  s.only_sequence_parallel = true;
  s.max_tp = topology.domain_size();
  return s;
}

}  // namespace ibt::topo
