// ibt project: projected step time, MFU, breakdown and memory of a model on a topology,
// for one split or (--all) every valid split, ranked. The sim executor prices the same
// step programs the cpu and cuda executors run (design.md, "One schedule, several
// executors").
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <limits>
#include <optional>

#include "cli/cli.hpp"
#include "cli/commands.hpp"
#include "cli/failure_flags.hpp"
#include "cli/split_flags.hpp"
#include "cli/zero_flags.hpp"
#include "collectives/runtime/run_recorder.hpp"
#include "core/errors.hpp"
#include "core/progress.hpp"
#include "core/text_wrap.hpp"
#include "ibt/version.hpp"
#include "models/plan/model_file.hpp"
#include "models/plan/parallel_split.hpp"
#include "models/plan/schedule.hpp"
#include "topologies/hardware/topology.hpp"
#include "topologies/projection/projection.hpp"
#include "topologies/projection/projection_goodput.hpp"
#include "topologies/projection/projection_report.hpp"
#include "topologies/projection/projection_setup.hpp"
#include "topologies/sim/sim_pricer.hpp"

namespace ibt::suites {
namespace {

namespace po = boost::program_options;

struct ProjectArgs {
  std::string model, topology, recompute = "none", dtype, out, rank_by = "mfu";
  std::string framework = "ibt", stack;
  bool framework_given = false;
  long long seq_len = topo::kSeqLenOfModel;  // --seq-len
  long gpus = -1;                            // -1: not given
  SplitFlags<long> split;
  GlobalBatchFlags batch;
  ZeroFlags zero;
  bool sp = false, no_sp = false, all = false, no_overlap = false, fp8 = false;
  long top = 20;
  int jobs = 1;
  double memory_fraction = 0.9;
  bool cp_given = false;  // --cp on the command line (with --all: the largest CP degree searched)
  topo::FailureOverrides failure;
  bool full_assumptions = false;
  bool wide = false;  // --wide: full split labels, notes unwrapped
};

const char* kConventions =
    "MFU = model FLOPs per step / (step time x devices x peak FLOP/s of --dtype); model FLOPs "
    "= 6 x matmul-active parameters + full-sequence attention per token (causal masking not "
    "discounted, recompute not counted; models/plan/accounting.hpp). HFU adds recompute. Memory: "
    "bf16 mixed-precision Adam (fp32 Adam when --dtype fp32), 16 bytes per parameter before ZeRO (ZeRO-1 4 + 12/d, "
    "ZeRO-2 2 + 14/d, ZeRO-3 16/d, plus ZeRO-2/3 unit buffers; d = dp or the HSDP shard group), activations "
    "saved by a Llama-style block (no dropout, fused attention; Korthikanti et al. 2022 without dropout for GPT) x the "
    "chunks the schedule holds in flight; a split above the usable memory fraction is infeasible.";

const char* kAbout =
    "Projects a training step of a model on a topology with the sim executor.\n"
    "Prints step time, MFU and HFU, the breakdown (compute, exposed communication per group,\n"
    "pipeline bubble) and memory per device. --all searches every valid split (tp <= domain\n"
    "size, micro batch 1/2/4, 1f1b, interleaved v = 2/4/8 and zb-h1, recompute none/selective/full,\n"
    "ZeRO-1 on/off, sequence parallelism when tp > 1, context parallelism up to --cp (default\n"
    "16) with all_gather and ring attention; without PP also ZeRO-2, ZeRO-3 (FSDP, also at\n"
    "micro-batch sizes 2-16) and HSDP sharded inside one scale-up domain) at the global batch\n"
    "and ranks them, each labelled with its strategy (ddp, zero1, zero2, fsdp, hsdp8, then\n"
    "tpN cpN ppN epN). A single split that does not fit in memory is still priced: DOES NOT\n"
    "FIT says by how much, the step time follows.\n\n"
    "Conventions: MFU = model FLOPs / (step time x devices x peak of --dtype); model FLOPs are\n"
    "6N (active parameters) + full-sequence attention, no recompute; HFU counts recompute.\n"
    "Goodput: from a per-node failure rate, the checkpoint size and write bandwidth and the\n"
    "restart time (flags below, or the topology's reliability section), the optimal checkpoint\n"
    "interval (Young 1974, Daly 2006) and goodput = useful compute / wall time counting\n"
    "checkpoints, lost work and restarts; printed with goodput-adjusted MFU and the assumptions.\n";

// A split flag as the int the split holds: larger values are refused, never wrapped.
int int_flag(long long value, const char* flag) {
  if (value > std::numeric_limits<int>::max())
    throw UsageError(std::string(flag) + " " + std::to_string(value) + " is out of range (at most " +
                     std::to_string(std::numeric_limits<int>::max()) + ")");
  return static_cast<int>(value);
}

// The split of a single projection (no --all), checked before any run is recorded.
models::ParallelSplit single_split(const ProjectArgs& a, long long global_batch) {
  const SplitFlags<long>& f = a.split;
  models::ParallelSplit s;
  s.tp = int_flag(f.tp, "--tp");
  s.pp = int_flag(f.pp, "--pp");
  s.ep = int_flag(f.ep, "--ep");
  s.cp = int_flag(f.cp, "--cp");
  s.cp_comm = models::parse_cp_comm(f.cp_comm);
  require_positive(f.tp, "--tp");
  require_positive(f.pp, "--pp");
  require_positive(f.ep, "--ep");
  require_positive(f.cp, "--cp");
  if (static_cast<double>(f.tp) * f.pp * f.cp > static_cast<double>(a.gpus))
    throw UsageError("tp*pp*cp (" + std::to_string(f.tp) + " x " + std::to_string(f.pp) + " x " + std::to_string(f.cp) +
                     ") is more than --gpus (" + std::to_string(a.gpus) + ")");
  if (a.gpus % (f.tp * f.pp * f.cp) != 0)
    throw UsageError("--gpus (" + std::to_string(a.gpus) + ") is not divisible by tp*pp*cp (" +
                     std::to_string(f.tp * f.pp * f.cp) + ")");
  s.dp = f.dp > 0 ? int_flag(f.dp, "--dp") : static_cast<int>(a.gpus / (f.tp * f.pp * f.cp));
  s.schedule = models::parse_schedule(f.schedule);
  s.vpp =
      f.vpp > 0
          ? int_flag(f.vpp, "--vpp")
          : (s.schedule == models::ScheduleKind::interleaved || s.schedule == models::ScheduleKind::dualpipev ? 2 : 1);
  s.micro_batch_size = int_flag(f.micro_batch_size, "--micro-batch-size");
  require_positive(f.micro_batch_size, "--micro-batch-size");
  if (f.microbatches > 0) {
    s.microbatches = int_flag(f.microbatches, "--microbatches");
  } else {
    const long long per = static_cast<long long>(s.dp) * s.micro_batch_size;
    if (global_batch % per != 0)
      throw UsageError("global batch " + std::to_string(global_batch) + " is not divisible by dp*mbs (" +
                       std::to_string(per) + "); give --microbatches or --global-batch");
    s.microbatches = int_flag(global_batch / per, "--global-batch / (dp x micro-batch size) microbatches");
  }
  s.recompute = models::parse_recompute(a.recompute);
  apply_zero_flags(a.zero, s);
  if (a.sp && a.no_sp) throw UsageError("--sp and --no-sp contradict each other");
  s.sequence_parallel = s.tp > 1 && !a.no_sp;
  return s;
}

po::options_description project_options(ProjectArgs& a, po::options_description& old_spellings) {
  po::options_description opts("options");
  opts.add_options()("help,h", "show this help")(
      "model", po::value(&a.model),
      "model: catalog name (models/catalog: llama3-405b, deepseek-v3, ...) or a .json path")(
      "topology", po::value(&a.topology),
      "topology: catalog name (dgx-a100, dgx-h100, dgx-h200, dgx-b200, gb200-nvl72, tpu-v4, tpu-v5p, local-cpu) or a "
      ".json path (e.g. from ibt calibrate)")("gpus", po::value(&a.gpus), "number of devices");
  add_split_options(opts, a.split, SplitFlagsFor::projection);
  add_global_batch_options(opts, a.batch);
  opts.add_options()("recompute", po::value(&a.recompute)->default_value(a.recompute), "none, selective or full")(
      "sp", po::bool_switch(&a.sp), "sequence parallelism (needs tp > 1; default on when tp > 1)")(
      "no-sp", po::bool_switch(&a.no_sp), "no sequence parallelism")(
      "dtype", po::value(&a.dtype),
      "compute dtype the peak and MFU refer to: fp32, tf32, bf16, fp8 (default bf16, else fp32)")(
      "framework", po::value(&a.framework)->default_value(a.framework),
      "what the training framework overlaps and fuses: megatron-core (flash attention, grad-reduce and TP comm "
      "overlap), megatron-2021 (unfused attention, no overlap), maxtext (fused attention, collective matmul), "
      "ibt (fused attention, grad-reduce overlap only); topologies/projection/framework.hpp cites each")(
      "stack", po::value(&a.stack),
      "software stack: megatron-core, pytorch-fsdp2 (topologies/stacks) or a .json path: its measured GEMM "
      "efficiency, attention kernel by sequence length and overlaps per device generation replace the topology's "
      "fitted efficiency and --framework (default: none, the topology's figures and --framework)")(
      "seq-len", po::value(&a.seq_len), "tokens per sequence instead of the model file's seq_len")(
      "fp8", po::bool_switch(&a.fp8),
      "linear-layer GEMMs in fp8 at the fp8 peak with their casts (Transformer Engine); MFU stays against --dtype's "
      "peak")("no-overlap", po::bool_switch(&a.no_overlap),
              "gradient reduction after the backward pass instead of overlapping it")(
      "memory-fraction", double_value(&a.memory_fraction), "usable fraction of device memory")(
      "all", po::bool_switch(&a.all), "search every valid split and rank them")(
      "jobs,j", po::value(&a.jobs)->default_value(a.jobs),
      "with --all: threads projecting the splits (the ranking is the same for any count; 0 = all cores)")(
      "top", po::value(&a.top)->default_value(a.top),
      "with --all: rows to print (0 = all); ranked by MFU, only splits that can make these rows are priced, the others "
      "are counted with their step-time lower bound (0 prices every split)")(
      "rank-by", po::value(&a.rank_by)->default_value(a.rank_by),
      "with --all: rank by mfu or goodput (goodput-adjusted MFU = MFU x goodput; needs the failure figures)")(
      "out", po::value(&a.out), "HDF5 results file to append a run of kind 'projection' to");
  add_wide_option(opts, &a.wide, "full split labels and the ranking's strategy column");
  suites::add_failure_options(opts);
  po::options_description zero_opts("Sharded data parallelism (one split; with --all: comma lists to search)");
  old_spellings.add_options()("mbs", po::value<long>());
  add_zero_options(zero_opts, old_spellings, a.zero, false);
  opts.add(zero_opts);
  return opts;
}

// Parses argv into `a`; false when --help was asked for (and printed).
bool parse_project_args(int argc, char** argv, ProjectArgs& a) {
  po::options_description old_spellings;  // kept for one release, not in --help
  const po::options_description opts = project_options(a, old_spellings);
  po::variables_map vm;
  if (!parse_command_line(argc, argv, opts, vm, nullptr, "", &old_spellings)) {
    print_help(std::cout, "ibt project --model M --topology T --gpus N [split options | --all] [--out FILE.h5]", kAbout,
               opts,
               {"ibt project --model llama3-405b --topology dgx-h100 --gpus 8192 --all",
                "ibt project --model llama3-70b --topology dgx-b200 --gpus 1024 --tp 8 --pp 4 --micro-batch-size 1 "
                "--out proj.h5"});
    return false;
  }
  take_alias(vm, "mbs", "micro-batch-size", a.split.micro_batch_size);
  a.cp_given = !vm["cp"].defaulted();
  a.framework_given = !vm["framework"].defaulted();
  a.failure = failure_overrides(vm);
  a.full_assumptions = wants_full_assumptions(vm);
  return true;
}

void check_project_args(const ProjectArgs& a) {
  if (a.model.empty()) throw UsageError("--model is required");
  if (a.topology.empty()) throw UsageError("--topology is required");
  require_given_positive(a.gpus, "--gpus", "the number of devices, e.g. --gpus 1024");
  int_flag(a.gpus, "--gpus");
  if (!(a.memory_fraction > 0 && a.memory_fraction <= 1)) throw UsageError("--memory-fraction must be in (0, 1]");
  if (!a.out.empty()) store::check_appendable(a.out);
}

// What the projection runs with (topologies/projection/projection_setup.hpp) and the
// global batch in sequences.
struct ProjectSetup : topo::ProjectionSetup {
  long long global_batch = 0;
};

ProjectSetup load_project_setup(const ProjectArgs& a) {
  topo::ProjectionFlags f;
  f.model = a.model;
  f.topology = a.topology;
  f.dtype = a.dtype;
  f.framework = a.framework;
  f.framework_given = a.framework_given;
  f.stack = a.stack;
  f.seq_len = a.seq_len;
  f.rank_by = a.rank_by;
  f.no_overlap = a.no_overlap;
  f.fp8 = a.fp8;
  f.memory_fraction = a.memory_fraction;
  f.keep_sim = !a.all;
  f.failure = a.failure;
  ProjectSetup s{topo::load_projection_setup(f), 0};
  s.global_batch = a.batch.in_sequences(s.model.seq_len);
  return s;
}

// The one split of a projection without --all, with everything it could refuse checked
// before its run is opened; --microbatches fixes the global batch (setup.global_batch).
models::ParallelSplit checked_single_split(const ProjectArgs& a, ProjectSetup& setup) {
  models::ParallelSplit single = single_split(a, setup.global_batch);
  if (a.split.microbatches > 0) {
    // --microbatches fixes the batch: dp x microbatches x micro-batch size sequences. The
    // header and the stored run must say that batch, not the default --global-batch-tokens.
    const long long implied = static_cast<long long>(single.dp) * single.microbatches * single.micro_batch_size;
    if (a.batch.given() && implied != setup.global_batch)
      throw UsageError("--microbatches " + std::to_string(single.microbatches) + " x --micro-batch-size " +
                       std::to_string(single.micro_batch_size) + " x dp " + std::to_string(single.dp) + " is " +
                       std::to_string(implied) + " sequences, but the global batch asked for is " +
                       std::to_string(setup.global_batch) + ": give one of them");
    setup.global_batch = implied;
  }
  topo::require_projection_memory(setup.model, single, setup.options);  // before the schedule is built
  return single;
}

void record_projection_attrs(RunRecorder& recorder, const ProjectArgs& a, const ProjectSetup& s, int argc,
                             char** argv) {
  recorder.set_attr("command_line", joined_command_line(argc, argv));
  recorder.set_attr("ibt_version", std::string(kVersion));
  recorder.set_attr("git_commit", std::string(kGitCommit));
  recorder.set_attr("model", s.model.name);
  recorder.set_attr("model_json", topo::model_file_text(a.model));
  recorder.set_attr("topology", s.topology.name);
  recorder.set_attr("topology_json", topo::to_json(s.topology));
  recorder.set_attr("world_size", static_cast<std::int64_t>(a.gpus));
  recorder.set_attr("backend", std::string("sim"));
  recorder.set_attr("dtype", s.options.dtype);
  recorder.set_attr("framework", s.stack ? s.stack->framework : a.framework);
  if (s.stack) recorder.set_attr("stack", s.stack->name);
  if (a.seq_len != topo::kSeqLenOfModel) recorder.set_attr("seq_len", static_cast<std::int64_t>(s.model.seq_len));
  recorder.set_attr("global_batch", static_cast<std::int64_t>(s.global_batch));
  recorder.set_attr("conventions", std::string(kConventions));
  recorder.set_attr("failure_assumptions", topo::describe_assumptions(s.failure));
  recorder.set_attr("rank_by", std::string(topo::to_string(s.rank_by)));
}

// --all: every valid split projected, ranked, the top printed, all of them recorded.
void project_every_split(const ProjectArgs& a, const ProjectSetup& s, RunRecorder& recorder) {
  topo::keep_freed_memory_for_reuse();
  models::SplitSearch search = topo::default_search(s.topology, s.global_batch);
  apply_zero_flags(a.zero, search);
  if (a.cp_given) {
    require_positive(a.split.cp, "--cp");
    search.max_cp = static_cast<int>(a.split.cp);
  }
  Progress progress("project --all: splits", 0);
  topo::SearchRun run;
  run.jobs = resolve_jobs(a.jobs);
  run.progress = [&](size_t done, size_t total) { progress.set(done, total); };
  // A top list by MFU (step time) needs only the top splits priced (branch and bound,
  // projection.hpp); by goodput, or with --top 0, every split is.
  if (s.rank_by == topo::RankBy::mfu && a.top > 0) run.keep_best = static_cast<size_t>(a.top);
  auto ranked = topo::project_all(s.model, s.topology, static_cast<int>(a.gpus), search, s.options, run);
  progress.finish();
  for (auto& p : ranked) topo::add_goodput(p, s.model, s.options, s.failure);
  topo::rank_projections(ranked, s.rank_by);
  std::printf("ranked by %s\n", topo::to_string(s.rank_by));
  if (ranked.empty())
    throw UsageError("no valid split of " + s.model.name + " on " + std::to_string(a.gpus) +
                     " devices at global batch " + std::to_string(s.global_batch));
  std::printf("%s", topo::ranking_table(ranked, static_cast<size_t>(a.top), a.wide).c_str());
  if (recorder.active())  // 10^5 rows: made only when recorded
    for (const auto& p : ranked) recorder.append(topo::projection_row(p));
  if (ranked.front().feasible)
    std::printf("\nbest:\n%s", wrap_lines(topo::describe_projection(ranked.front(), s.options.dtype) +
                                              topo::describe_goodput(ranked.front().goodput),
                                          report_width(a.wide))
                                   .c_str());
}

// One split: its projection printed and recorded with its per-stage rows.
void project_one_split(const models::ParallelSplit& split, const ProjectSetup& s, RunRecorder& recorder, bool wide) {
  topo::Projection p = topo::project(s.model, s.topology, split, s.options);
  topo::add_goodput(p, s.model, s.options, s.failure);
  std::printf("%s", wrap_lines(topo::describe_projection(p, s.options.dtype) + topo::describe_goodput(p.goodput),
                               report_width(wide))
                        .c_str());
  recorder.append(topo::projection_row(p));
  for (const auto& row : topo::projection_stage_rows(p)) recorder.append(row);
}

}  // namespace

int project_main(int argc, char** argv) {
  ProjectArgs a;
  if (!parse_project_args(argc, argv, a)) return kExitOk;
  check_project_args(a);
  ProjectSetup setup = load_project_setup(a);
  std::optional<models::ParallelSplit> single;
  if (!a.all) single = checked_single_split(a, setup);
  if (a.all)
    require_search_memory(setup.global_batch, a.gpus, setup.model.layers, 2, resolve_jobs(a.jobs),
                          "--global-batch " + std::to_string(setup.global_batch));

  RunRecorder recorder(a.out, "projection");
  record_projection_attrs(recorder, a, setup, argc, argv);
  std::printf("ibt project: %s on %d x %s (%s), global batch %lld sequences x %d tokens\n", setup.model.name.c_str(),
              static_cast<int>(a.gpus), setup.topology.name.c_str(), setup.topology.device.name.c_str(),
              setup.global_batch, setup.model.seq_len);
  if (setup.stack) std::printf("%s", topo::describe_stack(*setup.stack, setup.model, setup.topology).c_str());
  if (a.all)
    project_every_split(a, setup, recorder);
  else
    project_one_split(*single, setup, recorder, a.wide);
  const std::string notes = (a.full_assumptions ? topo::describe_assumptions(setup.failure)
                                                : topo::describe_assumptions_brief(setup.failure)) +
                            "conventions: " + kConventions + "\n";
  std::printf("%s", wrap_lines(notes, report_width(a.wide)).c_str());
  recorder.finish(store::RunStatus::complete);
  if (recorder.active()) std::printf("run %s written to %s\n", recorder.run_id().c_str(), a.out.c_str());
  return kExitOk;
}

}  // namespace ibt::suites
