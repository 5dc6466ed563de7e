// ibt scaling: MFU and tokens/s per device against device count, the best split per
// point, for one model on one or several topologies (hardware generations), projected
// by the sim executor (topologies/studies/scaling.hpp); measured `ibt train`/`ibt sweep` runs of
// the same model can join the table (--measured).
#include <algorithm>
#include <boost/program_options.hpp>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <map>
#include <optional>

#include "cli/cli.hpp"
#include "cli/commands.hpp"
#include "cli/split_flags.hpp"
#include "collectives/runtime/run_recorder.hpp"
#include "core/errors.hpp"
#include "core/text_wrap.hpp"
#include "ibt/version.hpp"
#include "models/plan/model_file.hpp"
#include "topologies/projection/projection_report.hpp"
#include "topologies/projection/projection_setup.hpp"
#include "topologies/sim/sim_pricer.hpp"
#include "topologies/studies/scaling.hpp"
#include "topologies/studies/scaling_generations.hpp"
#include "topologies/studies/scaling_table.hpp"
#include "topologies/studies/verdict_reason.hpp"

namespace ibt::suites {
namespace {

namespace po = boost::program_options;

const double kNaN = std::numeric_limits<double>::quiet_NaN();

topo::ScalingRow scaling_row(const topo::ScalingPoint& pt, const std::string& model, topo::ScalingMode mode,
                             const std::vector<topo::ScalingPoint>& all, const GenerationContext& generations) {
  const topo::GenerationSpeed speed = speed_of(pt, all, generations);
  const topo::Projection& p = pt.best;
  const bool ok = p.feasible;
  auto v = [&](double x) { return ok ? x : kNaN; };
  // Projections: the bottleneck stage (projection.hpp); measured: means over ranks.
  const bool staged = ok && !p.stages.empty();
  const topo::Projection::StageBreakdown stage =
      staged ? p.stages[p.bottleneck_stage] : topo::Projection::StageBreakdown{p.compute_s, p.exposed_s};
  auto part = [&](topo::Exposure e) { return v(stage.exposed_s[static_cast<int>(e)]); };
  topo::ScalingRow r;
  r.source = pt.source;
  r.topology = pt.topology;
  r.system = pt.system;
  r.model = model;
  r.scaling = topo::to_string(mode);
  r.devices = pt.devices;
  r.global_batch = pt.global_batch;
  r.split = ok ? topo::split_label(p.split) : std::string("(none fits)");
  r.dp = ok ? p.split.dp : 0;
  r.tp = ok ? p.split.tp : 0;
  r.pp = ok ? p.split.pp : 0;
  r.ep = ok ? p.split.ep : 0;
  r.feasible = ok;
  r.reason = p.reason.substr(0, 255);
  r.candidates = pt.candidates;
  r.step_s = v(p.step_s);
  r.mfu = v(p.mfu);
  r.hfu = v(p.hfu);
  r.tokens_per_s = v(p.tokens_per_s);
  r.tokens_per_s_per_device = pt.tokens_per_s_per_device();
  r.breakdown_stage = staged ? p.bottleneck_stage : -1;
  r.compute_s = v(stage.compute_s);
  r.exposed_tp_s = part(topo::Exposure::tp);
  r.exposed_dp_s = part(topo::Exposure::dp);
  r.exposed_expert_dp_s = part(topo::Exposure::expert_dp);
  r.exposed_pp_s = part(topo::Exposure::pp);
  r.exposed_ep_s = part(topo::Exposure::ep);
  r.bubble_s = part(topo::Exposure::bubble);
  r.other_s = v(pt.other_s);
  r.exposed_cp_s = part(topo::Exposure::cp);
  r.memory_bytes = ok && p.memory.total() > 0 ? p.memory.total() : kNaN;
  r.baseline = generations.baseline;
  r.speedup_vs_baseline = speed.speedup;
  r.speedup_uncertainty = speed.speedup_uncertainty;
  r.token_budget = generations.token_budget;
  r.time_to_budget_s = speed.time_to_budget_s;
  r.device_power_W = power_of(pt, generations);
  r.energy_J_per_token = speed.joules_per_token;
  if (pt.source != "projected") {
    r.own_split_topology = pt.own_split_topology;
    r.own_split_mfu = pt.own_split_mfu;
    r.own_split_diff = ok && pt.own_split_mfu > 0 ? p.mfu / pt.own_split_mfu - 1 : kNaN;
  }
  return r;
}

// One row per point. By default the best split is its compact label (models::compact_label)
// so a row fits 120 columns, and an infeasible point's reason wraps under its row; wide,
// the full label and the reason on one line.
void print_points(const std::vector<topo::ScalingPoint>& points, bool wide) {
  const int split_width = wide ? 62 : 32;
  std::printf("%8s %9s %10s %7s %7s  %-*s %s\n", "devices", "batch", "tok/s/dev", "MFU", "step s", split_width,
              "best split", wide ? "compute share (stage), largest exposed" : "compute (stage), top exposed");
  for (const auto& pt : points) {
    const topo::Projection& p = pt.best;
    if (!p.feasible) {
      char row[96];
      std::snprintf(row, sizeof row, "%8d %9lld %10s %7s %7s  ", pt.devices, pt.global_batch, "-", "-", "-");
      std::printf("%s\n", wrap_lines(row + p.reason, report_width(wide), std::strlen(row)).c_str());
      continue;
    }
    const bool staged = !p.stages.empty();
    const auto& st = staged ? p.stages[p.bottleneck_stage] : topo::Projection::StageBreakdown{p.compute_s, p.exposed_s};
    int worst = 0;
    for (int e = 1; e < topo::kNumExposures; ++e)
      if (st.exposed_s[e] > st.exposed_s[worst]) worst = e;
    char detail[96] = "- (a log has no breakdown)";
    if (std::isfinite(st.compute_s))
      std::snprintf(detail, sizeof detail, "%.0f%% (%s), %s %.0f%%", 100 * st.compute_s / p.step_s,
                    staged ? ("stage " + std::to_string(p.bottleneck_stage)).c_str() : "rank mean",
                    topo::to_string(static_cast<topo::Exposure>(worst)), 100 * st.exposed_s[worst] / p.step_s);
    std::printf("%8d %9lld %10.0f %6.1f%% %7.3g  %-*s %s\n", pt.devices, pt.global_batch, pt.tokens_per_s_per_device(),
                100 * p.mfu, p.step_s, split_width,
                (wide ? topo::split_label(p.split) : models::compact_label(p.split)).c_str(), detail);
  }
}

const char* kAbout =
    "MFU and tokens/s per device against device count, one line per hardware\n"
    "generation (topology), the best split at every point (every split `ibt project --all`\n"
    "searches: tp <= domain size, 1f1b and interleaved v=2, recompute none/selective/full,\n"
    "ZeRO-1 on/off, sequence parallelism when tp > 1), with its step-time breakdown (the\n"
    "bottleneck pipeline stage: the busiest, least idle one).\n\n"
    "Strong scaling keeps the global batch fixed; weak scaling keeps the batch per device\n"
    "fixed (global batch = devices x --sequences-per-device; default: the first point's).\n"
    "MFU = model FLOPs / (step time x devices x peak of --dtype); model FLOPs are 6N (active\n"
    "parameters) + full-sequence attention, no recompute (models/plan/accounting.hpp).\n\n"
    "Generations are compared by speed: MFU is a share of each system's own peak, so a newer\n"
    "one can be much faster at a lower MFU. The closing table gives per system (slowest first)\n"
    "tokens/s per device, the speed-up over --baseline at the same device count, the days to\n"
    "train --token-budget tokens, MFU, and J/token where the catalog gives the device's board\n"
    "power (devices only: no hosts, network or cooling).\n";

// The parsed command line.
struct ScalingArgs {
  std::string model_name, topologies, gpus_text, mode_text = "strong", dtype, out, baseline, stack;
  long long seq_len = topo::kSeqLenOfModel;  // --seq-len
  double token_budget = 1e12;
  std::vector<std::string> measured;
  long long global_batch = -1, global_batch_tokens = 16LL * 1024 * 1024;
  double per_device = 0, memory_fraction = 0.9;
  bool per_device_given = false;  // --sequences-per-device on the command line
  bool wide = false;              // --wide: full split labels, reasons on one line
};

po::options_description scaling_options(ScalingArgs& a) {
  po::options_description opts("options");
  opts.add_options()("help,h", "show this help")("model", po::value(&a.model_name),
                                                 "model: catalog name (models/catalog) or a .json path")(
      "topology", po::value(&a.topologies),
      "comma list of topologies (catalog names or .json paths), one line each: e.g. dgx-a100,dgx-h100,dgx-b200")(
      "gpus", po::value(&a.gpus_text), "comma list of device counts, e.g. 512,1024,2048")(
      "scaling", po::value(&a.mode_text)->default_value(a.mode_text),
      "strong (fixed global batch) or weak (fixed batch per device)")(
      "global-batch", po::value(&a.global_batch),
      "strong: global batch in sequences (overrides --global-batch-tokens)")(
      "global-batch-tokens", po::value(&a.global_batch_tokens)->default_value(a.global_batch_tokens),
      "strong: global batch in tokens (divided by the model's sequence length); weak: the first point's")(
      "sequences-per-device", po::value(&a.per_device), "weak: sequences per device per step")(
      "dtype", po::value(&a.dtype), "compute dtype the peak and MFU refer to (default bf16, else fp32)")(
      "memory-fraction", double_value(&a.memory_fraction), "usable fraction of device memory")(
      "stack", po::value(&a.stack),
      "software stack (topologies/stacks name or .json path) instead of the topologies' fitted efficiency "
      "(ibt project --help; default: none)")("seq-len", po::value(&a.seq_len),
                                             "tokens per sequence instead of the model file's seq_len")(
      "baseline", po::value(&a.baseline), "topology the speed-ups are against (default: the first --topology)")(
      "token-budget", double_value(&a.token_budget)->default_value(a.token_budget, "1e12"),
      "tokens to train, for the days-to-train column")(
      "measured", po::value(&a.measured)->composing(),
      "HDF5 file with `ibt train`/`ibt sweep` runs of the model: their points join the table as "
      "source 'measured' (repeatable)")("out", po::value(&a.out),
                                        "HDF5 results file to append a run of kind 'scaling' to");
  add_wide_option(opts, &a.wide, "full split labels, an infeasible point's reason on one line");
  return opts;
}

// Parses argv into `a`; false when --help was asked for (and printed).
bool parse_scaling_args(int argc, char** argv, ScalingArgs& a) {
  const po::options_description opts = scaling_options(a);
  po::variables_map vm;
  if (!parse_command_line(argc, argv, opts, vm)) {
    print_help(std::cout, "ibt scaling --model M --topology T[,T2...] --gpus N[,N2...] [options]", kAbout, opts,
               {"ibt scaling --model llama3-70b --topology dgx-a100,dgx-h100,dgx-b200 --gpus 512,1024,2048,4096",
                "ibt scaling --model gpt3-175b --topology dgx-h100 --gpus 384,768,1536 --scaling weak "
                "--sequences-per-device 2 --out scaling.h5",
                "ibt scaling --model tiny-dense --topology local-cpu --gpus 1,2,4 --measured sweep.h5"});
    return false;
  }
  a.per_device_given = vm.count("sequences-per-device") > 0;
  return true;
}

// The device counts and the scaling mode, every flag checked before anything is loaded.
struct ScalingAxis {
  std::vector<int> gpus;
  topo::ScalingMode mode;
};

ScalingAxis check_scaling_args(const ScalingArgs& a) {
  if (a.model_name.empty()) throw UsageError("--model is required");
  if (a.topologies.empty()) throw UsageError("--topology is required (a comma list of topologies)");
  if (a.gpus_text.empty()) throw UsageError("--gpus is required (a comma list of device counts)");
  ScalingAxis axis{parse_positive_list<int>(a.gpus_text, "--gpus"), topo::parse_scaling_mode(a.mode_text)};
  if (!(a.memory_fraction > 0 && a.memory_fraction <= 1)) throw UsageError("--memory-fraction must be in (0, 1]");
  if (a.global_batch == 0) throw UsageError("--global-batch must be positive (got 0): the global batch in sequences");
  if (a.global_batch_tokens <= 0)
    throw UsageError("--global-batch-tokens must be positive (got " + std::to_string(a.global_batch_tokens) + ")");
  if (a.per_device_given && !(a.per_device > 0)) throw UsageError("--sequences-per-device must be positive");
  if (!(a.token_budget > 0 && std::isfinite(a.token_budget)))
    throw UsageError("--token-budget must be a positive number of tokens");
  if (a.per_device_given && axis.mode != topo::ScalingMode::weak)
    throw UsageError("--sequences-per-device applies to --scaling weak only (strong scaling fixes the global batch)");
  if (!a.out.empty()) store::check_appendable(a.out);
  return axis;
}

// The batch at every point; a weak-scaling batch that is not whole is refused before any work.
topo::ScalingBatch scaling_batch(const ScalingArgs& a, const ScalingAxis& axis, const models::ModelConfig& model) {
  topo::ScalingBatch batch;
  batch.mode = axis.mode;
  batch.global_batch =
      a.global_batch > 0 ? a.global_batch : std::max<long long>(1, a.global_batch_tokens / model.seq_len);
  batch.sequences_per_device = a.per_device > 0
                                   ? a.per_device
                                   : static_cast<double>(batch.global_batch) / static_cast<double>(axis.gpus.front());
  for (const int n : axis.gpus)
    require_search_memory(batch.at(n), n, model.layers, 2, 1,
                          axis.mode == topo::ScalingMode::weak
                              ? "--sequences-per-device (" + std::to_string(batch.at(n)) + " sequences on " +
                                    std::to_string(n) + " devices)"
                              : "--global-batch " + std::to_string(batch.global_batch));
  return batch;
}

void record_scaling_attrs(RunRecorder& recorder, const ScalingArgs& a, const models::ModelConfig& model,
                          const topo::ScalingBatch& batch, int argc, char** argv) {
  recorder.set_attr("command_line", joined_command_line(argc, argv));
  recorder.set_attr("ibt_version", std::string(kVersion));
  recorder.set_attr("git_commit", std::string(kGitCommit));
  recorder.set_attr("model", model.name);
  recorder.set_attr("model_json", topo::model_file_text(a.model_name));
  recorder.set_attr("topology", a.topologies);
  recorder.set_attr("backend", std::string("sim"));
  recorder.set_attr("scaling", std::string(topo::to_string(batch.mode)));
  if (!a.stack.empty()) recorder.set_attr("stack", a.stack);
  if (a.seq_len != topo::kSeqLenOfModel) recorder.set_attr("seq_len", static_cast<std::int64_t>(model.seq_len));
  if (batch.mode == topo::ScalingMode::strong)
    recorder.set_attr("global_batch", static_cast<std::int64_t>(batch.global_batch));
  else
    recorder.set_attr("sequences_per_device", batch.sequences_per_device);
  recorder.set_attr(
      "conventions",
      std::string("MFU = model FLOPs per step / (step time x devices x peak of the dtype), as a "
                  "fraction; model FLOPs = 6 x matmul-active parameters + full-sequence attention "
                  "(models/plan/accounting.hpp); breakdown of the bottleneck stage (projections) or means "
                  "over ranks (measured)"));
}

void print_scaling_header(const models::ModelConfig& model, const topo::ScalingBatch& batch, size_t systems,
                          size_t device_counts) {
  std::printf("ibt scaling: %s, %s scaling (%s), %zu topolog%s x %zu device counts\n", model.name.c_str(),
              topo::to_string(batch.mode),
              batch.mode == topo::ScalingMode::strong
                  ? ("global batch " + std::to_string(batch.global_batch) + " sequences x " +
                     std::to_string(model.seq_len) + " tokens")
                        .c_str()
                  : ("batch " + std::to_string(batch.sequences_per_device) + " sequences per device").c_str(),
              systems, systems == 1 ? "y" : "ies", device_counts);
}

// Prints a block of points, stores them and adds them to `all`.
void take_points(std::vector<topo::ScalingPoint> points, const std::string& model, topo::ScalingMode mode,
                 const GenerationContext& generations, RunRecorder& recorder, std::vector<topo::ScalingPoint>& all,
                 bool wide) {
  print_points(points, wide);
  const std::size_t first = all.size();
  for (auto& pt : points) all.push_back(std::move(pt));
  // The baseline projects first, so every later point finds its baseline in `all`.
  for (std::size_t i = first; i < all.size(); ++i) recorder.append(scaling_row(all[i], model, mode, all, generations));
}

// The projected points, one block per topology.
topo::ProjectionFlags scaling_flags(const ScalingArgs& a) {
  topo::ProjectionFlags f;  // scaling has no framework flag: the default profile
  f.model = a.model_name;
  f.dtype = a.dtype;
  f.memory_fraction = a.memory_fraction;
  f.stack = a.stack;
  f.seq_len = a.seq_len;
  return f;
}

// A device count that leaves a scale-up domain part-filled (1,024 GPUs on 72-GPU NVL72
// racks: 14 racks and 16 GPUs of a 15th) is said once per system: its last domain's
// traffic crosses the network more than the domain size suggests, and the rack is bought whole.
void print_partial_domains(const topo::Topology& topology, const std::vector<int>& gpus, bool wide) {
  std::string notes;
  for (const int n : gpus) {
    const std::string note = topo::domain_fit_note(n, topology.domain_size());
    if (!note.empty()) notes += (notes.empty() ? "" : "; ") + note;
  }
  if (notes.empty()) return;
  std::printf("%s", wrap_lines("  partial domains: " + notes + "\n", wide ? 0 : kReportColumns, 4).c_str());
}

void project_systems(const std::vector<topo::Topology>& systems, const ScalingArgs& a, const ScalingAxis& axis,
                     const models::ModelConfig& model, const std::optional<topo::SoftwareStack>& stack,
                     const topo::ScalingBatch& batch, const GenerationContext& generations, RunRecorder& recorder,
                     std::vector<topo::ScalingPoint>& all) {
  for (const auto& system : systems) {
    topo::Topology topology = system;  // a stack replaces its efficiencies
    const topo::ProjectionOptions options = topo::projection_options(model, topology, scaling_flags(a), stack);
    std::printf("\n%s: %s, %d per scale-up domain, MFU against %s peak\n", topology.name.c_str(),
                topology.device.name.c_str(), topology.domain_size(), options.dtype.c_str());
    if (stack) std::printf("%s", topo::describe_stack(*stack, model, topology).c_str());
    print_partial_domains(topology, axis.gpus, a.wide);
    take_points(topo::project_scaling(model, topology, axis.gpus, batch, options), model.name, axis.mode, generations,
                recorder, all, a.wide);
  }
}

// The baseline (moved to the front of `systems`, so it projects first), the token budget
// and each system's board power.
GenerationContext generation_context(const ScalingArgs& a, std::vector<topo::Topology>& systems) {
  GenerationContext g;
  g.token_budget = a.token_budget;
  g.baseline = a.baseline.empty() ? systems.front().name : a.baseline;
  const auto it = std::find_if(systems.begin(), systems.end(), [&](const auto& t) { return t.name == g.baseline; });
  if (it == systems.end())
    throw UsageError("--baseline " + a.baseline + " is not one of the --topology systems (" + a.topologies + ")");
  std::rotate(systems.begin(), it, it + 1);
  for (const auto& t : systems)
    if (t.device.power_W.known()) g.power_W[t.name] = t.device.power_W.get();
  return g;
}

// The measured points of each --measured file, read before anything is projected: a file
// with no run of the model is an error (exit 2), not a line among the results.
std::vector<std::pair<std::string, std::vector<topo::ScalingPoint>>> read_measured(const ScalingArgs& a,
                                                                                   const models::ModelConfig& model) {
  std::vector<std::pair<std::string, std::vector<topo::ScalingPoint>>> out;
  for (const auto& path : a.measured) {
    auto points = topo::measured_scaling(path, model);
    if (points.empty())
      throw UsageError("--measured " + path + ": no complete `ibt train` or imported run of " + model.name +
                       " in it (is --model the model that file trained?)");
    out.emplace_back(path, std::move(points));
  }
  return out;
}

// The system a measured point is compared on: the --topology whose device the run names
// (an imported or cuda run's GPU), else the baseline (the first --topology).
const topo::Topology& own_split_system(const topo::ScalingPoint& pt, const std::vector<topo::Topology>& systems,
                                       const GenerationContext& generations) {
  for (const auto& t : systems)
    if (!pt.system.empty() && t.device.name == pt.system) return t;
  for (const auto& t : systems)
    if (t.name == generations.baseline) return t;
  return systems.front();
}

// Each measured point beside the projection of its own split, not the best one: the
// like-for-like figure (the best split's MFU answers another question).
void print_own_splits(const std::vector<topo::ScalingPoint>& points, bool wide) {
  std::string out = "measured against the projection of its own split (as ibt project-compare prices it):\n";
  for (const auto& pt : points) {
    char line[512];
    if (pt.own_split_mfu > 0)
      std::snprintf(line, sizeof line,
                    "  %d device(s), %s: measured MFU %.1f%%, its split projected on %s %.1f%% (%+.1f%%)\n", pt.devices,
                    models::compact_label(pt.best.split).c_str(), 100 * pt.best.mfu, pt.own_split_topology.c_str(),
                    100 * pt.own_split_mfu, 100 * (pt.best.mfu / pt.own_split_mfu - 1));
    else
      std::snprintf(line, sizeof line, "  %d device(s), %s: its split does not project on %s: %s\n", pt.devices,
                    models::compact_label(pt.best.split).c_str(), pt.own_split_topology.c_str(),
                    pt.own_split_note.c_str());
    out += line;
  }
  std::printf("%s", wrap_lines(out, report_width(wide)).c_str());
}

void add_measured(std::vector<std::pair<std::string, std::vector<topo::ScalingPoint>>> measured, const ScalingArgs& a,
                  const models::ModelConfig& model, topo::ScalingMode mode, const GenerationContext& generations,
                  const std::vector<topo::Topology>& systems, RunRecorder& recorder,
                  std::vector<topo::ScalingPoint>& all) {
  for (auto& [path, points] : measured) {
    std::printf("\nmeasured (%s): %zu point(s) of %s (fastest timed step of each run; the best run per size)\n",
                path.c_str(), points.size(), model.name.c_str());
    // Why this figure is not the median step that train, sweep and the report show.
    std::printf(
        "  the fastest step, as calibration fits it: interference only adds time; train, sweep and the\n"
        "  report show the same run's median step, so their MFU reads lower\n");
    for (auto& pt : points) topo::price_own_split(pt, model, own_split_system(pt, systems, generations));
    std::vector<topo::ScalingPoint> shown = points;
    take_points(std::move(points), model.name, mode, generations, recorder, all, a.wide);
    print_own_splits(shown, a.wide);
  }
}

}  // namespace

int scaling_main(int argc, char** argv) {
  ScalingArgs a;
  if (!parse_scaling_args(argc, argv, a)) return kExitOk;
  const ScalingAxis axis = check_scaling_args(a);
  const models::ModelConfig model = topo::load_projection_model(scaling_flags(a));
  const std::optional<topo::SoftwareStack> stack = topo::load_projection_stack(scaling_flags(a));
  std::vector<topo::Topology> systems;
  for (const auto& name : parse_list_of_names(a.topologies, "--topology")) systems.push_back(topo::load_topology(name));
  const GenerationContext generations = generation_context(a, systems);
  const topo::ScalingBatch batch = scaling_batch(a, axis, model);
  auto measured = read_measured(a, model);

  RunRecorder recorder(a.out, "scaling");
  record_scaling_attrs(recorder, a, model, batch, argc, argv);
  print_scaling_header(model, batch, systems.size(), axis.gpus.size());
  topo::keep_freed_memory_for_reuse();
  std::vector<topo::ScalingPoint> all;
  project_systems(systems, a, axis, model, stack, batch, generations, recorder, all);
  add_measured(std::move(measured), a, model, axis.mode, generations, systems, recorder, all);
  print_generation_speed(all, generations);
  recorder.finish(store::RunStatus::complete);
  if (recorder.active()) std::printf("run %s written to %s\n", recorder.run_id().c_str(), a.out.c_str());
  return kExitOk;
}

}  // namespace ibt::suites
