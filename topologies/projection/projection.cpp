#include "topologies/projection/projection.hpp"

#include <malloc.h>
#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <mutex>

#include "core/errors.hpp"
#include "core/memory_plan.hpp"
#include "core/parallel.hpp"
#include "models/plan/schedule.hpp"
#include "models/plan/step_program.hpp"
#include "topologies/hardware/collective_model.hpp"
#include "topologies/projection/best_first.hpp"
#include "topologies/sim/sim_pricer.hpp"

namespace ibt::topo {

namespace {

std::string gb(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GB", bytes / 1e9);
  return buf;
}

// Fills memory fields; returns false (with the reason) when the split does not fit.
bool check_memory(const models::ModelConfig& m, const Topology& t, const ProjectionOptions& o, Projection& p) {
  p.memory = models::peak_memory_per_rank(m, p.split, o.memory_precision(), *schedule_compute_orders(p.split));
  p.memory_capacity_bytes = t.device.memory_GB.get() * 1e9 * o.usable_memory_fraction;
  p.fits_memory = p.memory.total() <= p.memory_capacity_bytes;
  p.memory_excess_bytes = p.fits_memory ? 0.0 : p.memory.total() - p.memory_capacity_bytes;
  if (p.fits_memory) return true;
  char excess[64];
  std::snprintf(excess, sizeof excess, "%.1f GB (%.0f%%) over: ", p.memory_excess_bytes / 1e9,
                100.0 * p.memory_excess_bytes / p.memory_capacity_bytes);
  p.reason = std::string(excess) + "needs " + gb(p.memory.total()) + " per device on stage " +
             std::to_string(p.memory.stage) + " (weights " + gb(p.memory.weights) + ", grads " + gb(p.memory.grads) +
             ", optimizer " + gb(p.memory.optimizer) + ", activations " + gb(p.memory.activations) +
             (p.memory.buffers > 0 ? ", ZeRO buffers " + gb(p.memory.buffers) : "") + ") > " +
             gb(p.memory_capacity_bytes) + " usable";
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

models::StepProgramOptions program_options(const ProjectionOptions& options) {
  models::StepProgramOptions po;
  po.activation_bytes = static_cast<int>(options.precision.activation_bytes);
  po.gradient_bytes = static_cast<int>(options.precision.grad_bytes);
  po.param_bytes = static_cast<int>(options.precision.weight_bytes);
  po.overlap_grad_reduce = options.overlap_grad_reduce;
  return po;
}

std::vector<models::StepProgram> stage_programs(const models::ModelConfig& model, const models::ParallelSplit& split,
                                                const ProjectionOptions& options) {
  const models::StepProgramOptions po = program_options(options);
  const models::PipelineSchedule schedule = models::build_schedule(split);
  std::vector<models::StepProgram> programs;
  programs.reserve(split.pp);
  for (int s = 0; s < split.pp; ++s)
    // The first rank of stage s (rank order tp-cp-dp-pp: models/plan/rank_groups.hpp).
    programs.push_back(
        models::build_step_program(model, split, schedule, models::RankLayout(split).rank_of({0, 0, s, 0, 0}), po));
  return programs;
}

namespace {

// The element type a projection prices: the options', else the topology's default.
std::string dtype_of(const ProjectionOptions& options, const Topology& topology) {
  return options.dtype.empty() ? default_dtype(topology) : options.dtype;
}

// The pricer of a projection: the topology's, with the options' attention and
// dispatch assumptions.
TopologyPricer make_pricer(const models::ModelConfig& model, const Topology& topology, const ProjectionOptions& options,
                           const models::ParallelSplit& split, const std::string& dtype) {
  TopologyPricer pricer(topology, split, dtype);
  pricer.set_kv_replicas(model.kv_replicas(split.tp));
  pricer.set_dispatch_overlaps_compute(options.dispatch_overlaps_compute);
  pricer.set_attention_rates(options.attention_forward_flops_per_us, options.attention_backward_flops_per_us);
  if (options.fp8_gemms) pricer.set_fp8_gemms();
  pricer.set_node_limited_routing(model);
  if (options.tp_comm_overlap) pricer.set_tp_comm_overlap(model, options.precision.activation_bytes);
  if (options.attention_score_passes > 0)
    pricer.add_attention_score_traffic(model, options.attention_score_passes, options.precision.activation_bytes);
  if (options.eager_elementwise) pricer.set_eager_elementwise(model, options.precision.activation_bytes);
  return pricer;
}

// Sets feasible, the times, MFU and the first stage's breakdown from a walked step; with
// every stage walked in detail (all_detailed), every stage's breakdown and the bottleneck.
void record(SimResult sim, bool all_detailed, const Topology& topology, const ProjectionOptions& options,
            const std::string& dtype, Projection& p) {
  p.priced = true;
  p.feasible = p.fits_memory;  // a split that does not fit may be priced all the same
  p.step_s = sim.step_us * 1e-6;
  const double peak = topology.device.peak(dtype).get() * 1e12;
  p.mfu = p.model_flops / (p.step_s * p.devices * peak);
  p.hfu = p.hardware_flops / (p.step_s * p.devices * peak);
  p.topology_name = topology.name;
  p.mfu_band = mfu_band(topology.name, p.mfu);
  p.tokens_per_s = p.tokens_per_step / p.step_s;
  const StageTime& first = sim.stages.front();
  p.compute_s = first.compute_us * 1e-6;
  for (int e = 0; e < kNumExposures; ++e) p.exposed_s[e] = first.exposed_us[e] * 1e-6;
  p.stages.clear();
  p.bottleneck_stage = 0;
  for (const StageTime& st : sim.stages) {
    if (!all_detailed && !p.stages.empty()) break;  // summarised stages carry no breakdown
    Projection::StageBreakdown b;
    b.compute_s = st.compute_us * 1e-6;
    for (int e = 0; e < kNumExposures; ++e) b.exposed_s[e] = st.exposed_us[e] * 1e-6;
    p.stages.push_back(b);
  }
  // The busiest stage (least bubble: compute + exposed communication), as `ibt project`'s
  // stage table names it.
  const int bubble = static_cast<int>(Exposure::bubble);
  for (size_t s = 1; s < p.stages.size(); ++s)
    if (p.stages[s].exposed_s[bubble] < p.stages[p.bottleneck_stage].exposed_s[bubble])
      p.bottleneck_stage = static_cast<int>(s);
  if (options.keep_sim) p.sim = std::move(sim);
}

}  // namespace

void price(const std::vector<models::StepProgram>& programs, const models::ModelConfig& model, const Topology& topology,
           const ProjectionOptions& options, Projection& p) {
  const std::string dtype = dtype_of(options, topology);
  TopologyPricer pricer = make_pricer(model, topology, options, p.split, dtype);
  record(simulate(programs, pricer), true, topology, options, dtype, p);
}

void price(const StepTemplates& templates, const models::ModelConfig& model, const Topology& topology,
           const ProjectionOptions& options, Projection& p) {
  const std::string dtype = dtype_of(options, topology);
  TopologyPricer pricer = make_pricer(model, topology, options, p.split, dtype);
  record(simulate_fast(templates, pricer, options.keep_sim ? StageDetail::all : StageDetail::first), options.keep_sim,
         topology, options, dtype, p);
}

namespace {
// A bound (step_lower_bounds or family_lower_bounds) in seconds on each topology, with
// the pricers price() would use.
template <typename Bounds>
std::vector<double> bounds_s(const models::ModelConfig& model, const models::ParallelSplit& split,
                             const std::vector<const Topology*>& topologies, const ProjectionOptions& options,
                             BoundTemplates* known, Bounds&& bounds) {
  std::vector<TopologyPricer> pricers;
  pricers.reserve(topologies.size());
  std::vector<OpPricer*> each;
  for (const Topology* t : topologies) {
    pricers.push_back(make_pricer(model, *t, options, split, dtype_of(options, *t)));
    each.push_back(&pricers.back());
  }
  std::vector<double> out = bounds(model, split, program_options(options), each, known);
  for (double& v : out) v *= 1e-6;
  return out;
}
}  // namespace

std::vector<double> step_lower_bounds_s(const models::ModelConfig& model, const models::ParallelSplit& split,
                                        const std::vector<const Topology*>& topologies,
                                        const ProjectionOptions& options, BoundTemplates* known) {
  return bounds_s(model, split, topologies, options, known, step_lower_bounds);
}

FamilyBounds family_bounds_of(const models::ModelConfig& model, const std::vector<models::ParallelSplit>& splits,
                              const std::vector<char>& wanted, const std::vector<const Topology*>& topologies,
                              const ProjectionOptions& options, BoundTemplates& known, int jobs) {
  FamilyBounds f;
  f.of.assign(splits.size(), 0);
  std::vector<models::ParallelSplit> representatives;
  std::map<std::string, size_t> index;  // describe() names every field of a split
  for (size_t i = 0; i < splits.size(); ++i) {
    if (!wanted[i]) continue;
    const models::ParallelSplit rep = bound_family(splits[i]);
    const auto [it, added] = index.emplace(models::describe(rep), representatives.size());
    if (added) representatives.push_back(rep);
    f.of[i] = it->second;
  }
  f.bounds.assign(representatives.size(), {});
  parallel_for(representatives.size(), jobs, [&](size_t k) {
    try {
      f.bounds[k] = bounds_s(model, representatives[k], topologies, options, &known, family_lower_bounds);
    } catch (const UsageError&) {
      // The topology cannot carry the family (a group across domains with no network):
      // its members are bounded, and refused, one by one.
      f.bounds[k].assign(topologies.size(), 0.0);
    }
  });
  return f;
}

double step_lower_bound_s(const models::ModelConfig& model, const models::ParallelSplit& split,
                          const Topology& topology, const ProjectionOptions& options, BoundTemplates* known) {
  return step_lower_bounds_s(model, split, {&topology}, options, known).front();
}

SplitWalk::SplitWalk(const models::ModelConfig& model, const models::ParallelSplit& split,
                     const ProjectionOptions& options)
    : split_(split) {
  if (fast_walk_prices(split))
    templates_.emplace(model, split, program_options(options));
  else if (PeriodStep::applies(split))
    period_.emplace(model, split, program_options(options));
  else
    programs_ = stage_programs(model, split, options);
}

void SplitWalk::price(const models::ModelConfig& model, const Topology& topology, const ProjectionOptions& options,
                      Projection& p) {
  if (templates_) return topo::price(*templates_, model, topology, options, p);
  const std::string dtype = dtype_of(options, topology);
  TopologyPricer pricer = make_pricer(model, topology, options, p.split, dtype);
  if (period_)
    if (std::optional<SimResult> sim = period_->simulate(pricer))
      return record(std::move(*sim), true, topology, options, dtype, p);
  if (programs_.empty()) programs_ = stage_programs(model, split_, options);  // no period on this topology
  record(simulate(programs_, pricer), true, topology, options, dtype, p);
}

namespace {
// Prices p.split by the walk that can (SplitWalk).
void price_by_its_walk(const models::ModelConfig& model, const Topology& topology, const ProjectionOptions& options,
                       Projection& p) {
  SplitWalk(model, p.split, options).price(model, topology, options, p);
}

// price_if_too_big: also price a split that does not fit (a single projection does, so
// the user sees the step time; searches do not spend the time).
Projection project_split(const models::ModelConfig& model, const Topology& topology, const models::ParallelSplit& split,
                         const ProjectionOptions& options, bool price_if_too_big) {
  Projection p;
  p.split = split;
  if (!prepare(model, topology, options, p) && !price_if_too_big) return p;
  price_by_its_walk(model, topology, options, p);
  return p;
}
}  // namespace

void require_projection_memory(const models::ModelConfig& model, const models::ParallelSplit& split,
                               const ProjectionOptions& options) {
  models::require_schedule_memory(split);
  if (!fast_walk_prices(split)) return;
  // Every action's ops are the same whatever its microbatch, and the actions grow in
  // proportion to the microbatches: the templates of the fewest valid microbatches
  // (m = pp at most), scaled, give the walk's size without building it.
  models::ParallelSplit small = split;
  small.microbatches = std::min(split.microbatches, split.pp);
  const double walk = StepTemplates(model, small, program_options(options)).op_walk_bytes(options.keep_sim) *
                      split.microbatches / small.microbatches;
  if (walk > 256.0 * 1024 * 1024)
    require_memory(walk, "the simulated step of " + std::to_string(split.microbatches) +
                             " microbatches (--microbatches, or the global batch / (dp x micro-batch size)): its "
                             "operations, walked one by one");
}

Projection project(const models::ModelConfig& model, const Topology& topology, const models::ParallelSplit& split,
                   const ProjectionOptions& options) {
  return project_split(model, topology, split, options, true);
}

Projection project_every_stage(const models::ModelConfig& model, const Topology& topology,
                               const models::ParallelSplit& split, ProjectionOptions options) {
  options.keep_sim = true;
  Projection p = project(model, topology, split, options);
  p.sim = SimResult{};
  return p;
}

namespace {

// The k smallest step times seen (k = keep_best): a split whose lower bound exceeds the
// largest of them cannot enter the top k.
class TopSteps {
 public:
  explicit TopSteps(size_t k) : k_(k) {}
  void add(double step_s) {
    heap_.push_back(step_s);
    std::push_heap(heap_.begin(), heap_.end());
    if (heap_.size() > k_) {
      std::pop_heap(heap_.begin(), heap_.end());
      heap_.pop_back();
    }
  }
  bool full() const { return heap_.size() == k_; }
  double kth() const { return heap_.front(); }

 private:
  size_t k_;
  std::vector<double> heap_;  // max-heap
};

std::string cannot_span_domains(const Topology& t, int devices) {
  const int D = t.domain_size();
  return "topology '" + t.name +
         "' has no scale_out figures (scale_out.bandwidth_GBps, scale_out.latency_us) "
         "and no calibrated fits between domains: " +
         std::to_string(devices) + " devices span " + std::to_string((devices + D - 1) / D) + " scale-up domains of " +
         std::to_string(D) +
         ", every split has a group across two of them, and nothing across can be priced (calibrate from a "
         "multi-node collectives run, or use at most " +
         std::to_string(D) + " devices)";
}

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f s", s);
  return buf;
}

}  // namespace

std::vector<Projection> project_all(const models::ModelConfig& model, const Topology& topology, int devices,
                                    const models::SplitSearch& search, const ProjectionOptions& options,
                                    const SearchRun& run) {
  const std::vector<models::ParallelSplit> splits = models::enumerate_splits(model, devices, search);
  std::vector<Projection> out(splits.size());
  std::mutex progress_mutex;
  size_t done = 0;
  auto report = [&](size_t n) {
    if (!run.progress || n == 0) return;
    std::lock_guard<std::mutex> lock(progress_mutex);
    done += n;
    run.progress(done, splits.size());
  };
  // A split the topology cannot carry (e.g. a group across domains with no scale-out
  // network) is reported, not dropped.
  auto guarded = [&](size_t i, auto&& body) {
    try {
      body();
    } catch (const UsageError& e) {
      Projection p;
      p.split = splits[i];
      p.devices = devices;
      p.reason = e.what();
      out[i] = p;
    }
  };
  const bool bound = run.keep_best > 0;
  // A topology that prices nothing between its domains cannot carry a job of more than
  // one: the groups of any split connect all its ranks, so one of them crosses two
  // domains, and its ops cannot be priced. Each split that fits is refused at once with
  // that reason (its memory kept), not by an exception out of its bound or walk.
  const bool carried = devices <= topology.domain_size() || prices_across_domains(topology);
  const std::string not_carried = carried ? "" : cannot_span_domains(topology, devices);
  // With keep_best, first the memory check of every split; then the splits that fit
  // best first (best_first.hpp), each from its family's bound to its own bound to its
  // price (each by the walk that prices it) while it can still enter the top list.
  std::vector<char> fits(splits.size(), 0);
  parallel_for(splits.size(), run.jobs, [&](size_t i) {
    guarded(i, [&] {
      if (!carried) {
        Projection p;
        p.split = splits[i];
        if (prepare(model, topology, options, p)) p.reason = not_carried;
        out[i] = std::move(p);
        return;
      }
      if (!bound) {
        out[i] = project_split(model, topology, splits[i], options, false);
        return;
      }
      Projection p;
      p.split = splits[i];
      fits[i] = prepare(model, topology, options, p);
      out[i] = std::move(p);
    });
    if (!fits[i]) report(1);
  });
  if (bound) {
    // The families' bounds (sim_fast.hpp bound_family), each computed once.
    BoundTemplates known(1);  // template summaries shared by the bounds of the search
    const FamilyBounds families = family_bounds_of(model, splits, fits, {&topology}, options, known, run.jobs);
    std::vector<double> lower(splits.size(), 0.0);
    std::vector<int> level(splits.size(), 0);  // 0: family bound, 1: own bound, 2: priced
    for (size_t i = 0; i < splits.size(); ++i)
      if (fits[i]) lower[i] = families.bounds[families.of[i]].front();
    TopSteps top(run.keep_best);
    auto bar = [&] { return top.full() ? top.kth() : std::numeric_limits<double>::infinity(); };
    best_first(
        fits, run.jobs, [&](size_t i) { return lower[i]; },
        [&](size_t i) { return lower[i] * (1 - kLowerBoundMargin) <= bar(); },
        [&](size_t i) {
          guarded(i, [&] {
            if (level[i] == 0)
              lower[i] = std::max(lower[i], step_lower_bound_s(model, splits[i], topology, options, &known));
            else
              price_by_its_walk(model, topology, options, out[i]);
          });
          // A split the topology cannot carry (guarded's reason) is finished too.
          return ++level[i] == 2 || !out[i].reason.empty();
        },
        [&](size_t i, bool finished) {
          if (!finished) return;
          if (out[i].feasible) top.add(out[i].step_s);
          report(1);
        },
        [&](size_t i) {
          Projection& p = out[i];
          p.bounded_out = true;
          p.reason = "not priced: its step time is at least " + seconds(lower[i]) + " (lower bound), above the " +
                     std::to_string(run.keep_best) + "th best " + seconds(top.kth());
          report(1);
        });
  }
  // Ranked through their indices: a Projection is large, and a search has 10^5 of them.
  std::vector<size_t> rank(out.size());
  for (size_t i = 0; i < rank.size(); ++i) rank[i] = i;
  std::stable_sort(rank.begin(), rank.end(), [&](size_t a, size_t b) {
    if (out[a].feasible != out[b].feasible) return out[a].feasible;
    return out[a].feasible && out[a].step_s < out[b].step_s;
  });
  std::vector<Projection> ranked;
  ranked.reserve(out.size());
  for (size_t i : rank) ranked.push_back(std::move(out[i]));
  return ranked;
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
  s.micro_batch_sizes = {1, 2, 4};
  s.schedules = {models::ScheduleKind::one_f_one_b, models::ScheduleKind::interleaved, models::ScheduleKind::zb_h1};
  s.interleave_chunks = {2, 4, 8};
  s.recomputes = {models::Recompute::none, models::Recompute::selective, models::Recompute::full};
  // ZeRO-1 everywhere; ZeRO-2, FSDP and HSDP (shard group = one scale-up domain) on
  // splits without PP only (parallel_split.hpp, sharded_with_pp).
  s.zero_stages = {1, 2, 3};
  s.shard_domains = {topology.domain_size()};
  s.sharded_with_pp = false;
  s.sharded_micro_batch_sizes = {2, 4, 8, 16};
  s.try_sequence_parallel = true;
  s.only_sequence_parallel = true;
  s.max_tp = topology.domain_size();
  // Context parallelism up to 16 (Llama 3 405B's long-context degree), both variants.
  s.max_cp = 16;
  return s;
}

}  // namespace ibt::topo
