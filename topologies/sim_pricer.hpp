#pragma once
// Prices the ops of a step program on a topology (the sim executor's cost model).
//
// Compute op: a roofline with a fixed per-op cost,
//     max(flops / (peak[dtype] * gemm_efficiency),
//         bytes / (memory_bandwidth * memory_efficiency)) + op_overhead_us
// or, with set_dispatch_overlaps_compute(true), max(roofline, op_overhead_us): the
// host dispatches an op's kernels while the device runs the previous ones (eager
// frameworks launch asynchronously), so an op costs its device time or its dispatch
// time, whichever is longer, not their sum.
// (ops without FLOPs -- norms, embedding, loss -- are memory-bound by construction).
// Communication op: collective_model.hpp for the op's group, placed on the domains by
// the rank order of models/rank_groups.hpp (rank = tp + tp*(cp + cp*(dp + dp*pp)),
// domains of consecutive ranks), so a TP group inside a domain uses scale-up links and
// a DP group spanning domains crosses the network. A context-parallel ring step
// (cp_kv_pass, cp_dkv_pass: every CP rank sends a block to the next and receives one
// from the previous at once) costs one point-to-point message over the slowest link
// of the ring: scale-up when the CP group lies in one domain, else the network.
#include <array>
#include <string>

#include "models/model_config.hpp"
#include "models/parallel_split.hpp"
#include "topologies/collective_model.hpp"
#include "topologies/sim_executor.hpp"
#include "topologies/topology.hpp"

namespace ibt::topo {

class TopologyPricer : public OpPricer {
 public:
  TopologyPricer(const Topology& topology, const models::ParallelSplit& split, const std::string& dtype);

  double op_us(const models::StepProgram& program, const models::Op& op) override;
  double exchange_half_us(const models::StepProgram& program, const models::Op& op,
                          int peer_stage) override;

  // Exposed for tests and `ibt project --verbose`: the placement of each group.
  const Placement& placement(models::Group g) const { return placement_[static_cast<int>(g)]; }
  double compute_us(double flops, double bytes) const;
  // Unfused attention: `passes` element passes over the (heads/tp) x s x s scores of a
  // microbatch per forward (2x backward) are added to each attention_core op's bytes.
  void add_attention_score_traffic(const models::ModelConfig& model, double passes, double element_bytes);
  void set_dispatch_overlaps_compute(bool on) { dispatch_overlaps_ = on; }

 private:
  const Topology& t_;
  models::ParallelSplit split_;
  double flops_per_us_ = 0;       // peak * efficiency
  double bytes_per_us_ = 0;       // memory bandwidth * efficiency
  double overhead_us_ = 0;
  bool dispatch_overlaps_ = false;  // max(roofline, overhead) instead of their sum
  double score_bytes_forward_ = 0;  // extra attention-core bytes per forward op
  long long stage_stride_ = 1;    // ranks between pipeline stages (tp * cp * dp)
  std::array<Placement, models::kGroupKinds> placement_{};  // by models::Group
};

// The dtype MFU is computed against: bf16 where the device has it, else fp32.
std::string default_dtype(const Topology& t);

}  // namespace ibt::topo
