// ibt calibrate: fit latency-bandwidth models of collectives (per op, scope and group
// size) from the collectives runs in HDF5 files, and write a topology file that
// `ibt project` and `ibt crossover` use exactly like a catalog one.
#include <boost/program_options.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "collectives/errors.hpp"
#include "suites/suites.hpp"
#include "topologies/calibration.hpp"
#include "topologies/topology.hpp"

namespace ibt::suites {

int calibrate_main(int argc, char** argv) {
  namespace po = boost::program_options;
  std::vector<std::string> inputs;
  std::string out, base = "local-cpu", name;
  bool measure_local = false;
  po::options_description opts(
      "ibt calibrate FILE.h5 [FILE.h5 ...] --out TOPOLOGY.json: fit time = alpha + bytes/bandwidth\n"
      "per collective op, scope (intra, inter, world) and group size from the 'collectives' tables\n"
      "of the runs in the files (least squares on relative residuals, Huber re-weighting against\n"
      "noisy small sizes), print each fit with its residuals, and write the base topology with the\n"
      "fits added. The sim executor uses a fit wherever its op and scope match (nearest group size,\n"
      "rescaled by ring step counts). Compute efficiency from training runs is not fitted yet: the\n"
      "base topology's stays (say --measure-local to measure this machine's sgemm and memcpy).\n"
      "Options");
  opts.add_options()
      ("help,h", "show this help")
      ("inputs", po::value(&inputs)->multitoken(), "HDF5 result files (positional)")
      ("out", po::value(&out), "topology JSON file to write")
      ("base", po::value(&base)->default_value(base), "topology the fits are added to (catalog name or path)")
      ("name", po::value(&name), "name of the calibrated topology (default: the --out file's stem)")
      ("measure-local", po::bool_switch(&measure_local),
       "also measure this machine's fp32 sgemm rate and memory bandwidth (one thread) into the device figures");
  po::positional_options_description pos;
  pos.add("inputs", -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(opts).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return kExitOk;
  }
  if (inputs.empty()) throw UsageError("give at least one HDF5 results file");
  if (out.empty()) throw UsageError("--out is required");
  if (name.empty()) {
    name = out.substr(out.find_last_of('/') + 1);
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0) name.resize(name.size() - 5);
  }
  const topo::Topology base_topology = topo::load_topology(base);
  std::vector<topo::MeasuredCollective> rows;
  for (const auto& f : inputs) {
    auto r = topo::read_collective_rows(f);
    std::printf("%s: %zu measured rows\n", f.c_str(), r.size());
    rows.insert(rows.end(), r.begin(), r.end());
  }
  topo::CalibrationReport rep = topo::calibrate(base_topology, rows, inputs, name);
  if (measure_local) topo::measure_local_compute(rep.topology);
  std::printf("%-16s %-6s %5s %6s %12s %12s %12s %9s %9s\n", "op", "scope", "n", "points", "alpha (us)",
              "algbw GB/s", "busbw GB/s", "rms res", "max res");
  for (const auto& f : rep.topology.fits)
    std::printf("%-16s %-6s %5d %6d %12.3f %12.3f %12.3f %8.1f%% %8.1f%%\n", f.op.c_str(), f.scope.c_str(),
                f.group_size, f.points, f.alpha_us, f.algbw_GBps, f.busbw_GBps, 100 * f.rms_rel_residual,
                100 * f.max_rel_residual);
  for (const auto& s : rep.skipped) std::printf("not fitted: %s\n", s.c_str());
  if (rep.topology.fits.empty()) throw UsageError("no collective could be fitted from the given files");
  if (measure_local)
    std::printf("measured: fp32 %.4f TFLOP/s, memory %.1f GB/s\n", rep.topology.device.fp32.get(),
                rep.topology.device.memory_bandwidth_GBps.get());
  const std::string text = topo::to_json(rep.topology);
  topo::parse_topology(text, out);  // what we write must load back
  std::ofstream o(out);
  if (!(o << text)) throw RuntimeError("cannot write " + out);
  std::printf("wrote %s (%zu fits); use it as --topology %s\n", out.c_str(), rep.topology.fits.size(), out.c_str());
  return kExitOk;
}

}  // namespace ibt::suites
