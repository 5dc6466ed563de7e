// ibt project-compare: projected against measured step time of `ibt train` runs, on a
// (calibrated) topology, component by component (topologies/calibration/agreement.hpp), naming the
// component that differs most. Exit 1 when a run differs by more than --bound.
#include <boost/program_options.hpp>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "cli/cli.hpp"
#include "cli/commands.hpp"
#include "core/errors.hpp"
#include "topologies/calibration/agreement.hpp"
#include "topologies/calibration/train_runs.hpp"
#include "topologies/hardware/topology.hpp"

namespace ibt::suites {

int project_compare_main(int argc, char** argv) {
  namespace po = boost::program_options;
  std::vector<std::string> runs;
  std::string topology = "local-cpu";
  double bound_pct = 20;
  const char* about =
      "For each measured `ibt train` run (every complete one in FILE.h5, or the one named),\n"
      "projects the same model, split, microbatches and schedule on topology T the way the CPU\n"
      "engine runs them (fp32, AdamW, gradients reduced after the last backward, unfused attention)\n"
      "and prints measured against projected step time and per component: compute, exposed tp,\n"
      "pp+bubble, dp and ep communication, and 'other' (the engine's step statistics, priced as\n"
      "memory passes and small all-reduces, plus a stage's wait for the last one). Measured figures\n"
      "are those of the fastest step after the first (the least disturbed).\n\n"
      "A run `ibt import-log` brought in (Megatron-LM, NeMo, torchtitan) is priced as its framework\n"
      "trains instead (bf16 mixed precision on T's device); a log has no time breakdown, so only\n"
      "the step is compared.\n\n"
      "The component whose projection differs most (in seconds) is named. Exit 1 when\n"
      "|projected/measured - 1| exceeds the bound for any run. Use a topology `ibt calibrate` wrote\n"
      "from collectives and train runs of the same machine, and compare runs the calibration did\n"
      "not fit.\n";
  po::options_description opts("options");
  opts.add_options()("help,h", "show this help")("runs", po::value(&runs)->multitoken(),
                                                 "FILE.h5 or FILE.h5:RUN_ID (positional, repeatable)")(
      "topology", po::value(&topology)->default_value(topology), "catalog name or topology JSON file")(
      "bound", double_value(&bound_pct), "allowed |relative difference| of the step time, percent");
  po::positional_options_description pos;
  pos.add("runs", -1);
  po::variables_map vm;
  if (!parse_command_line(argc, argv, opts, vm, &pos)) {
    print_help(std::cout, "ibt project-compare FILE.h5[:RUN] [...] --topology T [--bound PCT]", about, opts,
               {"ibt project-compare held.h5 --topology mine.json --bound 20"});
    return kExitOk;
  }
  if (runs.empty()) throw UsageError("give at least one FILE.h5 or FILE.h5:RUN_ID of `ibt train` runs");
  if (!(bound_pct > 0)) throw UsageError("--bound must be a positive percentage");
  const topo::Topology t = topo::load_topology(topology);
  std::vector<topo::MeasuredTrainRun> measured;
  for (const auto& spec : runs) {
    auto r = topo::read_train_runs_spec(spec);
    measured.insert(measured.end(), r.begin(), r.end());
  }
  int failed = 0;
  double worst = 0;
  for (const auto& m : measured) {
    const topo::Agreement a = topo::compare_run(m, t);
    topo::print_agreement(stdout, a, bound_pct / 100);
    worst = std::max(worst, std::abs(a.rel_diff));
    failed += std::abs(a.rel_diff) * 100 > bound_pct;
  }
  std::printf("%zu run(s), %d beyond the bound of %.0f%%; largest |difference| %.1f%%\n", measured.size(), failed,
              bound_pct, 100 * worst);
  return failed ? kExitFailure : kExitOk;
}

}  // namespace ibt::suites
