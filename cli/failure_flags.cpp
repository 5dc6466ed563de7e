#include "cli/failure_flags.hpp"

namespace ibt::suites {

namespace po = boost::program_options;

void add_failure_options(po::options_description& opts) {
  opts.add_options()("node-mtbf-hours", po::value<double>(),
                     "mean time between failures of one node, hours (job MTBF = this / nodes); default: the "
                     "topology's reliability section (dgx-h100: from the Llama 3 paper); without either, goodput "
                     "is not computed")("devices-per-node", po::value<double>(),
                                        "devices a node failure takes down (default: the topology's)")(
      "checkpoint-write-GBps", po::value<double>(),
      "checkpoint write bandwidth per device when all devices save at once, GB/s (default: the topology's)")(
      "restart-minutes", po::value<double>(),
      "time from a failure to training again from the last checkpoint, minutes (default: the topology's)")(
      "assumptions", po::bool_switch(),
      "print the failure and storage assumptions in full, with their notes and sources (default: one line)");
}

bool wants_full_assumptions(const po::variables_map& vm) {
  return vm.count("assumptions") > 0 && vm["assumptions"].as<bool>();
}

topo::FailureOverrides failure_overrides(const po::variables_map& vm) {
  topo::FailureOverrides o;
  auto get = [&](const char* name, std::optional<double>& into) {
    if (vm.count(name)) into = vm[name].as<double>();
  };
  get("node-mtbf-hours", o.node_mtbf_hours);
  get("devices-per-node", o.devices_per_node);
  get("checkpoint-write-GBps", o.checkpoint_write_GBps);
  get("restart-minutes", o.restart_minutes);
  return o;
}

}  // namespace ibt::suites
