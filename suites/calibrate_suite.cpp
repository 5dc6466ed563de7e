// ibt calibrate: fit latency-bandwidth models of collectives (per op, scope and group
// size) from the collectives runs in HDF5 files, and write a topology file that
// `ibt project` and `ibt crossover` use exactly like a catalog one; from the `ibt train`
// runs in them (or named by --fit-train), the compute efficiency (compute_fit.hpp).
#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "core/errors.hpp"
#include "core/output_file.hpp"
#include "reports/store/store.hpp"
#include "suites/cli.hpp"
#include "suites/suites.hpp"
#include "topologies/calibration/calibration.hpp"
#include "topologies/calibration/calibration_layout.hpp"
#include "topologies/calibration/compute_fit.hpp"
#include "topologies/hardware/topology.hpp"

namespace ibt::suites {

int calibrate_main(int argc, char** argv) {
  namespace po = boost::program_options;
  std::vector<std::string> inputs;
  std::string out, base = "local-cpu", name;
  bool measure_local = false, allow_oversubscribed = false, force = false;
  std::vector<std::string> fit_train;
  const char* about =
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
      "--measure-local to measure this machine's sgemm and memcpy first).\n";
  po::options_description opts("options");
  opts.add_options()("help,h", "show this help")("inputs", po::value(&inputs)->multitoken(),
                                                 "HDF5 result files (positional)")(
      "out", po::value(&out), "topology JSON file to write (never an existing file without --force)")(
      "force", po::bool_switch(&force), "replace the --out file when it exists")(
      "topology", po::value(&base)->default_value(base), "topology the fits are added to (catalog name or path)")(
      "name", po::value(&name), "name of the calibrated topology (default: the --out file's stem)")(
      "measure-local", po::bool_switch(&measure_local),
      "also measure this machine's fp32 sgemm rate and memory bandwidth (one thread) into the device figures")(
      "fit-train", po::value(&fit_train)->composing(),
      "FILE.h5:RUN_ID or FILE.h5 (repeatable): fit compute efficiency to these train runs only; the other "
      "train runs in the input files are held out and reported")(
      "allow-oversubscribed", po::bool_switch(&allow_oversubscribed),
      "fit runs measured with more ranks than cores on a host (refused without it: such timings measure the "
      "scheduler, with residuals of 40-67% seen)");
  po::positional_options_description pos;
  pos.add("inputs", -1);
  po::options_description old_spellings;  // kept for one release, not in --help
  old_spellings.add_options()("base", po::value<std::string>());
  po::variables_map vm;
  if (!parse_command_line(argc, argv, opts, vm, &pos, "", &old_spellings)) {
    print_help(std::cout, "ibt calibrate FILE.h5 [FILE.h5 ...] --out TOPOLOGY.json [options]", about, opts,
               {"ibt calibrate results/quickstart.h5 --topology local-cpu --out my-cluster.json",
                "ibt calibrate fit.h5 held.h5 --fit-train fit.h5 --out mine.json"});
    return kExitOk;
  }
  take_alias(vm, "base", "topology", base);
  if (inputs.empty()) throw UsageError("give at least one HDF5 results file");
  if (out.empty()) throw UsageError("--out is required");
  // Before any work: never over a results file being read, never over another file unasked.
  for (const auto& f : inputs) {
    std::error_code ec;
    if (std::filesystem::exists(out, ec) && std::filesystem::equivalent(out, f, ec))
      throw UsageError("--out " + out + ": is an input results file; choose another name for the topology");
  }
  refuse_existing_output(out, "--out", force);
  if (name.empty()) {
    name = out.substr(out.find_last_of('/') + 1);
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0) name.resize(name.size() - 5);
  }
  const topo::Topology base_topology = topo::load_topology(base);
  std::vector<topo::MeasuredCollective> rows;
  std::vector<topo::MeasuredTrainRun> train;
  std::vector<topo::MeasuredLayout> layouts;
  std::vector<std::string> oversubscribed;  // "FILE:RUN (4 ranks on 2 cores of host)" of the collectives runs
  for (const auto& f : inputs) {
    bool has_collectives = false;
    for (const auto& run : store::list_runs(f)) {
      bool collectives = false;
      for (const auto& t : run.tables) collectives |= t == "collectives";
      has_collectives |= collectives;
      if (const std::string over = run.oversubscription(); collectives && !over.empty())
        oversubscribed.push_back(f + ":" + run.id + " (" + over + ")");
    }
    if (has_collectives) {
      auto r = topo::read_collective_rows(f);
      std::printf("%s: %zu measured collective rows\n", f.c_str(), r.size());
      rows.insert(rows.end(), r.begin(), r.end());
      if (auto l = topo::read_collective_layout(f)) layouts.push_back(*l);
    }
    auto t = topo::read_train_runs(f);
    if (!t.empty()) std::printf("%s: %zu train runs\n", f.c_str(), t.size());
    train.insert(train.end(), t.begin(), t.end());
  }
  if (rows.empty()) throw UsageError("no collectives run in the given files: nothing to fit communication from");
  // Train runs are checked where the compute fit takes them, below.
  auto oversubscribed_runs = [&](const std::vector<std::string>& runs) {
    std::string list;
    for (const auto& r : runs) list += (list.empty() ? "" : ", ") + r;
    if (!allow_oversubscribed)
      throw UsageError("oversubscribed measurements: " + list +
                       ": their timings measure the scheduler, not the hardware; re-measure with at most one "
                       "rank per core, or pass --allow-oversubscribed to fit them anyway");
    std::fprintf(stderr, "# warning: ibt calibrate: fitting oversubscribed measurements (--allow-oversubscribed): %s\n",
                 list.c_str());
  };
  if (!oversubscribed.empty()) oversubscribed_runs(oversubscribed);
  const auto layout = topo::agreed_layout(layouts);  // refuses mixed layouts, naming the files
  topo::CalibrationReport rep = topo::calibrate(base_topology, rows, inputs, name);
  // The fits hold on the layout they were measured on: take its domain size, and price
  // groups spanning domains from the inter fits (calibration_layout.hpp).
  if (layout) std::printf("layout: %s\n", topo::apply_measured_layout(rep.topology, *layout, "calibration").c_str());
  if (measure_local) topo::measure_local_compute(rep.topology);
  // Which train runs the compute fit sees: --fit-train's, else all of them.
  std::vector<topo::MeasuredTrainRun> fit_runs, held_out;
  if (fit_train.empty()) {
    for (const auto& r : train) {
      if (r.checked)
        std::printf("not fitted (made with --check, times include the serial reference): %s\n", r.label().c_str());
      (r.checked ? held_out : fit_runs).push_back(r);
    }
  } else {
    for (const auto& spec : fit_train) {
      auto r = topo::read_train_runs_spec(spec);
      fit_runs.insert(fit_runs.end(), r.begin(), r.end());
    }
    for (const auto& r : train) {
      const bool fitted = std::any_of(fit_runs.begin(), fit_runs.end(), [&](const topo::MeasuredTrainRun& f) {
        return f.file == r.file && f.run_id == r.run_id;
      });
      if (!fitted) held_out.push_back(r);
    }
  }
  std::printf("%-16s %-6s %5s %6s %12s %12s %12s %9s %9s\n", "op", "scope", "n", "points", "alpha (us)", "algbw GB/s",
              "busbw GB/s", "rms res", "max res");
  for (const auto& f : rep.topology.fits)
    std::printf("%-16s %-6s %5d %6d %12.3f %12.3f %12.3f %8.1f%% %8.1f%%\n", f.op.c_str(), f.scope.c_str(),
                f.group_size, f.points, f.alpha_us, f.algbw_GBps, f.busbw_GBps, 100 * f.rms_rel_residual,
                100 * f.max_rel_residual);
  for (const auto& s : rep.skipped) std::printf("not fitted: %s\n", s.c_str());
  if (rep.topology.fits.empty()) throw UsageError("no collective could be fitted from the given files");
  std::printf("scale-up domain: %d devices (%s); scale-out: %s\n", rep.topology.domain_size(),
              rep.topology.scale_up.devices_per_domain.source.c_str(),
              rep.topology.scale_out.present ? rep.topology.scale_out.name.c_str()
                                             : "none (groups spanning domains cannot be priced)");
  if (measure_local)
    std::printf("measured: fp32 %.4f TFLOP/s, memory %.1f GB/s\n", rep.topology.device.fp32.get(),
                rep.topology.device.memory_bandwidth_GBps.get());
  std::vector<std::string> oversubscribed_fit;
  for (const auto& r : fit_runs)
    if (!r.oversubscription.empty()) oversubscribed_fit.push_back(r.label() + " (" + r.oversubscription + ")");
  if (!oversubscribed_fit.empty()) oversubscribed_runs(oversubscribed_fit);
  if (!fit_runs.empty()) {
    const topo::ComputeFit cf = topo::fit_compute(rep.topology, fit_runs, held_out);
    std::printf(
        "compute fit: gemm_efficiency %.4f of fp32 peak %.4f TFLOP/s = %.2f GFLOP/s achieved, from %zu run(s)\n",
        cf.gemm_efficiency, rep.topology.device.fp32.get(), cf.achieved_gflops, fit_runs.size());
    std::printf("%-8s %-40s %12s %12s %8s %12s %12s %8s  %s\n", "use", "run", "compute s", "projected", "res", "step s",
                "projected", "res", "model, split");
    for (const auto& r : cf.residuals)
      std::printf("%-8s %-40s %12.5f %12.5f %+7.1f%% %12.5f %12.5f %+7.1f%%  %s\n", r.fitted ? "fit" : "held-out",
                  r.label.c_str(), r.measured_compute_s, r.projected_compute_s,
                  100 * (r.projected_compute_s / r.measured_compute_s - 1), r.measured_step_s, r.projected_step_s,
                  100 * (r.projected_step_s / r.measured_step_s - 1), r.what.c_str());
    topo::apply_compute_fit(rep.topology, cf, fit_runs);
  } else {
    std::printf("compute: no train run to fit, gemm_efficiency %.3f kept from '%s'\n",
                rep.topology.model.gemm_efficiency.get(), base_topology.name.c_str());
  }
  const std::string text = topo::to_json(rep.topology);
  topo::parse_topology(text, out);  // what we write must load back
  write_output_file(out, text, "--out");
  std::printf("wrote %s (%zu fits); use it as --topology %s\n", out.c_str(), rep.topology.fits.size(), out.c_str());
  return kExitOk;
}

}  // namespace ibt::suites
