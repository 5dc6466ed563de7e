// ibt crossover: sweep a grid of fabrics (scale-up domain size x scale-out bandwidth) and
// report, per cell, the best projected MFU without and with pipeline parallelism, the
// gain, the winning splits, and a one-line verdict (topologies/studies/crossover.hpp).
#include <algorithm>
#include <boost/program_options.hpp>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "cli/commands.hpp"
#include "cli/crossover_atlas.hpp"
#include "cli/failure_flags.hpp"
#include "cli/split_flags.hpp"
#include "cli/zero_flags.hpp"
#include "collectives/runtime/run_recorder.hpp"
#include "core/errors.hpp"
#include "core/progress.hpp"
#include "core/text_table.hpp"
#include "core/text_wrap.hpp"
#include "ibt/version.hpp"
#include "models/plan/model_file.hpp"
#include "topologies/calibration/gain_error.hpp"
#include "topologies/projection/projection_report.hpp"
#include "topologies/projection/projection_setup.hpp"
#include "topologies/sim/sim_pricer.hpp"
#include "topologies/studies/crossover.hpp"
#include "topologies/studies/crossover_table.hpp"
#include "topologies/studies/verdict_reason.hpp"

namespace ibt::suites {
namespace {

namespace po = boost::program_options;

const char* kAbout =
    "When does pipeline parallelism stop being needed? For each cell of a grid of fabrics\n"
    "derived from --topology (devices per scale-up domain x scale-out Gb/s per device; every\n"
    "other figure is the base's), every valid split is projected and the best MFU with\n"
    "PP = 1 and with PP > 1 are compared:\n"
    "  gain = MFU(PP>1) / MFU(PP=1) - 1 (printed '-' where one side has no split: the line\n"
    "  below the grid names why, divisibility or memory);\n"
    "  with u the gain's uncertainty (the p80 |projected - measured PP gain|, in points, of the\n"
    "  vTrain groups measured with and without PP on DGX A100, for --topology's kind: catalog,\n"
    "  or calibrated when it carries collective fits; topologies/validation/pp-gain-error.json;\n"
    "  without that file the median out-of-family |MFU error| of its published runs,\n"
    "  topologies/validation/bands.json; 0 without either), a cell is\n"
    "  'PP needed' when gain > --threshold + u (or only PP splits fit), 'PP not needed' when\n"
    "  gain < --threshold - u (or only no-PP splits fit), else 'within uncertainty'; 'nothing\n"
    "  fits' when no split fits. --topology's own fabric (its domain size and scale-out Gb/s)\n"
    "  is priced first: its verdict prints before the grid, and its cell is marked in it.\n\n"
    "Assumptions: the global batch is fixed (--global-batch-tokens / sequence length), micro\n"
    "batch size 1, 2 or 4, microbatches = global batch / (dp x micro batch); searched: 1f1b,\n"
    "interleaved (v = 2, 4, 8) and zb-h1 (zero bubble),\n"
    "recompute none/selective/full, ZeRO-1 on/off, and without PP ZeRO-2, ZeRO-3 (FSDP) and\n"
    "HSDP sharded inside each domain (strategy labels: fsdp, hsdp8, zero1 ...; FSDP/HSDP are\n"
    "no-PP splits), sequence parallelism when tp > 1,\n"
    "context parallelism up to --cp (all_gather and ring; CP splits without PP count as\n"
    "no PP), tp <= domain size; bf16 mixed-precision Adam memory; DP gradient reduction overlapped.\n\n"
    "Goodput: with a failure rate (the flags below or the base topology's reliability section)\n"
    "each cell also shows goodput-adjusted MFU = MFU x goodput (Daly's optimal checkpoint\n"
    "interval; topologies/goodput/failure_model.hpp); --rank-by goodput picks the bests and the gain on it.\n\n"
    "The atlas (--atlas): is PP still needed, model by system? Each cell of the atlas file is a\n"
    "model on a catalog system at a published (or stated) scale and batch; it is one crossover\n"
    "at the system's own domain size and scale-out bandwidth, with the framework the cell names.\n"
    "Per cell: the best split with PP and without (FSDP/HSDP/CP/TP/EP count as no PP), their\n"
    "MFU bands, the gain, the verdict, whether it agrees with published practice, and the part\n"
    "of the step that decides. Takes --threshold, --jobs, --out, --wide; refuses (exit 2) the flags\n"
    "that name a job (--gpus, --model, --topology, --global-batch, --domain-sizes, ...): its cells name theirs.\n\n"
    "Several systems (--topology A,B): each is priced at its own fabric only (no grid), and\n"
    "each answers in one sentence: the verdict, the gain and its uncertainty, and the part\n"
    "of the step that decides it (the largest difference between the two bests' breakdowns;\n"
    "with PP its first stage's, as the search walks it), or why one side has no split (the\n"
    "global batch or model does not divide, or memory); where --gpus does not fill whole\n"
    "domains, it says so.\n";

// The parsed command line.
struct CrossoverArgs {
  std::string model_name, base = "dgx-h100", domains = "8,16,32,64,72,128,256", gbps = "100,200,400,800,1600", out,
                          dtype, rank_by = "mfu", framework = "ibt", stack;
  bool framework_given = false;
  long long seq_len = topo::kSeqLenOfModel;  // --seq-len
  long gpus = -1, max_cp = 16;               // gpus -1: not given
  GlobalBatchFlags batch;
  double threshold = 0.05;
  int jobs = 1;
  bool atlas = false;
  std::string atlas_file, atlas_models, atlas_topologies;
  bool atlas_flags_given = false;  // --atlas-file, --atlas-models or --atlas-topologies
  bool grid_given = false;         // --domain-sizes or --scale-out-Gbps on the command line
  std::string job_flag_given;      // the first flag naming the job (--gpus, --model, ...), for --atlas
  ZeroFlags zero;
  topo::FailureOverrides failure;
  bool full_assumptions = false;
  bool wide = false;  // --wide: full split labels in the grid, notes unwrapped
};

po::options_description crossover_options(CrossoverArgs& a, po::options_description& old_spellings) {
  po::options_description opts("options");
  opts.add_options()("help,h", "show this help")("model", po::value(&a.model_name),
                                                 "model: catalog name or .json path")(
      "gpus", po::value(&a.gpus), "number of devices")("domain-sizes", po::value(&a.domains)->default_value(a.domains),
                                                       "comma list of devices per scale-up domain")(
      "scale-out-Gbps", po::value(&a.gbps)->default_value(a.gbps),
      "comma list of scale-out bandwidths per device, Gb/s (gigabits; GBps is gigabytes)")(
      "topology", po::value(&a.base)->default_value(a.base),
      "topology giving the device and the other figures; a comma list (A,B): each system at its own fabric, "
      "one sentence each, no grid");
  add_global_batch_options(opts, a.batch);
  opts.add_options()(
      "cp", po::value(&a.max_cp)->default_value(a.max_cp),
      "largest context-parallel degree searched (all_gather and ring; where 2*cp divides seq_len; 1 = no CP)")(
      "threshold", double_value(&a.threshold), "relative MFU gain above which PP counts as needed")(
      "dtype", po::value(&a.dtype), "dtype of the peak MFU refers to (default bf16)")(
      "framework", po::value(&a.framework)->default_value(a.framework),
      "megatron-core, megatron-2021, maxtext or ibt: what the framework overlaps and fuses (ibt project --help)")(
      "stack", po::value(&a.stack),
      "software stack (topologies/stacks name or .json path) instead of --framework and the topology's fitted "
      "efficiency (ibt project --help; default: none)")("seq-len", po::value(&a.seq_len),
                                                        "tokens per sequence instead of the model file's seq_len")(
      "rank-by", po::value(&a.rank_by)->default_value(a.rank_by),
      "compare by mfu or goodput: goodput picks the best splits and computes the gain on goodput-adjusted "
      "MFU (MFU x goodput; needs the failure figures below or the base topology's reliability section)")(
      "jobs,j", po::value(&a.jobs)->default_value(a.jobs),
      "threads sweeping the splits (the results are the same for any count; 0 = all cores)")(
      "out", po::value(&a.out), "HDF5 results file to append a run of kind 'crossover' to");
  add_wide_option(opts, &a.wide,
                  "each grid cell's best splits by strategy and full label, the atlas as a Markdown table with its "
                  "sources' references");
  po::options_description atlas_opts("The atlas (--atlas; topologies/studies/atlas.hpp)");
  atlas_opts.add_options()("atlas", po::bool_switch(&a.atlas), "run the atlas instead of a grid")(
      "atlas-file", po::value(&a.atlas_file), "atlas cells (default topologies/validation/atlas.json)")(
      "atlas-models", po::value(&a.atlas_models), "comma list: only the cells of these models")(
      "atlas-topologies", po::value(&a.atlas_topologies), "comma list: only the cells on these systems");
  opts.add(atlas_opts);
  add_failure_options(opts);
  po::options_description zero_opts("Sharded data parallelism searched");
  old_spellings.add_options()("base-topology", po::value<std::string>())("scale-out-gbps", po::value<std::string>());
  add_zero_options(zero_opts, old_spellings, a.zero, true);
  opts.add(zero_opts);
  return opts;
}

// Parses argv into `a`; false when --help was asked for (and printed).
bool parse_crossover_args(int argc, char** argv, CrossoverArgs& a) {
  po::options_description old_spellings;  // kept for one release, not in --help
  const po::options_description opts = crossover_options(a, old_spellings);
  po::variables_map vm;
  if (!parse_command_line(argc, argv, opts, vm, nullptr, "", &old_spellings)) {
    print_help(std::cout, "ibt crossover --model M --gpus N [--topology T] [--domain-sizes ...] [--scale-out-Gbps ...]",
               kAbout, opts,
               {"ibt crossover --model deepseek-v3 --gpus 8192 --domain-sizes 8,16,32,64,72 --scale-out-Gbps "
                "100,400,1600 --topology dgx-h100 --out crossover.h5",
                "ibt crossover --model llama3-70b --gpus 1024 --rank-by goodput",
                "ibt crossover --atlas --jobs 2 --out atlas.h5",
                "ibt crossover --atlas --atlas-models gpt3-175b --atlas-topologies dgx-a100"});
    return false;
  }
  take_alias(vm, "base-topology", "topology", a.base);
  take_alias(vm, "scale-out-gbps", "scale-out-Gbps", a.gbps);
  a.framework_given = !vm["framework"].defaulted();
  a.atlas_flags_given = vm.count("atlas-file") || vm.count("atlas-models") || vm.count("atlas-topologies");
  auto given = [&vm](const char* name) { return vm.count(name) && !vm[name].defaulted(); };
  a.grid_given = given("domain-sizes") || given("scale-out-Gbps") || given("scale-out-gbps");
  for (const char* name : {"gpus", "model", "topology", "base-topology", "global-batch", "global-batch-tokens",
                           "domain-sizes", "scale-out-Gbps", "scale-out-gbps", "cp", "dtype", "framework", "rank-by"})
    if (a.job_flag_given.empty() && given(name)) a.job_flag_given = std::string("--") + name;
  a.failure = failure_overrides(vm);
  a.full_assumptions = wants_full_assumptions(vm);
  return true;
}

int run_crossover_atlas(const CrossoverArgs& a, int argc, char** argv) {
  // Each atlas cell names its own job; a flag naming another would be ignored, so it is refused.
  if (!a.job_flag_given.empty())
    throw UsageError(a.job_flag_given +
                     " does not apply to --atlas: each atlas cell runs its own model, devices, global batch and "
                     "framework (the atlas file's cells, at the system's own fabric); to ask at one size on several "
                     "systems, use --model M --gpus N --topology A,B without --atlas");
  if (!(a.threshold >= 0)) throw UsageError("--threshold must be >= 0");
  AtlasFlags f;
  f.file = a.atlas_file;
  f.models = atlas_list(a.atlas_models);
  f.topologies = atlas_list(a.atlas_topologies);
  f.threshold = a.threshold;
  f.jobs = resolve_jobs(a.jobs);
  f.out = a.out;
  f.wide = a.wide;
  return run_atlas(f, argc, argv);
}

// The grid's flags, checked before the model or topology is loaded.
struct CrossoverGrid {
  int jobs = 1;
  std::vector<int> domain_sizes;
  std::vector<double> scale_out_gbps;
};

CrossoverGrid check_grid_args(const CrossoverArgs& a) {
  if (a.model_name.empty()) throw UsageError("--model is required");
  require_given_positive(a.gpus, "--gpus", "the number of devices, e.g. --gpus 1024");
  require_positive(a.max_cp, "--cp");
  if (!(a.threshold >= 0)) throw UsageError("--threshold must be >= 0");
  CrossoverGrid g;
  g.jobs = resolve_jobs(a.jobs);
  g.domain_sizes = parse_positive_list<int>(a.domains, "--domain-sizes");
  g.scale_out_gbps = parse_positive_list<double>(a.gbps, "--scale-out-Gbps");
  if (!a.out.empty()) store::check_appendable(a.out);
  return g;
}

// What the grid is priced with (topologies/projection/projection_setup.hpp) and the global
// batch in sequences.
struct CrossoverSetup : topo::ProjectionSetup {
  long long global_batch = 0;
};

CrossoverSetup load_crossover_setup(const CrossoverArgs& a) {
  topo::ProjectionFlags f;
  f.model = a.model_name;
  f.topology = a.base;
  f.dtype = a.dtype;
  f.framework = a.framework;
  f.framework_given = a.framework_given;
  f.stack = a.stack;
  f.seq_len = a.seq_len;
  f.rank_by = a.rank_by;
  f.failure = a.failure;
  CrossoverSetup s{topo::load_projection_setup(f), 0};
  s.global_batch = a.batch.in_sequences(s.model.seq_len);
  return s;
}

// A narrow grid row: domain, Gb/s, the MFU (and goodput-adjusted MFU) columns, gain and
// verdict take kGridFixed (+ kGridGoodput) characters; the two best splits share what is
// left of kReportColumns after the "  <- own" mark, a longer one continuing below its row.
constexpr int kGridFixed = 60, kGridGoodput = 19, kOwnMark = 8;
int best_split_width(bool with_goodput) {
  return (static_cast<int>(kReportColumns) - kGridFixed - (with_goodput ? kGridGoodput : 0) - kOwnMark - 1) / 2;
}

// A strategy label broken for its column (cell_pieces) without parting a parallelism from
// its qualifier: "tp8 sp", "cp4 ring" and "pp2 v4" stay on one line.
std::vector<std::string> strategy_pieces(const std::string& label, int width) {
  const char glue = '\x1f';  // stands for a space inside a group while the label is broken
  std::string glued = label;
  for (size_t i = glued.find(' '); i != std::string::npos; i = glued.find(' ', i + 1)) {
    const std::string next = glued.substr(i + 1, glued.find(' ', i + 1) - i - 1);
    if (next == "sp" || next == "ring" || (next.size() > 1 && next[0] == 'v' && std::isdigit(next[1]))) glued[i] = glue;
  }
  std::vector<std::string> pieces = cell_pieces(glued, static_cast<std::size_t>(width));
  for (auto& piece : pieces) std::replace(piece.begin(), piece.end(), glue, ' ');
  return pieces;
}

// The grid's columns at the printf widths they always had; each row is laid out on its own
// (row_text), so a cell wider than its column pushes only its own row, as printf did.
// Narrow, the two best splits share best_split_width and the own-fabric mark follows the
// second; wide, the second (and its mark) is as long as its label.
TextTable grid_columns(bool with_goodput, bool wide) {
  using Align = TextTable::Align;
  using Column = TextTable::Column;
  TextTable table;
  const std::size_t split = wide ? 70 : static_cast<std::size_t>(best_split_width(with_goodput));
  table.add_column({"domain", Align::right, "", wide ? 7u : 6u});
  table.add_column({"Gb/s", Align::right, "", wide ? 9u : 6u});
  table.add_column({"MFU pp1", Align::right, "", 8});
  table.add_column({"MFU pp>1", Align::right, "", 8});
  if (with_goodput) {
    table.add_column({"gMFU pp1", Align::right, "", 8});
    table.add_column({"gMFU pp>1", Align::right, "", 9});
  }
  table.add_column({"gain", Align::right, "", wide ? 8u : 7u});
  table.add_column({"verdict", Align::left, "", 18});
  table.add_column(Column(wide ? "best PP=1 split" : "best PP=1", Align::left, "", split).after(wide ? "  " : " "));
  if (wide) {
    table.add_column({"best PP>1 split", Align::left});
  } else {
    table.add_column({"best PP>1", Align::left, "", split});
    table.add_column(Column("", Align::left).after(""));  // the own-fabric mark, its own gap
  }
  return table;
}

TextTable::Style grid_style() {
  TextTable::Style style;
  style.gap = " ";
  style.rule = false;
  return style;
}

void print_grid_columns(const CrossoverSetup& s, bool wide) {
  const bool with_goodput = s.failure.complete();
  std::printf("%s", wrap_lines("compared by " + std::string(topo::to_string(s.rank_by)) +
                                   (with_goodput ? "" : "; goodput not computed: " + s.failure.missing()) + "\n",
                               report_width(wide))
                        .c_str());
  std::printf("%s", grid_columns(with_goodput, wide).header_text(grid_style()).c_str());
  std::fflush(stdout);
}

std::string format_g(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", value);
  return buf;
}

// One printed cell of the grid; `mark` follows it (the topology's own cell). By default
// the best splits are named by strategy ("fsdp", "zero1 pp2 v8") in columns that keep
// the row within 120 columns (a longer name continues on the next line, in its column);
// wide, by strategy and full split (the results file keeps both either way).
std::string cell_line(const topo::CrossoverCell& c, bool with_goodput, bool wide, const std::string& mark = "") {
  auto best = [wide](const topo::Projection& p) {
    if (!p.feasible) return std::string("(none fits)");
    return wide ? topo::strategy_and_split(p.split) : models::strategy_label(p.split);
  };
  std::vector<std::string> cells{std::to_string(c.domain_size), format_g(c.scale_out_gbps),
                                 fixed(c.best_no_pp.feasible ? 100 * c.best_no_pp.mfu : 0.0, 1) + "%",
                                 fixed(c.best_with_pp.feasible ? 100 * c.best_with_pp.mfu : 0.0, 1) + "%"};
  if (with_goodput) {
    cells.push_back(fixed(c.best_no_pp.goodput.computed ? 100 * c.best_no_pp.goodput.goodput_mfu : 0.0, 1) + "%");
    cells.push_back(fixed(c.best_with_pp.goodput.computed ? 100 * c.best_with_pp.goodput.goodput_mfu : 0.0, 1) + "%");
  }
  // No gain where one side has no split: the line below the grid says why (forced_lines).
  cells.push_back(c.decided_by != topo::PpDecidedBy::gain ? std::string("-") : signed_fixed(100 * c.gain, 1) + "%");
  cells.push_back(topo::verdict_text(c.verdict));
  const TextTable table = grid_columns(with_goodput, wide);
  const TextTable::Style style = grid_style();
  if (wide) {  // the grid as before --wide existed: a row as long as its labels
    cells.push_back(best(c.best_no_pp));
    cells.push_back(best(c.best_with_pp) + mark);
    return table.row_text(cells, style);
  }
  const int width = best_split_width(with_goodput);
  const std::vector<std::string> no_pp = strategy_pieces(best(c.best_no_pp), width);
  const std::vector<std::string> with_pp = strategy_pieces(best(c.best_with_pp), width);
  const std::size_t lead = cells.size();
  std::string text;
  for (size_t k = 0; k < std::max(no_pp.size(), with_pp.size()); ++k) {  // continuations: under their columns
    if (k > 0) cells.assign(lead, "");
    cells.push_back(k < no_pp.size() ? no_pp[k] : "");
    cells.push_back(k < with_pp.size() ? with_pp[k] : "");
    cells.push_back(k == 0 ? mark : "");
    text += table.row_text(cells, style);
  }
  return text;
}

// --topology's own fabric: its domain size and scale-out Gb/s per device. A system
// without a scale-out network has no such cell (every grid fabric gets one).
struct OwnFabric {
  bool present = false;
  int domain_size = 0;
  double gbps = 0;
  bool is(const topo::CrossoverCell& c) const {
    return present && c.domain_size == domain_size && c.scale_out_gbps == gbps;
  }
};

OwnFabric own_fabric(const topo::Topology& t) {
  OwnFabric f;
  if (!t.scale_out.present) return f;
  f.present = true;
  f.domain_size = t.domain_size();
  f.gbps = t.scale_out.bandwidth_GBps.get() * 8.0;
  return f;
}

// Prices the cells of `domains` x `gbps` with the grid's search (so a cell priced alone
// is the very cell the grid prices), calling on_cell with each as it is known.
topo::CrossoverResult price_cells(const CrossoverArgs& a, const CrossoverSetup& s, const models::SplitSearch& search,
                                  int jobs, const std::vector<int>& domains, const std::vector<double>& gbps,
                                  const std::function<void(const topo::CrossoverCell&, Progress&)>& on_cell) {
  topo::keep_freed_memory_for_reuse();
  // Counted in cells, not split pricings: the lower bound skips most pricings of a row at
  // its end, so a pricing count gives an ETA thousands of times too long early on; cells
  // take similar times, so the first one already gives a fair estimate.
  Progress progress("crossover: cells", domains.size() * gbps.size());
  topo::CrossoverRun run;
  run.jobs = jobs;
  // The verdict's uncertainty: the PP gain's error on measured pairs for this kind of
  // topology (catalog or calibrated; topologies/validation/pp-gain-error.json).
  const topo::GainError gain_error = topo::gain_error_of(s.topology);
  run.gain_error = &gain_error;
  run.on_cell = [&](const topo::CrossoverCell& c) {
    on_cell(c, progress);
    progress.advance();
  };
  run.search = &search;
  topo::CrossoverResult r =
      topo::crossover(s.model, s.topology, static_cast<int>(a.gpus), domains, gbps, s.global_batch, a.threshold,
                      s.options, &s.failure, s.rank_by, static_cast<int>(a.max_cp), run);
  progress.finish();
  return r;
}

// The answer for --topology itself, printed before the grid: its own cell's verdict.
void print_own_cell(const CrossoverArgs& a, const CrossoverGrid& g, const CrossoverSetup& s,
                    const models::SplitSearch& search, const OwnFabric& own) {
  if (!own.present) {
    std::printf("%s has no scale-out network: no cell of the grid is its own fabric\n", s.topology.name.c_str());
    return;
  }
  const topo::CrossoverResult r =
      price_cells(a, s, search, g.jobs, {own.domain_size}, {own.gbps}, [](const topo::CrossoverCell&, Progress&) {});
  // The deciding term from the search's breakdowns (no walk of every stage: that costs as
  // much as the grid for a large batch, and crossover runs in loops).
  const topo::CrossoverCell& c = r.cells.front();
  bool on_grid = false;
  for (int d : g.domain_sizes)
    for (double b : g.scale_out_gbps) on_grid |= d == own.domain_size && b == own.gbps;
  char where[256];
  std::snprintf(where, sizeof where, "%s's own fabric (domain %d, %g Gb/s): ", s.topology.name.c_str(), own.domain_size,
                own.gbps);
  const std::string line = where + topo::verdict_sentence(c, r.gain_error) +
                           (on_grid ? "; marked '<- own' in the grid" : "; not a cell of the grid") + "\n";
  std::printf("%s", wrap_lines(line, report_width(a.wide)).c_str());
}

// The line saying what the verdicts' uncertainty u is and where it comes from ("" for a
// grid without cells); printed below the grid and stored as the run's `uncertainty`.
std::string uncertainty_text(const topo::CrossoverResult& r, const CrossoverSetup& s) {
  if (r.cells.empty()) return "";
  char line[1024];
  const topo::CrossoverCell& c0 = r.cells.front();
  const topo::Projection& any = c0.best_no_pp.feasible ? c0.best_no_pp : c0.best_with_pp;
  const topo::GainError& e = r.gain_error;
  if (e.known)
    std::snprintf(line, sizeof line,
                  "uncertainty: +-%.1f points of gain: |projected - measured PP gain| of %.0f%% of %d measured pairs "
                  "(vTrain groups measured with and without PP on DGX A100, projected on %s, a %s topology as %s is; "
                  "topologies/validation/pp-gain-error.json, from %s): a gain within threshold +- that is 'within "
                  "uncertainty'\n",
                  100 * e.points, 100 * e.coverage, e.groups, e.topology.c_str(), e.kind.c_str(),
                  s.topology.name.c_str(), e.command.c_str());
  else if (any.mfu_band.known)
    std::snprintf(
        line, sizeof line,
        "uncertainty: +-%.1f%% (median out-of-family |MFU error| of the %d published runs of %s, families %s; "
        "topologies/validation/bands.json; no measured PP gain error for a %s topology in "
        "topologies/validation/pp-gain-error.json): a gain within threshold +- that is 'within uncertainty'\n",
        100 * c0.uncertainty, any.mfu_band.rows, any.mfu_band.scope.c_str(), any.mfu_band.family.c_str(),
        e.kind.c_str());
  else
    std::snprintf(line, sizeof line,
                  "uncertainty: no validation band for %s (no published runs on it in "
                  "topologies/validation/published-runs.csv): verdicts compare the gain with the threshold alone\n",
                  s.topology.name.c_str());
  return line;
}

// The grid's cells whose verdict no gain decided (one side has no split), one line per
// reason with its domain sizes: divisibility and memory do not depend on the Gb/s.
std::string forced_lines(const topo::CrossoverResult& r) {
  std::vector<std::pair<std::string, std::vector<int>>> reasons;
  for (const topo::CrossoverCell& c : r.cells) {
    if (c.decided_by == topo::PpDecidedBy::gain) continue;
    const std::string why = std::string(topo::verdict_text(c.verdict)) + ": " + c.decided_why;
    auto it = std::find_if(reasons.begin(), reasons.end(), [&](const auto& x) { return x.first == why; });
    if (it == reasons.end()) it = reasons.insert(reasons.end(), {why, {}});
    if (std::find(it->second.begin(), it->second.end(), c.domain_size) == it->second.end())
      it->second.push_back(c.domain_size);
  }
  std::string out;
  for (const auto& [why, domains] : reasons) {
    std::string list;
    for (int d : domains) list += (list.empty() ? "" : ", ") + std::to_string(d);
    out += "gain '-' at domain " + list + " (every Gb/s): " + why + "\n";
  }
  return out;
}

// The uncertainty, verdict and search lines below the grid, and the failure assumptions.
void print_grid_summary(const topo::CrossoverResult& r, const CrossoverSetup& s, bool full_assumptions, bool wide) {
  std::string out = uncertainty_text(r, s);
  char line[1024];
  out += forced_lines(r);
  out += "verdict: " + r.verdict + "\n";
  if (r.skipped > 0) {
    std::snprintf(line, sizeof line,
                  "search: %zu split x cell pricings; %zu more skipped, their step-time lower bound above the cell's "
                  "best of their kind (with or without PP)\n",
                  r.pricings, r.skipped);
    out += line;
  }
  out += full_assumptions ? topo::describe_assumptions(s.failure) : topo::describe_assumptions_brief(s.failure);
  std::printf("%s", wrap_lines(out, report_width(wide)).c_str());
}

// No split fits in any cell (e.g. --gpus 7): a grid of nothing answers no question, so
// it is refused (exit 2) saying why, before a run is appended.
void refuse_if_nothing_fits(const topo::CrossoverResult& r, const CrossoverArgs& a, const CrossoverSetup& s) {
  std::string why;
  for (const topo::CrossoverCell& c : r.cells) {
    if (c.best_no_pp.feasible || c.best_with_pp.feasible) return;
    if (why.empty()) why = !c.best_no_pp.reason.empty() ? c.best_no_pp.reason : c.best_with_pp.reason;
  }
  if (why.empty())
    why = "no searched split (dp x tp x pp x cp) uses exactly " + std::to_string(a.gpus) +
          " devices and divides the global batch";
  throw UsageError("--gpus " + std::to_string(a.gpus) + ": no split of " + s.model.name +
                   " fits in any cell (global batch " + std::to_string(s.global_batch) + " sequences): " + why +
                   "; give a device count the domain sizes and the global batch divide (e.g. a multiple of 8)");
}

// The run of kind "crossover" (when --out), one row per cell.
void record_crossover(const CrossoverArgs& a, const CrossoverSetup& s, const topo::CrossoverResult& r, int argc,
                      char** argv) {
  RunRecorder recorder(a.out, "crossover");
  recorder.set_attr("command_line", joined_command_line(argc, argv));
  recorder.set_attr("ibt_version", std::string(kVersion));
  recorder.set_attr("git_commit", std::string(kGitCommit));
  recorder.set_attr("model", s.model.name);
  recorder.set_attr("model_json", topo::model_file_text(a.model_name));
  recorder.set_attr("topology", s.topology.name);
  recorder.set_attr("topology_json", topo::to_json(s.topology));
  recorder.set_attr("world_size", static_cast<std::int64_t>(a.gpus));
  recorder.set_attr("backend", std::string("sim"));
  recorder.set_attr("global_batch", static_cast<std::int64_t>(s.global_batch));
  recorder.set_attr("threshold", a.threshold);
  if (s.stack) recorder.set_attr("stack", s.stack->name);
  if (a.seq_len != topo::kSeqLenOfModel) recorder.set_attr("seq_len", static_cast<std::int64_t>(s.model.seq_len));
  recorder.set_attr("verdict", r.verdict);
  recorder.set_attr("uncertainty", uncertainty_text(r, s));
  recorder.set_attr("rank_by", std::string(topo::to_string(s.rank_by)));
  recorder.set_attr("failure_assumptions", topo::describe_assumptions(s.failure));
  for (const auto& c : r.cells) recorder.append(topo::crossover_row(c));
  recorder.finish(store::RunStatus::complete);
  if (recorder.active()) std::printf("run %s written to %s\n", recorder.run_id().c_str(), a.out.c_str());
}

// --topology A,B: the names in order, each once; refused (exit 2) before anything loads.
std::vector<std::string> topology_list(const std::string& text) {
  std::vector<std::string> names;
  for (std::size_t start = 0;;) {
    const std::size_t comma = text.find(',', start);
    const std::string name = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (name.empty())
      throw UsageError("--topology '" + text +
                       "': an empty name in the list; give catalog names or .json paths separated by single commas, "
                       "e.g. --topology dgx-h100,gb200-nvl72");
    if (std::find(names.begin(), names.end(), name) != names.end())
      throw UsageError("--topology '" + text + "': '" + name + "' is listed twice; name each system once");
    names.push_back(name);
    if (comma == std::string::npos) return names;
    start = comma + 1;
  }
}

// One system of --topology A,B, at its own fabric: its cell, or why it was not priced.
struct SystemAnswer {
  CrossoverArgs args;  // with base = the system
  CrossoverSetup setup;
  topo::CrossoverResult result;
  bool priced = false;
  std::string line;
};

SystemAnswer answer_system(const CrossoverArgs& a, const CrossoverGrid& g, const std::string& name,
                           CrossoverSetup setup) {
  SystemAnswer ans{a, std::move(setup), {}, false, ""};
  ans.args.base = name;
  const topo::Topology& t = ans.setup.topology;
  const int domain = t.domain_size();
  const OwnFabric own = own_fabric(t);
  char where[256];
  std::snprintf(where, sizeof where, "%s (%s, domain %d, ", name.c_str(), t.device.name.c_str(), domain);
  std::string head = where;
  if (own.present) {
    head += format_g(own.gbps) + " Gb/s";
  } else if (a.gpus > domain) {  // crossover() needs a scale-out network to reach past one domain
    ans.line = head + "no scale-out network): not priced: " + std::to_string(a.gpus) + " devices exceed its one " +
               std::to_string(domain) + "-device domain\n";
    return ans;
  } else {
    head += "no scale-out network";
  }
  const std::string fit = topo::domain_fit_note(static_cast<int>(a.gpus), domain);
  head += (fit.empty() ? "" : "; " + fit) + "): ";
  models::SplitSearch search = topo::default_search(t, ans.setup.global_batch);
  search.shard_domains = {domain};  // HSDP inside its domain
  apply_zero_flags(a.zero, search);
  // A system without scale-out holds the job in one domain, where that network carries
  // nothing (as in the atlas): 1 Gb/s stands in, and the stored cell says 0.
  const double gbps = own.present ? own.gbps : 1.0;
  ans.result =
      price_cells(a, ans.setup, search, g.jobs, {domain}, {gbps}, [](const topo::CrossoverCell&, Progress&) {});
  topo::CrossoverCell& c = ans.result.cells.front();  // the term from the search's breakdowns, as above
  if (!own.present) c.scale_out_gbps = 0;
  ans.priced = true;
  ans.line = head + topo::verdict_sentence(c, ans.result.gain_error) + "\n";
  return ans;
}

// --topology A,B --gpus N: every system at its own fabric, one sentence each; with --out
// one run of kind "crossover" per system (its one cell).
int run_crossover_systems(const CrossoverArgs& a, const std::vector<std::string>& names, int argc, char** argv) {
  if (a.grid_given)
    throw UsageError(
        "--domain-sizes and --scale-out-Gbps make a grid around one --topology; with several (--topology " + a.base +
        ") each system is priced at its own fabric: drop them, or give one topology");
  const CrossoverGrid grid = check_grid_args(a);
  std::vector<CrossoverSetup> setups;  // every name loaded (and checked) before any pricing
  for (const std::string& name : names) {
    CrossoverArgs one = a;
    one.base = name;
    setups.push_back(load_crossover_setup(one));
    require_search_memory(setups.back().global_batch, a.gpus, setups.back().model.layers, 2, grid.jobs,
                          "--global-batch " + std::to_string(setups.back().global_batch));
  }
  const CrossoverSetup& first = setups.front();
  char intro[512];
  std::snprintf(intro, sizeof intro,
                "ibt crossover: %s on %ld devices of each of %zu systems, global batch %lld sequences x %d tokens, "
                "threshold %.0f%%, compared by %s; each system at its own fabric (domain size and scale-out Gb/s)\n",
                first.model.name.c_str(), a.gpus, names.size(), first.global_batch, first.model.seq_len,
                100 * a.threshold, topo::to_string(first.rank_by));
  std::printf("%s", wrap_lines(intro, report_width(a.wide)).c_str());
  std::fflush(stdout);
  std::vector<SystemAnswer> answers;
  bool anything_fits = false;
  for (size_t i = 0; i < names.size(); ++i) {
    answers.push_back(answer_system(a, grid, names[i], setups[i]));
    const SystemAnswer& ans = answers.back();
    std::printf("%s", wrap_lines(ans.line, report_width(a.wide)).c_str());
    std::fflush(stdout);
    anything_fits |= ans.priced && ans.result.cells.front().verdict != topo::PpVerdict::nothing_fits;
  }
  if (!anything_fits)
    throw UsageError("--gpus " + std::to_string(a.gpus) + ": no split of " + first.model.name +
                     " fits on any of the systems (lines above); give a device count their domain sizes and the "
                     "global batch divide (e.g. a multiple of 8)");
  for (const SystemAnswer& ans : answers)
    if (ans.priced && !a.out.empty()) record_crossover(ans.args, ans.setup, ans.result, argc, argv);
  return kExitOk;
}

}  // namespace

int crossover_main(int argc, char** argv) {
  CrossoverArgs a;
  if (!parse_crossover_args(argc, argv, a)) return kExitOk;
  if (!a.atlas && a.atlas_flags_given)
    throw UsageError("--atlas-file, --atlas-models and --atlas-topologies go with --atlas");
  if (a.atlas && (!a.stack.empty() || a.seq_len != topo::kSeqLenOfModel))
    throw UsageError("--stack and --seq-len do not apply to --atlas: its cells name their framework and model");
  if (a.atlas) return run_crossover_atlas(a, argc, argv);
  const std::vector<std::string> systems = topology_list(a.base);
  if (systems.size() > 1) return run_crossover_systems(a, systems, argc, argv);
  const CrossoverGrid grid = check_grid_args(a);
  const CrossoverSetup setup = load_crossover_setup(a);
  require_search_memory(setup.global_batch, a.gpus, setup.model.layers, 2, grid.jobs,
                        "--global-batch " + std::to_string(setup.global_batch));

  std::printf("ibt crossover: %s on %ld x %s, global batch %lld sequences x %d tokens, threshold %.0f%%\n",
              setup.model.name.c_str(), a.gpus, setup.topology.device.name.c_str(), setup.global_batch,
              setup.model.seq_len, 100 * a.threshold);
  if (setup.stack) std::printf("%s", topo::describe_stack(*setup.stack, setup.model, setup.topology).c_str());
  models::SplitSearch search = topo::default_search(setup.topology, setup.global_batch);
  search.shard_domains = grid.domain_sizes;  // HSDP inside each cell's domain
  apply_zero_flags(a.zero, search);
  const OwnFabric own = own_fabric(setup.topology);
  print_own_cell(a, grid, setup, search, own);
  print_grid_columns(setup, a.wide);
  const bool with_goodput = setup.failure.complete();
  // Each cell prints as soon as its row of the grid is known.
  const topo::CrossoverResult r =
      price_cells(a, setup, search, grid.jobs, grid.domain_sizes, grid.scale_out_gbps,
                  [&](const topo::CrossoverCell& c, Progress& progress) {
                    progress.print(cell_line(c, with_goodput, a.wide, own.is(c) ? "  <- own" : ""));
                  });
  print_grid_summary(r, setup, a.full_assumptions, a.wide);
  refuse_if_nothing_fits(r, a, setup);
  record_crossover(a, setup, r, argc, argv);
  return kExitOk;
}

}  // namespace ibt::suites
