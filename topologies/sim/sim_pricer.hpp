#pragma once
// Prices the ops of a step program on a topology (the sim executor's cost model).
//
// Compute op: a roofline with a fixed per-op cost,
//     max(flops / (peak[dtype] * gemm_efficiency),
//         bytes / (memory_bandwidth * memory_efficiency)) + op_overhead_us
// A GEMM op on a device whose catalog entry gives its GEMM tiles (device.gemm_tiles)
// is priced by its shape: each of its passes (forward product, input gradient, weight
// gradient; models::GemmShape) is its own roofline, with the FLOP rate scaled by the
// tile efficiency of that pass's output (gemm_shape.hpp: tile and wave quantization
// over the device's SMs or MXUs),
//     sum over passes of max(flops_p / (peak * gemm_efficiency * tile_efficiency_p),
//                            bytes_p / (memory_bandwidth * memory_efficiency))
// so gemm_efficiency is the efficiency of a large GEMM, and small ones (an expert's
// share of the routed tokens, a router's num_experts columns) run slower per FLOP.
// or, with set_dispatch_overlaps_compute(true), max(roofline, op_overhead_us): the
// host dispatches an op's kernels while the device runs the previous ones (eager
// frameworks launch asynchronously), so an op costs its device time or its dispatch
// time, whichever is longer, not their sum.
// (ops without FLOPs -- norms, embedding, loss -- are memory-bound by construction).
// With set_fp8_gemms (Transformer Engine's fp8 recipe), the linear layers' GEMMs run
// at the fp8 peak times gemm_efficiency and pay the casts: each operand read in bf16
// and written in fp8 once (1.5x the GEMM's bf16 operand bytes at memory bandwidth;
// the scaling factors' amax reductions are small and left out). Attention, norms and
// the rest stay at the dtype's rate.
// With set_tp_comm_overlap, a sequence-parallel all-gather or reduce-scatter of the TP
// group is split into tp chunks, each sent while the GEMM next to it works on the
// chunk before (Transformer Engine's userbuffer overlap, XLA's collective matmul): it
// costs what the GEMM cannot hide, and at least one chunk,
//     max(comm / tp, comm - gemm)
// where gemm is the smallest GEMM next to such a collective in a transformer block,
// [tokens x hidden] x [hidden x hidden/tp] (the attention output projection; the
// others are wider), derived from the collective's own size (tokens x hidden
// elements). Stated approximations: the GEMM is not slowed by sharing the device
// with the transfer, and the TP all-reduce without sequence parallelism is not
// overlapped (Megatron-Core's overlap needs sequence parallelism).
// An MoE model with node-limited routing (route_groups; DeepSeek-V3) has its EP
// dispatch and combine priced as its dispatchers send them, once per token and remote
// domain (set_node_limited_routing; collective_model.hpp deduplicated_all_to_all_cost).
// Communication op: collective_model.hpp for the op's group, placed on the domains by
// the rank order of models/plan/rank_groups.hpp (rank = tp + tp*(cp + cp*(dp + dp*pp)),
// domains of consecutive ranks, each domain holding Topology::placement_domain of them:
// a job's scheduler segments), so a TP group inside a domain uses scale-up links and
// a DP group spanning domains crosses the network. A context-parallel ring step
// (cp_kv_pass, cp_dkv_pass: every CP rank sends a block to the next and receives one
// from the previous at once) costs one point-to-point message over the slowest link
// of the ring: scale-up when the CP group lies in one domain, else the network.
#include <array>
#include <optional>
#include <string>

#include "models/plan/model_config.hpp"
#include "models/plan/parallel_split.hpp"
#include "topologies/hardware/collective_model.hpp"
#include "topologies/hardware/gemm_shape.hpp"
#include "topologies/hardware/topology.hpp"
#include "topologies/sim/eager_elementwise.hpp"
#include "topologies/sim/sim_executor.hpp"

namespace ibt::topo {

class TopologyPricer : public OpPricer {
 public:
  TopologyPricer(const Topology& topology, const models::ParallelSplit& split, const std::string& dtype);
  // It keeps a reference to the topology: a temporary would dangle (AddressSanitizer
  // found one in a test), so binding one does not compile.
  TopologyPricer(Topology&&, const models::ParallelSplit&, const std::string&) = delete;

  double op_us(const models::StepProgram& program, const models::Op& op) override;
  double exchange_half_us(const models::StepProgram& program, const models::Op& op, int peer_stage) override;

  // Exposed for tests and `ibt project --verbose`: the placement of each group.
  const Placement& placement(models::Group g) const { return placement_[static_cast<int>(g)]; }
  double compute_us(double flops, double bytes) const;
  // Unfused attention: `passes` element passes over the (heads/tp) x s x s scores of a
  // microbatch per forward (2x backward) are added to each attention_core op's bytes.
  void add_attention_score_traffic(const models::ModelConfig& model, double passes, double element_bytes);
  void set_dispatch_overlaps_compute(bool on) { dispatch_overlaps_ = on; }
  // The attention core at a kernel's measured rate instead of peak x gemm_efficiency
  // (a software stack's attention kernel, topologies/projection/stack.hpp): FLOP/us per
  // FLOP as the step program counts them (full sequence; backward twice the forward), so
  // the caller folds the kernel's own FLOP convention in. 0 keeps the GEMM rate.
  void set_attention_rates(double forward_flops_per_us, double backward_flops_per_us) {
    attention_forward_flops_per_us_ = forward_flops_per_us;
    attention_backward_flops_per_us_ = backward_flops_per_us;
  }
  void set_tp_comm_overlap(const models::ModelConfig& model, double element_bytes);
  void set_fp8_gemms();  // UsageError when the device has no fp8 peak
  // Node-limited routing (the model's route_groups > 1): the EP dispatch and combine
  // send each token once per remote domain (deduplicated_all_to_all_cost) instead of
  // once per routed expert. Models without it keep the plain all-to-all.
  void set_node_limited_routing(const models::ModelConfig& model);
  // Replicated KV heads (model_config.hpp kv_replicas(tp)): the size of the tp_kv group
  // their gradients are summed over (1 unless tp > kv_heads).
  void set_kv_replicas(int replicas);
  // Eager element-wise kernels (an eager stack, eager_elementwise.hpp): their extra bytes
  // are added to each block's norm op, priced at memory bandwidth like the norm.
  void set_eager_elementwise(const models::ModelConfig& model, double element_bytes);

 private:
  // The roofline of a compute op at `flops_per_us` (its passes' tile efficiencies
  // applied when the op is a GEMM and the device gives its tiles), without overhead.
  double roofline_us(const models::Op& op, double flops_per_us) const;
  // compute_us at `flops_per_us` instead of the device's peak x efficiency.
  double compute_at_us(double flops, double bytes, double flops_per_us) const;

  const Topology& t_;
  models::ParallelSplit split_;
  std::optional<TileGrid> tiles_;  // the device's GEMM tiles; none: GEMMs at the flat rate
  double flops_per_us_ = 0;        // peak * efficiency
  double gemm_flops_per_us_ = 0;   // the linear layers' rate (fp8 with set_fp8_gemms)
  double cast_bytes_per_gemm_byte_ = 0;
  double bytes_per_us_ = 0;  // memory bandwidth * efficiency
  double overhead_us_ = 0;
  bool dispatch_overlaps_ = false;         // max(roofline, overhead) instead of their sum
  double score_bytes_forward_ = 0;         // extra attention-core bytes per forward op
  std::optional<EagerElementwise> eager_;  // set: eager element-wise kernels
  double attention_forward_flops_per_us_ = 0, attention_backward_flops_per_us_ = 0;  // 0: flops_per_us_
  // TP overlap: GEMM FLOPs hiding a collective, per byte of it (0 = no overlap).
  double tp_overlap_flops_per_byte_ = 0;
  // Node-limited routing: the fraction of the EP dispatch's bytes on the network
  // (negative: the plain all-to-all).
  double ep_network_fraction_ = -1;
  long long stage_stride_ = 1;                              // ranks between pipeline stages (tp * cp * dp)
  std::array<Placement, models::kGroupKinds> placement_{};  // by models::Group
};

// The dtype MFU is computed against: bf16 where the device has it, else fp32.
std::string default_dtype(const Topology& t);

}  // namespace ibt::topo
