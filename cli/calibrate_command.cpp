// ibt calibrate: fit latency-bandwidth models of collectives (per op, scope and group
// size) from the collectives runs in HDF5 files, and write a topology file that
// `ibt project` and `ibt crossover` use exactly like a catalog one; from the `ibt train`
// runs in them (or named by --fit-train), the compute efficiency (compute_fit.hpp).
#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <tuple>
#include <vector>

#include "cli/cli.hpp"
#include "cli/commands.hpp"
#include "core/errors.hpp"
#include "core/output_file.hpp"
#include "core/text_table.hpp"
#include "core/text_wrap.hpp"
#include "models/engine/sgemm_peak.hpp"
#include "reports/store/store.hpp"
#include "topologies/calibration/calibration.hpp"
#include "topologies/calibration/calibration_layout.hpp"
#include "topologies/calibration/compute_fit.hpp"
#include "topologies/hardware/topology.hpp"

namespace ibt::suites {

namespace {

namespace po = boost::program_options;

const char* kAbout =
    "Fits time = alpha + bytes/bandwidth per collective op, scope (intra, inter, world) and group\n"
    "size from the 'collectives' tables of the runs in the files (least squares on relative\n"
    "residuals, Huber re-weighting against noisy small sizes), prints each fit with its\n"
    "residuals, and writes the base topology with the fits added. The sim executor uses a fit\n"
    "wherever its op and scope match (nearest group size, rescaled by ring step counts). A group\n"
    "spanning scale-up domains needs scale-out figures: a topology calibrated on one node has\n"
    "none and such a group is an error, never free. The domain size is the one the collectives\n"
    "runs were measured on (their world_size / domains; inputs of different layouts are refused);\n"
    "with inter-scope fits, scale_out's bandwidth and latency are derived from them (send_recv\n"
    "preferred), so spanning groups are priced from the measured network.\n\n"
    "Compute: from `ibt train` runs (every complete one in the files, or only those --fit-train\n"
    "names; the others are then reported as held out), model.gemm_efficiency is fitted so that\n"
    "the sim's compute time matches the measured one (its fastest step after the first), and each\n"
    "run's residual is printed. Without train runs the base topology's efficiency stays (say\n"
    "--measure-local to measure this machine's sgemm and memcpy first).\n\n"
    "Your own training logs: runs imported with `ibt import-log` (Megatron, NeMo, torchtitan) are\n"
    "fitted the same way to their logged step time (median iteration), projected in the log's\n"
    "dtype on --topology (the system they ran on; required), whose network figures stay; no\n"
    "collectives run is needed. Hold runs out with --fit-train to see the error at the splits the\n"
    "fit did not see, then project or crossover with the written topology.\n";

// The parsed command line.
struct CalibrateArgs {
  std::vector<std::string> inputs;
  std::string out, base = "local-cpu", name;
  bool measure_local = false, allow_oversubscribed = false, force = false;
  bool wide = false;            // the residual table at its old fixed widths
  bool topology_given = false;  // --topology (or --base) on the command line
  std::vector<std::string> fit_train;
};

po::options_description calibrate_options(CalibrateArgs& a) {
  po::options_description opts("options");
  opts.add_options()("help,h", "show this help")("inputs", po::value(&a.inputs)->multitoken(),
                                                 "HDF5 result files (positional)")(
      "out", po::value(&a.out), "topology JSON file to write (never an existing file without --force)")(
      "force", po::bool_switch(&a.force), "replace the --out file when it exists")(
      "topology", po::value(&a.base)->default_value(a.base), "topology the fits are added to (catalog name or path)")(
      "name", po::value(&a.name), "name of the calibrated topology (default: the --out file's stem)")(
      "measure-local", po::bool_switch(&a.measure_local),
      "also measure this machine's fp32 sgemm rate and memory bandwidth (one thread) into the device figures")(
      "fit-train", po::value(&a.fit_train)->composing(),
      "FILE.h5:RUN_ID or FILE.h5 (repeatable): fit compute efficiency to these train runs only; the other "
      "train runs in the input files are held out and reported")(
      "wide", po::bool_switch(&a.wide),
      "the compute fit's residual table at fixed widths, one line per run (about 150 columns); by default every "
      "line fits 120 columns, a long run name or split continuing under itself")(
      "allow-oversubscribed", po::bool_switch(&a.allow_oversubscribed),
      "fit runs measured with more ranks than cores on a host (refused without it: such timings measure the "
      "scheduler, with residuals of 40-67% seen)");
  return opts;
}

// Parses argv into `a`; false when --help was asked for (and printed).
bool parse_calibrate_args(int argc, char** argv, CalibrateArgs& a) {
  const po::options_description opts = calibrate_options(a);
  po::positional_options_description pos;
  pos.add("inputs", -1);
  po::options_description old_spellings;  // kept for one release, not in --help
  old_spellings.add_options()("base", po::value<std::string>());
  po::variables_map vm;
  if (!parse_command_line(argc, argv, opts, vm, &pos, "", &old_spellings)) {
    print_help(std::cout, "ibt calibrate FILE.h5 [FILE.h5 ...] --out TOPOLOGY.json [options]", kAbout, opts,
               {"ibt calibrate results/quickstart.h5 --topology local-cpu --out my-cluster.json",
                "ibt calibrate fit.h5 held.h5 --fit-train fit.h5 --out mine.json",
                "ibt calibrate logs.h5 --topology dgx-h100 --fit-train logs.h5:000001 --out my-h100.json"});
    return false;
  }
  take_alias(vm, "base", "topology", a.base);
  a.topology_given = vm.count("base") || (vm.count("topology") && !vm["topology"].defaulted());
  return true;
}

// Before any work: never over a results file being read, never over another file unasked.
// The topology's name defaults to the --out file's stem.
void check_out_and_name(CalibrateArgs& a) {
  if (a.inputs.empty()) throw UsageError("give at least one HDF5 results file");
  if (a.out.empty()) throw UsageError("--out is required");
  std::vector<InputFile> inputs;
  for (const auto& f : a.inputs) inputs.push_back({"the results file", f});
  if (!a.base.empty()) inputs.push_back({"--topology", a.base});
  refuse_output_over_inputs(a.out, "--out", inputs);
  refuse_existing_output(a.out, "--out", a.force);
  if (a.name.empty()) {
    a.name = a.out.substr(a.out.find_last_of('/') + 1);
    if (a.name.size() > 5 && a.name.compare(a.name.size() - 5, 5, ".json") == 0) a.name.resize(a.name.size() - 5);
  }
}

// What the input files hold.
struct Measurements {
  std::vector<topo::MeasuredCollective> rows;
  std::vector<topo::MeasuredTrainRun> train;
  std::vector<topo::MeasuredLayout> layouts;
  std::vector<std::string> oversubscribed;  // "FILE:RUN (4 ranks on 2 cores of host)" of the collectives runs
};

// Reads every input, printing what each holds.
Measurements read_measurements(const std::vector<std::string>& inputs) {
  Measurements m;
  for (const auto& f : inputs) {
    bool has_collectives = false;
    for (const auto& run : store::list_runs(f)) {
      bool collectives = false;
      for (const auto& t : run.tables) collectives |= t == "collectives";
      has_collectives |= collectives;
      if (const std::string over = run.oversubscription(); collectives && !over.empty())
        m.oversubscribed.push_back(f + ":" + run.id + " (" + over + ")");
    }
    if (has_collectives) {
      auto r = topo::read_collective_rows(f);
      std::printf("%s: %zu measured collective rows\n", f.c_str(), r.size());
      m.rows.insert(m.rows.end(), r.begin(), r.end());
      if (auto l = topo::read_collective_layout(f)) m.layouts.push_back(*l);
    }
    auto t = topo::read_train_runs(f);
    if (!t.empty()) std::printf("%s: %zu train runs\n", f.c_str(), t.size());
    m.train.insert(m.train.end(), t.begin(), t.end());
  }
  return m;
}

// Oversubscribed runs are refused, or fitted with a warning under --allow-oversubscribed.
void refuse_or_warn_oversubscribed(const std::vector<std::string>& runs, bool allowed) {
  std::string list;
  for (const auto& r : runs) list += (list.empty() ? "" : ", ") + r;
  if (!allowed)
    throw UsageError("oversubscribed measurements: " + list +
                     ": their timings measure the scheduler, not the hardware; re-measure with at most one "
                     "rank per core, or pass --allow-oversubscribed to fit them anyway");
  std::fprintf(stderr, "# warning: ibt calibrate: fitting oversubscribed measurements (--allow-oversubscribed): %s\n",
               list.c_str());
}

// Which train runs the compute fit sees: --fit-train's, else all of them but those made
// with --check; the others are held out.
struct TrainRunChoice {
  std::vector<topo::MeasuredTrainRun> fit, held_out;
};

TrainRunChoice choose_train_runs(const std::vector<std::string>& fit_train,
                                 const std::vector<topo::MeasuredTrainRun>& train) {
  TrainRunChoice c;
  if (fit_train.empty()) {
    for (const auto& r : train) {
      if (r.checked)
        std::printf("not fitted (made with --check, times include the serial reference): %s\n", r.label().c_str());
      (r.checked ? c.held_out : c.fit).push_back(r);
    }
    return c;
  }
  for (const auto& spec : fit_train) {
    auto r = topo::read_train_runs_spec(spec);
    c.fit.insert(c.fit.end(), r.begin(), r.end());
  }
  for (const auto& r : train) {
    const bool fitted = std::any_of(c.fit.begin(), c.fit.end(), [&](const topo::MeasuredTrainRun& f) {
      return f.file == r.file && f.run_id == r.run_id;
    });
    if (!fitted) c.held_out.push_back(r);
  }
  return c;
}

// The fits with their residuals, what was not fitted, and the calibrated fabric.
void print_fits(const topo::CalibrationReport& rep, bool measure_local) {
  using Align = TextTable::Align;
  TextTable fits;  // at the printf widths it always had, each row laid out on its own
  for (const auto& [name, align, width] :
       std::vector<std::tuple<const char*, Align, std::size_t>>{{"op", Align::left, 16},
                                                                {"scope", Align::left, 6},
                                                                {"n", Align::right, 5},
                                                                {"points", Align::right, 6},
                                                                {"alpha (us)", Align::right, 12},
                                                                {"algbw GB/s", Align::right, 12},
                                                                {"busbw GB/s", Align::right, 12},
                                                                {"rms res", Align::right, 9},
                                                                {"max res", Align::right, 9}})
    fits.add_column({name, align, "", width});
  TextTable::Style style;
  style.gap = " ";
  style.rule = false;
  std::printf("%s", fits.header_text(style).c_str());
  for (const auto& f : rep.topology.fits)
    std::printf("%s",
                fits.row_text({f.op, f.scope, std::to_string(f.group_size), std::to_string(f.points),
                               fixed(f.alpha_us, 3), fixed(f.algbw_GBps, 3), fixed(f.busbw_GBps, 3),
                               fixed(100 * f.rms_rel_residual, 1) + "%", fixed(100 * f.max_rel_residual, 1) + "%"},
                              style)
                    .c_str());
  for (const auto& s : rep.skipped) std::printf("not fitted: %s\n", s.c_str());
  if (rep.topology.fits.empty()) throw UsageError("no collective could be fitted from the given files");
  std::printf("scale-up domain: %d devices (%s); scale-out: %s\n", rep.topology.domain_size(),
              rep.topology.scale_up.devices_per_domain.source.c_str(),
              rep.topology.scale_out.present ? rep.topology.scale_out.name.c_str()
                                             : "none (groups spanning domains cannot be priced)");
  if (measure_local)
    std::printf("measured: fp32 %.4f TFLOP/s, memory %.1f GB/s\n", rep.topology.device.fp32.get(),
                rep.topology.device.memory_bandwidth_GBps.get());
}

// model.gemm_efficiency fitted to the chosen train runs, each run's residual printed; with
// none, the base topology's efficiency stays.
void fit_compute_efficiency(topo::Topology& topology, const TrainRunChoice& runs, const std::string& base_name,
                            std::size_t width) {
  if (runs.fit.empty()) {
    std::printf("compute: no train run to fit, gemm_efficiency %.3f kept from '%s'\n",
                topology.model.gemm_efficiency.get(), base_name.c_str());
    return;
  }
  const topo::ComputeFit cf = topo::fit_compute(topology, runs.fit, runs.held_out);
  if (cf.from_logs)
    std::printf(
        "compute fit: gemm_efficiency %.4f of %s peak %.1f TFLOP/s = %.1f TFLOP/s, from %zu logged run(s) "
        "(their step times: a log has no compute breakdown)\n",
        cf.gemm_efficiency, cf.dtype.c_str(), topology.device.peak(cf.dtype).get(), cf.achieved_gflops / 1e3,
        runs.fit.size());
  else
    std::printf(
        "compute fit: gemm_efficiency %.4f of fp32 peak %.4f TFLOP/s = %.2f GFLOP/s achieved, from %zu run(s)\n",
        cf.gemm_efficiency, topology.device.fp32.get(), cf.achieved_gflops, runs.fit.size());
  using Align = TextTable::Align;
  // Wide (width 0): the printf widths it always had, each row laid out on its own. Otherwise
  // the columns as wide as their cells, run and split wrapping within `width`.
  const bool wide = width == 0;
  TextTable table;
  for (const auto& [name, align, min_width] :
       std::vector<std::tuple<const char*, Align, std::size_t>>{{"use", Align::left, 8},
                                                                {"run", Align::left, 40},
                                                                {"compute s", Align::right, 12},
                                                                {"projected", Align::right, 12},
                                                                {"res", Align::right, 8},
                                                                {"step s", Align::right, 12},
                                                                {"projected", Align::right, 12},
                                                                {"res", Align::right, 8}}) {
    TextTable::Column column(name, align, "", wide ? min_width : 0);
    if (std::string(name) == "run") column.wrapping();
    table.add_column(column);
  }
  table.add_column(TextTable::Column("model, split", Align::left).after("  ").wrapping());
  TextTable::Style style;
  style.gap = " ";
  style.rule = false;
  style.width = width;
  auto cells = [](const topo::TrainResidual& r) -> std::vector<std::string> {
    const bool breakdown = r.measured_compute_s > 0;  // an imported log has none
    return {r.fitted ? "fit" : "held-out",
            r.label,
            breakdown ? fixed(r.measured_compute_s, 5) : "-",
            breakdown ? fixed(r.projected_compute_s, 5) : "-",
            breakdown ? signed_fixed(100 * (r.projected_compute_s / r.measured_compute_s - 1), 1) + "%" : "-",
            fixed(r.measured_step_s, 5),
            fixed(r.projected_step_s, 5),
            signed_fixed(100 * (r.projected_step_s / r.measured_step_s - 1), 1) + "%",
            r.what};
  };
  if (wide) {
    std::printf("%s", table.header_text(style).c_str());
    for (const auto& r : cf.residuals) std::printf("%s", table.row_text(cells(r), style).c_str());
  } else {
    for (const auto& r : cf.residuals) table.add_row(cells(r));
    std::printf("%s", table.render(style).c_str());
  }
  topo::apply_compute_fit(topology, cf, runs.fit);
}

}  // namespace

int calibrate_main(int argc, char** argv) {
  CalibrateArgs a;
  if (!parse_calibrate_args(argc, argv, a)) return kExitOk;
  check_out_and_name(a);
  const topo::Topology base_topology = topo::load_topology(a.base);
  const Measurements measured = read_measurements(a.inputs);
  if (measured.rows.empty() && measured.train.empty())
    throw UsageError("no collectives or train run in the given files: nothing to fit");
  // Train runs are checked where the compute fit takes them, below.
  if (!measured.oversubscribed.empty()) refuse_or_warn_oversubscribed(measured.oversubscribed, a.allow_oversubscribed);
  const auto layout = topo::agreed_layout(measured.layouts);  // refuses mixed layouts, naming the files
  const TrainRunChoice train_runs = choose_train_runs(a.fit_train, measured.train);
  const bool logs = !train_runs.fit.empty() && !train_runs.fit.front().source_format.empty();
  if (logs && !a.topology_given)
    throw UsageError(
        "the runs to fit were imported from training logs: give --topology, the system they ran on "
        "(e.g. dgx-h100, or a calibrated topology of your cluster), not the default local-cpu");
  topo::CalibrationReport rep = topo::calibrate(base_topology, measured.rows, a.inputs, a.name);
  // The fits hold on the layout they were measured on: take its domain size, and price
  // groups spanning domains from the inter fits (calibration_layout.hpp).
  if (layout) std::printf("layout: %s\n", topo::apply_measured_layout(rep.topology, *layout, "calibration").c_str());
  if (a.measure_local)
    topo::measure_local_compute(rep.topology, models::measure_sgemm_peak_gflops(1), models::sgemm_peak_rule());
  if (measured.rows.empty()) {
    if (!logs) throw UsageError("no collectives run in the given files: nothing to fit communication from");
    std::printf("communication: no collectives run in the files, so priced by the network figures of '%s'\n",
                base_topology.name.c_str());
  } else {
    print_fits(rep, a.measure_local);
  }
  std::vector<std::string> oversubscribed_fit;
  for (const auto& r : train_runs.fit)
    if (!r.oversubscription.empty()) oversubscribed_fit.push_back(r.label() + " (" + r.oversubscription + ")");
  if (!oversubscribed_fit.empty()) refuse_or_warn_oversubscribed(oversubscribed_fit, a.allow_oversubscribed);
  fit_compute_efficiency(rep.topology, train_runs, base_topology.name, a.wide ? 0 : kReportColumns);
  const std::string text = topo::to_json(rep.topology);
  topo::parse_topology(text, a.out);  // what we write must load back
  write_output_file(a.out, text, "--out");
  const std::string what = measured.rows.empty()
                               ? "the compute efficiency of the logs, the network of '" + base_topology.name + "'"
                               : std::to_string(rep.topology.fits.size()) + " fits";
  const std::string wrote = "wrote " + a.out + " (" + what + "); use it as --topology " + a.out + "\n";
  std::printf("%s", wrap_lines(wrote, a.wide ? 0 : kReportColumns, 2).c_str());
  return kExitOk;
}

}  // namespace ibt::suites
