#include "topologies/studies/scaling.hpp"

#include <cmath>

#include <map>
#include <variant>

#include "core/errors.hpp"
#include "reports/store/store.hpp"
#include "topologies/calibration/agreement.hpp"
#include "topologies/calibration/train_runs.hpp"

namespace ibt::topo {

const char* to_string(ScalingMode m) { return m == ScalingMode::weak ? "weak" : "strong"; }

ScalingMode parse_scaling_mode(const std::string& text) {
  if (text == "strong") return ScalingMode::strong;
  if (text == "weak") return ScalingMode::weak;
  throw UsageError("--scaling must be strong (fixed global batch) or weak (fixed batch per device), got '" + text +
                   "'");
}

long long ScalingBatch::at(int devices) const {
  if (mode == ScalingMode::strong) return global_batch;
  const double sequences = sequences_per_device * devices;
  const long long whole = std::llround(sequences);
  if (whole < 1 || std::fabs(sequences - static_cast<double>(whole)) > 1e-9 * sequences)
    throw UsageError("weak scaling: " + std::to_string(devices) + " devices x " + std::to_string(sequences_per_device) +
                     " sequences per device is not a whole number of "
                     "sequences; choose --sequences-per-device so that every --gpus value gives one");
  return whole;
}

double ScalingPoint::tokens_per_s_per_device() const {
  return best.feasible && devices > 0 ? best.tokens_per_s / devices : std::nan("");
}

GenerationSpeed generation_speed(const ScalingPoint& point, const ScalingPoint* baseline, double power_W,
                                 double token_budget) {
  GenerationSpeed g;
  const double per_device = point.tokens_per_s_per_device();
  if (!(per_device > 0)) return g;
  if (baseline && baseline->tokens_per_s_per_device() > 0) {
    g.speedup = per_device / baseline->tokens_per_s_per_device();
    const MfuBand &a = point.best.mfu_band, &b = baseline->best.mfu_band;
    // The baseline against itself is 1 exactly: no band.
    if (point.source == "projected" && point.topology != baseline->topology && a.known && b.known)
      g.speedup_uncertainty = g.speedup * std::hypot(a.relative, b.relative);
  }
  g.time_to_budget_s = token_budget / point.best.tokens_per_s;
  if (power_W > 0) g.joules_per_token = power_W / per_device;
  return g;
}

std::vector<ScalingPoint> project_scaling(const models::ModelConfig& model, const Topology& topology,
                                          const std::vector<int>& devices, const ScalingBatch& batch,
                                          const ProjectionOptions& options) {
  std::vector<ScalingPoint> points;
  for (const int n : devices) {
    ScalingPoint pt;
    pt.topology = topology.name;
    pt.system = topology.device.name;
    pt.devices = n;
    pt.global_batch = batch.at(n);
    // project_all ranks feasible splits by step time first; all share the model FLOPs
    // per step, so the first is also the best MFU.
    SearchRun run;
    run.keep_best = 1;  // only the best is used: the others' times need not be computed
    std::vector<Projection> ranked =
        project_all(model, topology, n, default_search(topology, pt.global_batch), options, run);
    pt.candidates = static_cast<int>(ranked.size());
    if (!ranked.empty() && ranked.front().feasible) {
      // The search walks only stage 0 in detail; the winner again with every stage, for
      // the bottleneck stage's breakdown (the same step time up to rounding: sim_fast.hpp).
      pt.best = project_every_stage(model, topology, ranked.front().split, options);
    } else if (!ranked.empty()) {
      pt.best = std::move(ranked.front());
    } else {
      pt.best.devices = n;
      pt.best.reason = "no valid split of " + model.name + " on " + std::to_string(n) + " devices at global batch " +
                       std::to_string(pt.global_batch) + " sequences (batch not divisible, or tp/pp/ep constraints)";
    }
    if (!pt.best.feasible && !ranked.empty()) pt.best.reason = "no split fits in memory; e.g. " + pt.best.reason;
    points.push_back(std::move(pt));
  }
  return points;
}

namespace {

double number_attr(const store::RunInfo& run, const std::string& name) {
  const auto v = run.attr(name);
  if (!v) return std::nan("");
  if (const auto* d = std::get_if<double>(&*v)) return *d;
  if (const auto* i = std::get_if<std::int64_t>(&*v)) return static_cast<double>(*i);
  return std::nan("");
}

}  // namespace

std::vector<ScalingPoint> measured_scaling(const std::string& path, const models::ModelConfig& model) {
  std::map<std::string, store::RunInfo> info;
  for (auto& run : store::list_runs(path)) info.emplace(run.id, std::move(run));
  std::map<int, ScalingPoint> best;  // world size -> the best run there
  for (const MeasuredTrainRun& m : read_train_runs(path)) {
    if (m.model != model.name) continue;
    const store::RunInfo& run = info.at(m.run_id);
    const double flops = number_attr(run, "model_flops_per_step");
    const double peak_gflops = number_attr(run, "peak_gflops_per_rank");
    const int ranks = m.split.dp * m.split.tp * m.split.pp;
    if (!(flops > 0) || !(peak_gflops > 0) || !(m.step_s > 0) || ranks < 1) continue;
    ScalingPoint pt;
    pt.source = "measured " + m.label();
    const std::string gpu = run.attr_string("gpu_name");
    const std::string hosts = run.attr_string("hosts");
    pt.system = !gpu.empty() ? gpu : "CPU (" + (hosts.empty() ? std::string("unknown host") : hosts) + ")";
    pt.topology = "measured";
    pt.devices = ranks;
    pt.global_batch = static_cast<long long>(m.split.dp) * m.split.microbatches * m.split.micro_batch_size;
    pt.candidates = 1;
    Projection& p = pt.best;
    p.split = m.split;
    p.devices = ranks;
    p.feasible = true;
    p.step_s = m.step_s;
    p.model_flops = flops;
    p.mfu = flops / (m.step_s * ranks * peak_gflops * 1e9);
    p.hfu = std::nan("");
    p.tokens_per_step = static_cast<double>(pt.global_batch) * model.seq_len;
    p.tokens_per_s = p.tokens_per_step / m.step_s;
    p.compute_s = m.compute_s;
    p.exposed_s.fill(0.0);
    p.exposed_s[static_cast<int>(Exposure::tp)] = m.tp_s;
    p.exposed_s[static_cast<int>(Exposure::dp)] = m.dp_s;
    p.exposed_s[static_cast<int>(Exposure::ep)] = m.ep_s;
    p.exposed_s[static_cast<int>(Exposure::pp)] = m.pp_s;
    p.exposed_s[static_cast<int>(Exposure::expert_dp)] = std::nan("");
    p.exposed_s[static_cast<int>(Exposure::bubble)] = std::nan("");
    p.exposed_s[static_cast<int>(Exposure::cp)] = std::nan("");  // not in a train run's steps table
    pt.other_s = m.other_s;
    pt.run = m;
    auto it = best.find(ranks);
    if (it == best.end() || it->second.best.mfu < p.mfu) best[ranks] = std::move(pt);
  }
  std::vector<ScalingPoint> out;
  for (auto& [ranks, pt] : best) out.push_back(std::move(pt));
  return out;
}

void price_own_split(ScalingPoint& measured, const models::ModelConfig& model, const Topology& topology) {
  measured.own_split_topology = topology.name;
  measured.own_split_mfu = std::nan("");
  try {
    const Agreement a = compare_run(measured.run, model, topology);
    if (!(a.projected_step_s > 0)) {
      measured.own_split_note = "the projected step is not positive";
      return;
    }
    // The same FLOPs and the same peak on both sides: MFU scales with 1 / step time.
    measured.own_split_mfu = measured.best.mfu * measured.best.step_s / a.projected_step_s;
    measured.own_split_note.clear();
  } catch (const UsageError& e) {
    measured.own_split_note = e.what();
  }
}

}  // namespace ibt::topo
