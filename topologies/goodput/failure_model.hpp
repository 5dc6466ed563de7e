#pragma once
// The failure and storage assumptions of a projection, and the goodput they imply
// (topologies/goodput/goodput.hpp has the formulas).
//
// - Job MTBF = node MTBF / nodes, nodes = ceil(devices / devices per node): failures
//   of nodes are independent Poisson processes and any one stops the whole job.
// - Checkpoint bytes per device: what must be saved to resume -- the weights and the
//   optimizer state (fp32 master weights, Adam m and v: ProjectionOptions::precision),
//   not the gradients -- of one (tp, pp) shard, divided over its DP replicas because
//   every replica writes its own slice at once (fully parallel save, as Megatron's
//   distributed checkpointing does); routed experts over their expert-DP replicas. The
//   largest pipeline stage sets the time, all stages write together.
// - delta = checkpoint bytes per device / checkpoint write GB/s per device.
// - R = restart minutes. tau = Daly's interval rounded to whole steps (at least one):
//   checkpoints are taken between steps. goodput = Daly's exact T_s / T_w at that tau;
//   goodput-adjusted MFU = MFU x goodput.
// Every figure comes from a command-line flag or the topology's `reliability` section,
// with its origin kept for printing; a missing one means goodput is "not computed",
// never an invented default.
#include <optional>
#include <string>

#include "models/plan/accounting.hpp"
#include "models/plan/model_config.hpp"
#include "models/plan/parallel_split.hpp"
#include "topologies/hardware/topology.hpp"

namespace ibt::topo {

// One assumed figure and where it came from, in words.
struct Assumption {
  std::optional<double> value;
  std::string origin;  // "--node-mtbf-hours (command line)" or "dgx-h100 reliability, public 'llama3-paper'"
  std::string ref;     // the source's reference (address and what it says); empty for flags
  std::string note;
};

struct FailureAssumptions {
  Assumption node_mtbf_hours, devices_per_node, checkpoint_write_GBps, restart_minutes;
  // "" when all four are known, else the reason goodput cannot be computed.
  std::string missing() const;
  bool complete() const { return missing().empty(); }
};

// Command-line values; each replaces the topology's figure.
struct FailureOverrides {
  std::optional<double> node_mtbf_hours, devices_per_node, checkpoint_write_GBps, restart_minutes;
};

// Checks the overrides (UsageError naming the flag when out of range) and merges them
// with the topology's reliability section.
FailureAssumptions failure_assumptions(const Topology& topology, const FailureOverrides& overrides);

struct GoodputEstimate {
  bool computed = false;
  std::string why_not;  // when not computed
  int nodes = 0;
  double job_mtbf_s = 0;           // M
  double checkpoint_bytes = 0;     // per device
  double checkpoint_s = 0;         // delta
  double restart_s = 0;            // R
  double young_s = 0, daly_s = 0;  // optimal compute time between checkpoints
  long interval_steps = 0;         // Daly's interval in whole steps (>= 1)
  double interval_s = 0;           // interval_steps x step time
  double goodput = 0;              // exact, at interval_s
  double goodput_first_order = 0;  // first-order form, at interval_s
  double goodput_mfu = 0;          // MFU x goodput
};

int nodes_for(int devices, int devices_per_node);
double checkpoint_bytes_per_device(const models::ModelConfig& model, const models::ParallelSplit& split,
                                   const models::Precision& precision);
// Not computed (with why_not) when an assumption is missing or the step time is not > 0.
GoodputEstimate estimate_goodput(const FailureAssumptions& a, int devices, double checkpoint_bytes, double step_s,
                                 double mfu);

// The assumptions, one per line with their origin, notes and sources (`--assumptions`,
// and the results file's failure_assumptions attribute).
std::string describe_assumptions(const FailureAssumptions& a);
// The same in one line after the answer: each figure and the id of its source.
std::string describe_assumptions_brief(const FailureAssumptions& a);
// The estimate of one projection, several lines; "not computed: <why>" when it is not.
std::string describe_goodput(const GoodputEstimate& g);

// Which figure `ibt project --all` and `ibt crossover` rank and compare by.
enum class RankBy { mfu, goodput };
RankBy parse_rank_by(const std::string& text);  // "mfu" | "goodput", else UsageError
const char* to_string(RankBy r);

}  // namespace ibt::topo
